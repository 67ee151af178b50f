"""Portability: every OpenCL implementation on the machine, every op x dtype it supports, every
strategy its space offers, against numpy; and a random sample of the space builds everywhere.

The devices are those of `cltune.device.select.list_devices()` (the Oclgrind simulator is left to
tests/test_oclgrind.py). With `.ci/opencl-env.sh` sourced this machine has three CPU
implementations: Intel's CPU runtime (subgroups), pyopencl's bundled PoCL 3.0-rc2 and Debian's
PoCL 3.1; `CLTUNE_REQUIRE_ALL=1` (CI) requires Intel's and Debian's to be usable and the bundled
one to be present. The bundled PoCL cannot compile on CPUs newer than its LLVM 14 knows (AMD
Zen 4 hosts): there its device must be refused cleanly instead of run. Each device gets its own
context and queue (the session `ctx` fixture is for one device only).

`scripts/portability.py` runs the same matrix and writes docs/portability.md.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pyopencl as cl
import pytest
from support.require import need

from cltune.core import strategies
from cltune.core.inputs import make_input
from cltune.core.ops import DTYPES, OPS, OpSpec
from cltune.device.select import DeviceError, device_health, list_devices, select
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import compare, error_bound, reference, run_once
from cltune.families.reduce.space import make_space
from cltune.opencl.build import BuildError

SIZES = (1, 2, 31, 1023, 1025)
BIG = 2**20 + 3
BIG_PAIRS = {("sum", "float32"), ("max", "float32")}
N_RANDOM = 20


def _is_oclgrind(info) -> bool:
    return info.vendor == "oclgrind" or "oclgrind" in info.platform.lower()


def _label(info) -> str:
    """A short id that names the implementation: 'intel-3.1', 'pocl-3.1+debian', ..."""
    m = re.search(r"PoCL\s+(\S+)", info.platform_version)
    if m:
        return f"pocl-{m.group(1)}"
    vendor = re.sub(r"[^a-z0-9]+", "-", info.platform.lower().replace("(r)", "")).strip("-")
    m = re.search(r"OpenCL\s+(\S+)", info.platform_version)
    return f"{vendor.split('-')[0]}-{m.group(1) if m else info.driver}"


ALL_DEVICES = [i for i in list_devices() if not _is_oclgrind(i)]
DEVICES = [i for i in ALL_DEVICES if device_health(i).ok]
UNUSABLE = [i for i in ALL_DEVICES if not device_health(i).ok]
DEVICE_IDS = [f"dev{i.index}-{_label(i)}-{i.type}" for i in DEVICES]


class Target:
    """One device with its own context and queue, and its spaces (built once per module)."""

    def __init__(self, info, dev):
        self.info, self.dev = info, dev
        self.ctx = cl.Context([dev])
        self.queue = cl.CommandQueue(self.ctx, dev)
        self._spaces: dict[OpSpec, object] = {}

    def supports(self, spec: OpSpec) -> bool:
        return not (spec.needs_fp64 and not self.info.fp64)

    def space(self, spec: OpSpec):
        sp = self._spaces.get(spec)
        if sp is None:
            sp = self._spaces[spec] = make_space(self.ctx, self.dev, self.info, spec)
        return sp

    def __repr__(self) -> str:
        i = self.info
        return f"<{i.index}: {i.name} | {i.platform} | {i.platform_version}>"


@pytest.fixture(scope="module", params=[i.index for i in DEVICES], ids=DEVICE_IDS)
def target(request):
    info = next(i for i in DEVICES if i.index == request.param)
    return Target(info, info.cl_device())




def check_sizes(t: Target, spec: OpSpec, cfg: Config, sizes) -> list[str]:
    """Run cfg on every size; the failures as text (empty when all match numpy)."""
    la = Launcher(t.ctx, t.dev, t.info, spec, cfg)
    bad = []
    for n in sizes:
        xs = make_input(spec, n)
        want, scale = reference(spec, xs)
        try:
            got = run_once(la, t.queue, xs)
        except (cl.Error, BuildError) as e:
            bad.append(f"{spec} [{cfg.short()}] n={n}: {type(e).__name__}: {e}"[:600])
            break
        bound = error_bound(la, n, scale) if spec.is_float else 0.0
        why = compare(spec, got, want, bound)
        if not why and np.asarray(got).dtype != spec.result_dtype:
            why = f"result dtype {np.asarray(got).dtype} != numpy's {spec.result_dtype}"
        if why:
            bad.append(f"{spec} [{cfg.short()}] n={n}: {why}")
    return bad


def test_required_implementations_present():
    """CI (CLTUNE_REQUIRE_ALL=1) must have Intel's runtime and Debian's PoCL usable, and the
    bundled PoCL present (usable or not: that depends on the host CPU)."""
    need(bool(DEVICES), "no usable OpenCL device")
    ok = [(i.platform, i.platform_version) for i in DEVICES]
    every = [(i.platform, i.platform_version, device_health(i).status) for i in ALL_DEVICES]
    intel = [p for p in ok if p[0].startswith("Intel")]
    pocl = [p for p in every if "PoCL" in p[1]]
    debian = [p for p in ok if "PoCL" in p[1] and "debian" in p[1].lower()]
    other = [p for p in pocl if "debian" not in p[1].lower()]
    need(bool(intel), f"Intel's CPU runtime usable (source .ci/opencl-env.sh); have {every}")
    need(bool(debian), f"Debian's PoCL usable (pocl-opencl-icd); have {every}")
    need(bool(other), f"pyopencl's bundled PoCL (pocl-binary-distribution); have {every}")


@pytest.mark.parametrize("info", UNUSABLE, ids=[f"dev{i.index}-{_label(i)}" for i in UNUSABLE])
def test_unusable_device_is_refused_cleanly(info, db_url):
    """Where a device cannot compile (the bundled PoCL on a CPU newer than its LLVM), every
    entry point refuses it with the compiler's message and a fix, instead of failing later."""
    from typer.testing import CliRunner

    from cltune import get_reducer
    from cltune.cli.app import app

    h = device_health(info)
    assert h.message and h.fix, h
    with pytest.raises(DeviceError, match="unusable") as e:
        select(str(info.index))
    assert h.message in str(e.value) and "fix:" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DeviceError, match="unusable"):
        get_reducer(info.cl_device())
    r = CliRunner().invoke(app, ["tune", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.output.count("\n") == 1 and "unusable" in r.output, r.output


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_strategy_matches_numpy(target, op, dtype):
    spec = OpSpec(op, dtype)
    if not target.supports(spec):
        pytest.skip(f"{target.info.name} has no cl_khr_fp64")
    space = target.space(spec)
    offered = space.values["strategy"]
    assert offered, f"{target}: no strategy offered for {spec}: {space.excluded}"
    assert set(offered) | set(space.excluded) == set(strategies.names()), (offered, space.excluded)
    sizes = (*SIZES, BIG) if (op, dtype) in BIG_PAIRS else SIZES
    bad = []
    for strategy in offered:
        bad += check_sizes(target, spec, space.representative(strategy, op, dtype), sizes)
    assert not bad, f"{target}:\n" + "\n".join(bad)


def test_random_configs_build(target):
    """~20 random points of a restricted space (random op x dtype each) build without
    BuildError, and give numpy's answer on 1025 elements."""
    rng = random.Random(0)
    specs = [s for s in (OpSpec(o, d) for o in OPS for d in DTYPES) if target.supports(s)]
    failures = []
    for _ in range(N_RANDOM):
        spec = rng.choice(specs)
        sub = target.space(spec).restrict(items=(1, 4), vec=(1, 4), groups_per_cu=(1, 4),
                                           tile_factor=(1, 2))
        cfg = rng.choice(sub.configs())
        la = Launcher(target.ctx, target.dev, target.info, spec, cfg)
        try:
            la.built()
        except BuildError as e:
            failures.append(f"{spec} [{cfg.short()}]: BuildError: {e}")
            continue
        failures += check_sizes(target, spec, cfg, (1025,))
    assert not failures, f"{target}:\n" + "\n".join(failures)
