"""Write docs/portability.md: which strategy is validated on which OpenCL implementation.

For every OpenCL device of `cltune.device.select.list_devices()` (the Oclgrind simulator is
skipped:
tests/test_oclgrind.py covers it) and every op x dtype the device supports (float64 needs
cl_khr_fp64), the space is asked (`make_space`) which strategies it offers; each offered strategy
runs one config on sizes 1, 2, 31, 1023, 1025 (and 2^20 + 3 for sum/float32 and max/float32)
against the host reference (`cltune.families.reduce.reference`: exact for integers and min/max,
within the
launch plan's error bound for floating sums). Then ~20 random configs of a restricted space must
build and match numpy at n = 1025. This is the matrix of tests/test_portability.py, written
down; the config rule is `Space.representative`, as in the test.

    export VENV=/work/venv; source .ci/opencl-env.sh      # all three CPU implementations
    python scripts/portability.py --out docs/portability.md

Exit status 1 when anything failed (the document is written anyway, failures included).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import shlex
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyopencl as cl

from cltune.core import strategies
from cltune.core.inputs import make_input
from cltune.core.ops import DTYPES, OPS, OpSpec
from cltune.device.select import list_devices
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.kernel import source_hash
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import compare, error_bound, reference, run_once
from cltune.families.reduce.space import make_space
from cltune.opencl.build import BuildError

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1, 2, 31, 1023, 1025)
BIG = 2**20 + 3
BIG_PAIRS = {("sum", "float32"), ("max", "float32")}
N_RANDOM = 20
RESTRICT = dict(items=(1, 4), vec=(1, 4), groups_per_cu=(1, 4), tile_factor=(1, 2))




def run_sizes(ctx, dev, queue, info, spec: OpSpec, cfg: Config, sizes) -> str:
    """'' when every size matches the reference, else the first failure."""
    la = Launcher(ctx, dev, info, spec, cfg)
    for n in sizes:
        xs = make_input(spec, n)
        want, scale = reference(spec, xs)
        try:
            got = run_once(la, queue, xs)
        except (cl.Error, BuildError) as e:
            return f"n={n}: {type(e).__name__}: {e}"[:300]
        why = compare(spec, got, want, error_bound(la, n, scale) if spec.is_float else 0.0)
        if not why and np.asarray(got).dtype != spec.result_dtype:
            why = f"result dtype {np.asarray(got).dtype} != {spec.result_dtype}"
        if why:
            return f"n={n}: {why}"
    return ""


def survey(info, dev, log) -> dict:
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx, dev)
    t0 = time.monotonic()
    rec = {"info": info, "pairs": {}, "spaces": {}, "failures": [], "random": []}
    for op in OPS:
        for dtype in DTYPES:
            spec = OpSpec(op, dtype)
            if spec.needs_fp64 and not info.fp64:
                rec["pairs"][(op, dtype)] = {"skipped": "no cl_khr_fp64"}
                continue
            space = make_space(ctx, dev, info, spec)
            rec["spaces"][spec] = space
            sizes = (*SIZES, BIG) if (op, dtype) in BIG_PAIRS else SIZES
            done = {}
            for strategy in space.values["strategy"]:
                try:
                    cfg = space.representative(strategy, op, dtype)
                    why = run_sizes(ctx, dev, queue, info, spec, cfg, sizes)
                except (BuildError, ConfigError) as e:
                    cfg, why = None, f"{type(e).__name__}: {e}"[:300]
                done[strategy] = (cfg, why)
                if why:
                    rec["failures"].append(f"{spec} {strategy} "
                                           f"[{cfg.short() if cfg else '-'}]: {why}")
            rec["pairs"][(op, dtype)] = {"ran": done, "excluded": dict(space.excluded),
                                         "sizes": sizes}
        log(f"  {op}: {time.monotonic() - t0:.0f}s")
    rng = random.Random(0)
    specs = list(rec["spaces"])
    for _ in range(N_RANDOM):
        spec = rng.choice(specs)
        cfg = rng.choice(rec["spaces"][spec].restrict(**RESTRICT).configs())
        try:
            Launcher(ctx, dev, info, spec, cfg).built()
            why = run_sizes(ctx, dev, queue, info, spec, cfg, (1025,))
        except BuildError as e:
            why = f"BuildError: {e}"[:300]
        rec["random"].append((spec, cfg, why))
        if why:
            rec["failures"].append(f"random {spec} [{cfg.short()}]: {why}")
    rec["seconds"] = time.monotonic() - t0
    return rec


def _impl(info) -> str:
    return f"{info.platform} · {info.platform_version} · {info.name}"


def _pairs_text(pairs: list[tuple[str, str]]) -> str:
    """('prod', 'float32'), ... -> 'prod × all 7 dtypes' / 'min, max × float16, float32'."""
    by_op: dict[str, list[str]] = defaultdict(list)
    for op, dt in pairs:
        by_op[op].append(dt)
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for op, dts in by_op.items():
        groups[tuple(dts)].append(op)
    parts = []
    for dts, ops in groups.items():
        d = f"all {len(dts)} dtypes" if len(dts) == len(DTYPES) else ", ".join(dts)
        parts.append(f"{', '.join(ops)} × {d}")
    return "; ".join(parts)


def _cell(rec, strategy: str) -> str:
    ok, failed, excluded = [], [], defaultdict(list)
    for pair, p in rec["pairs"].items():
        if "skipped" in p:
            continue
        if strategy in p["ran"]:
            (failed if p["ran"][strategy][1] else ok).append(pair)
        else:
            excluded[p["excluded"].get(strategy, "not offered")].append(pair)
    n_run = len(ok) + len(failed)
    if not n_run:
        reasons = list(excluded)
        return "excluded: " + (reasons[0] if len(reasons) == 1 else
                               "; ".join(f"{r} ({_pairs_text(v)})" for r, v in excluded.items()))
    text = f"validated ({len(ok)} op/dtype pairs)" if not failed else (
        f"**FAILED on {len(failed)}** ({_pairs_text(failed)}), validated on {len(ok)}")
    if excluded:
        text += "; excluded for " + "; ".join(f"{_pairs_text(v)}: {r}"
                                              for r, v in excluded.items())
    return text


def _git() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "cltune", "kernels"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes in cltune/ or kernels/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def render(recs: list[dict], command: str, started: datetime.datetime, total_s: float) -> str:
    L = ["# Portability", "",
         "Which in-group strategy is validated on which OpenCL implementation. Generated by "
         "`scripts/portability.py` (the matrix of `tests/test_portability.py`); do not edit "
         "by hand, re-run it.", "",
         f"- date: {started:%Y-%m-%d %H:%M} UTC ({total_s:.0f} s)",
         "- command:", "", "  ```", *[f"  {c}" for c in command.splitlines()], "  ```", "",
         f"- cltune commit {_git()}, kernel source hash {source_hash()}, "
         f"pyopencl {cl.VERSION_TEXT}, numpy {np.__version__}, Python {platform.python_version()}",
         f"- host: {_cpu()}, {os.cpu_count()} logical CPUs, {platform.system()} "
         f"{platform.release()}", "",
         "A strategy is **validated** on an op/dtype pair when the space offers it there and one "
         "config of it gives numpy's answer on n = 1, 2, 31, 1023, 1025 (also 2^20 + 3 for "
         "sum/float32 and max/float32): exactly for integers and min/max, within the launch "
         "plan's error bound (`cltune/families/reduce/reference.py`) for floating sums, dots and "
         "products; the "
         "output buffer is poisoned before every run. **Excluded** gives the reason the space "
         "(`make_space`, which probe-builds each feature path) gives for not offering it.", "",
         "## Implementations × strategies", "",
         "| implementation | " + " | ".join(f"`{s}`" for s in strategies.names()) + " |",
         "|---|" + "---|" * len(strategies.names())]
    for rec in recs:
        cells = " | ".join(_cell(rec, s) for s in strategies.names())
        L.append(f"| {_impl(rec['info'])} | {cells} |")
    L += ["", "## Devices", ""]
    for rec in recs:
        i = rec["info"]
        sp = next(iter(rec["spaces"].values()), None)
        sg = f"yes (kernel subgroup size {sp.base_multiple})" if i.subgroups and sp else \
            ("yes" if i.subgroups else "no")
        L += [f"### {i.index}: {i.name}", "",
              f"- platform: {i.platform}, {i.platform_version}",
              f"- driver {i.driver}; {i.version}; {i.opencl_c}",
              f"- {i.type}, {i.compute_units} compute units, local memory {i.local_mem // 1024} "
              f"KiB, max work-group {i.max_wg}; subgroups: {sg}; fp64: "
              f"{'yes' if i.fp64 else 'no'}; cl_khr_fp16: {'yes' if i.fp16 else 'no'} "
              f"(float16 is read with vload_half and accumulated in float, which needs no "
              f"extension)",
              f"- fingerprint {i.fingerprint}; work-group sizes offered "
              f"{', '.join(map(str, sp.values['wg'])) if sp else '-'}",
              f"- survey time {rec['seconds']:.0f} s", "",
              "Op × dtype pairs run (the strategies validated on each; ✗ = failed):", "",
              "| op | " + " | ".join(DTYPES) + " |", "|---|" + "---|" * len(DTYPES)]
        for op in OPS:
            row = []
            for dt in DTYPES:
                p = rec["pairs"][(op, dt)]
                if "skipped" in p:
                    row.append(f"not run: {p['skipped']}")
                    continue
                names = [("✗ " if why else "") + s for s, (_, why) in p["ran"].items()]
                row.append(", ".join(names))
            L.append(f"| {op} | " + " | ".join(row) + " |")
        cfgs = sorted({cfg.short() for p in rec["pairs"].values() if "ran" in p
                       for cfg, _ in p["ran"].values() if cfg})
        L += ["", "Configs used (one per strategy; passes/vec alternate over the matrix):", ""]
        L += [f"- `{c}`" for c in cfgs]
        bad = [r for r in rec["random"] if r[2]]
        L += ["", f"Random sample (random.Random(0), {len(rec['random'])} configs of the space "
              f"restricted to items {RESTRICT['items']}, vec {RESTRICT['vec']}, groups_per_cu "
              f"{RESTRICT['groups_per_cu']}, tile_factor {RESTRICT['tile_factor']}, each for a "
              f"random op/dtype): {len(rec['random']) - len(bad)} built and matched numpy at "
              f"n = 1025, {len(bad)} failed.", ""]
        if rec["failures"]:
            L += ["Failures:", ""] + [f"- {f}" for f in rec["failures"]] + [""]
    return "\n".join(L).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "portability.md"),
                    help="markdown file to write (default docs/portability.md)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", cl.CompilerWarning)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    recs = []
    for info in list_devices():
        if info.vendor == "oclgrind" or "oclgrind" in info.platform.lower():
            log(f"skipping {_impl(info)} (simulator)")
            continue
        log(f"{info.index}: {_impl(info)}")
        recs.append(survey(info, info.cl_device(), log))
    if not recs:
        log("no OpenCL device")
        return 1
    cmd = shlex.join(["python", "scripts/portability.py", *(argv if argv is not None
                                                              else sys.argv[1:])])
    if os.environ.get("OCL_ICD_VENDORS"):
        cmd = f"export VENV={sys.prefix}; source .ci/opencl-env.sh\n{cmd}"
    text = render(recs, cmd, started, time.monotonic() - t0)
    Path(args.out).write_text(text)
    failures = [f for r in recs for f in r["failures"]]
    log(f"wrote {args.out}: {len(recs)} implementation(s), {len(failures)} failure(s), "
        f"{time.monotonic() - t0:.0f} s")
    for f in failures:
        log("FAILED " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
