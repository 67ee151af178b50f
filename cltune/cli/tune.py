"""`cltune tune --axis/--segments` and `cltune tune --kernel`: parse and call the library
(`run_*`, inside cli.py's error handling), then render (`render_*`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cltune.cli.render import RichProgress, driver_failures


def run_axis(device: str, op: str, dtype: str, axis: str | None, segments: bool,
             shapes: str | None, trials: int, timeout: float, sampler: str, seed: int,
             resume: bool, study: str, seeds: bool, db: str | None, storage: str | None,
             err: Console) -> tuple[Any, list]:
    from cltune.cli.service import axis_variants, tune_axis
    from cltune.core.shapes import parse_shapes
    from cltune.tuning.tuner import SAMPLERS, TuneOptions

    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    variants = axis_variants(op, dtype, axis, segments)
    keys = parse_shapes(shapes) if shapes else None
    opts = TuneOptions(op=op, dtype=dtype, trials=trials, timeout_s=timeout, sampler=sampler,
                       seed=seed, resume=resume, study_prefix=study, seeds=seeds)
    prog = RichProgress(err)
    try:
        return tune_axis(device, variants, keys, opts, db, storage, prog)
    finally:
        prog.stop()


def render_axis(info: Any, runs: list, out: Console, err: Console) -> bool:
    """One table per variant; True when some class has no validated config."""
    failed = False
    for variant, results in runs:
        t = Table(title=f"best on {info.name} ({variant})")
        for c in ("shape class", "GB/s", "device time", "per call", "vs builtin", "config",
                  "trials", "rejected"):
            t.add_column(c)
        for r in results:
            t.add_row(r.size_class, f"{r.gbps:.1f}" if r.gbps else "-",
                      f"{r.median_s * 1e6:.1f} µs" if r.median_s else "-",
                      f"{r.per_call_s * 1e6:.1f} µs" if r.per_call_s else "-",
                      f"{r.vs_builtin:.2f}x" if r.vs_builtin else "-",
                      r.config.short() if r.config else "no config validated",
                      str(r.trials), str(r.failed + r.pruned))
            failed |= r.config is None
        out.print(t)
        if driver_failures(results):
            err.print(driver_failures(results), highlight=False)
    if failed:
        err.print("some classes have no validated config (`cltune show --json` lists the "
                  "reasons)", highlight=False)
    return failed


def stats_kernel(device: str, op: str, dtype: str) -> tuple[str, Any]:
    """`cltune tune --op <statistic>`: the statistic's ReductionKernel (cltune.stats.api) on the
    selected device, and its label."""
    import numpy as np
    import pyopencl as cl

    from cltune.device.select import select
    from cltune.stats import api as stats

    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"--dtype {dtype!r:.30} is not a numpy dtype") from None
    _, dev = select(device)
    try:
        knl = stats.kernel(op, cl.Context([dev]), dt)
    except TypeError as e:  # a dtype the statistic does not take
        raise ValueError(str(e)) from None
    return f"{op}/{dt.name} (cltune.stats.api)", knl


def run_kernel(device: str, kernel: Any, sizes: str | None, trials: int, timeout: float,
               seed: int, db: str | None, storage: str | None,
               err: Console) -> tuple[Any, list]:
    from cltune.core.buckets import parse_sizes
    from cltune.tuning.kernels import tune_kernel_spec

    buckets = parse_sizes(sizes) if sizes else (20,)
    prog = RichProgress(err)
    try:
        return tune_kernel_spec(device, kernel, buckets, trials=trials, timeout=timeout, db=db,
                                storage=storage, seed=seed, progress=prog)
    finally:
        prog.stop()


def run_kernel_axis(device: str, kernel: Any, axis: str, shapes: str | None, trials: int,
                    timeout: float, seed: int, db: str | None, storage: str | None,
                    err: Console) -> tuple[Any, list]:
    from cltune.core.shapes import parse_shapes
    from cltune.tuning.kernels import tune_kernel_axis_spec

    axes = {"0": (0,), "1": (1,), "both": (1, 0)}.get(axis)
    if axes is None:
        raise ValueError(f"--axis takes 0, 1 or both, not {axis!r:.20}")
    keys = parse_shapes(shapes) if shapes else None
    label = kernel if isinstance(kernel, str) else kernel.name
    err.print(f"tuning {label} along axis {' and '.join(map(str, axes))} "
              f"({timeout:g} s at most per shape and axis)", highlight=False)
    return tune_kernel_axis_spec(device, kernel, axes, keys, trials=trials, timeout=timeout,
                                 db=db, storage=storage, seed=seed)


def render_kernel(info: Any, kernel: str, results: list, out: Console) -> bool:
    t = Table(title=f"best on {info.name} ({kernel})")
    for c in ("size", "GB/s", "device time", "per call", "config", "trials", "rejected"):
        t.add_column(c)
    for r in results:
        t.add_row(r.size_class, f"{r.gbps:.1f}" if r.gbps else "-",
                  f"{r.median_s * 1e6:.1f} µs" if r.median_s else "-",
                  f"{r.per_call_s * 1e6:.1f} µs" if r.per_call_s else "-",
                  r.config.short() if r.config else "no config validated", str(r.trials),
                  str(r.failed + r.pruned))
    out.print(t)
    if driver_failures(results):
        out.print(driver_failures(results), highlight=False)
    return any(r.config is None for r in results)
