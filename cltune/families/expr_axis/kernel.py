"""The interface of kernels/expr_axis.cl: the program of an expression along an axis (its
prelude, then the template), the `-D` options of a validated `AxisExprConfig`, and the built
kernels (cached per context; configs that differ only in launch parameters share a program)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.device.wg_limits import kept_limit
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.opencl.build import check_limits, compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.expression import ExprSpec
from cltune.opencl.sources import kernel_file

#: kernels/expr_axis.cl's rounding cascade (its defaults): an accumulator restarts every
#: CASCADE_BLOCK steps into level 1, pushed every CASCADE_FAN blocks onto a binary counter
#: of CASCADE_DEPTH slots
CASCADE_BLOCK, CASCADE_FAN, CASCADE_DEPTH = 64, 4, 10


def restarts(spec: ExprSpec) -> bool:
    """Whether the spec's accumulators restart (the cascade): not where the prelude (or the
    application's preamble) sets CLT_BLOCK 0 (no floating-point field, or an exact kernel)."""
    return "#define CLT_BLOCK 0" not in spec.prelude(False)


@lru_cache(maxsize=1)
def axis_template() -> str:
    return kernel_file("expr_axis.cl")


def template_hash() -> str:
    """The skeleton's hash (stored with every tuned result of the family)."""
    return hashlib.sha256(axis_template().encode()).hexdigest()[:16]


def axis_source(spec: ExprSpec, fp64: bool) -> str:
    """The application's prelude followed by the axis skeleton."""
    return spec.prelude(fp64) + axis_template()


def build_options(cfg: AxisExprConfig) -> list[str]:
    """The `-D` options of a build: integers from a validated config only."""
    if not isinstance(cfg, AxisExprConfig):
        raise TypeError("build_options takes a validated AxisExprConfig")
    return [f"-D{k}={int(v)}" for k, v in cfg.defines().items()]


@dataclass(frozen=True)
class AxisBuilt:
    """A config and its program's kernels. Configs that differ only in launch parameters
    share the kernels, and so their lock: kernel arguments are shared state."""

    config: AxisExprConfig
    stage1: cl.Kernel
    stage2: cl.Kernel
    lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)


_builds: ContextCache[AxisBuilt] = ContextCache()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
          cfg: AxisExprConfig) -> AxisBuilt:
    """Build (or fetch from the context's cache) `cfg` of `spec` for `dev`; BuildError
    when it does not build or breaks the kernel's limits. Configs that differ only in launch
    parameters share a program."""
    key = (dev.int_ptr, spec, tuple(cfg.defines().items()))
    hit = _builds.get(ctx, key, lambda: _build(ctx, dev, info, spec, cfg))
    return hit if hit.config == cfg else AxisBuilt(cfg, hit.stage1, hit.stage2, hit.lock)


def kernel_wg_limit(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                    cfg: AxisExprConfig) -> int:
    """The most work-items a group of `cfg`'s kernels may have on `dev`
    (CL_KERNEL_WORK_GROUP_SIZE, both stages): the accumulators and the cascade's counter can
    need more registers than a group of the device's maximum size has (a float32 sum along
    rows on the H200: 256, where the device takes 1024). BuildError when it does not build."""
    src, opts = axis_source(spec, info.fp64), [*build_options(cfg), *spec.options]

    def probe() -> int:
        prg = compile_program(ctx, dev, src, opts)
        wgs = cl.kernel_work_group_info.WORK_GROUP_SIZE
        return min(int(k.get_work_group_info(wgs, dev))
                   for k in (prg.clt_axis_stage1, prg.clt_axis_stage2))
    return kept_limit(info, src, opts, probe)  # once per driver: a probe took NVIDIA 20-48 s


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
           cfg: AxisExprConfig) -> AxisBuilt:
    prg = compile_program(ctx, dev, axis_source(spec, info.fp64),
                          [*build_options(cfg), *spec.options])
    s1, s2 = prg.clt_axis_stage1, prg.clt_axis_stage2
    user = spec.scalar_arg_dtypes()
    tail = [np.int64, np.int64, np.int64, np.int64, None, None, np.int64]
    s1.set_scalar_arg_dtypes([*user, *tail])
    s2.set_scalar_arg_dtypes([*user, *tail])
    for k in (s1, s2):
        check_limits(k, dev, info, cfg.wg)
    return AxisBuilt(cfg, s1, s2)
