"""`cltune tune`'s modes, one function each (`MODES`): the built-in ops over 1-D sizes
(`tune_sizes`), along an axis of 2-D arrays or over segments (`tune_shapes`), an application's
ReductionKernel named `module:attribute` (`tune_kernel`) and a statistic of cltune.stats.api
(`tune_statistic`, `--op var`), the last two whole or along an axis; and the other families'
(`tune_many`, `tune_hist`, `tune_topk`, `tune_scan`, `tune_sort`).

Each takes the parsed options (`TuneRequest`; None: the mode's default) and the progress
display, and returns (device info, [(label, per-size-class results)]) for `render`. A bad option
value is a ValueError; the command turns every library error into one line.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.cli import service
from cltune.cli.render import RichProgress
from cltune.core.buckets import DEFAULT_BUCKETS, parse_sizes
from cltune.core.shapes import parse_shapes
from cltune.device.info import DeviceInfo
from cltune.device.select import select, select_many
from cltune.families.expr import family as expr_family
from cltune.families.expr.api import ReductionKernel
from cltune.families.hist import family as hist_family
from cltune.families.scan import gscan_family, sort_family
from cltune.families.scan.generic import GenericScanKernel
from cltune.families.topk import family as topk_family
from cltune.stats import api as stats
from cltune.tuning.tuner import SAMPLERS, BucketResult, Progress, TuneOptions

#: (label, its results) per table: a variant of the axis family, an op/dtype or a kernel
Runs = list[tuple[str, list[BucketResult]]]

#: the statistics `--op` takes besides the built-in ops (tuned as expressions)
STATISTICS = stats.OPS

#: `--axis` values and the axes they tune
AXES = {"0": (0,), "1": (1,), "both": (1, 0)}

#: shapes `cltune tune --kernel X --axis` (and `--op <statistic> --axis`) tunes when none are
#: named (log2 rows, log2 cols): 2^22 elements each, narrow to wide, and #40's skinny corners
#: (2^20 rows of 8, 8 rows of 2^20: few long rows along 1, a tall-narrow block along 0, and
#: the transposes)
KERNEL_AXIS_SHAPES = ((20, 3), (18, 4), (14, 8), (11, 11), (4, 18), (3, 20))


@dataclass(frozen=True)
class TuneRequest:
    """`cltune tune`'s options as parsed; trials and timeout None: the mode's default."""

    device: str = "0"
    op: str = "sum"
    dtype: str = "float32"
    sizes: str | None = None
    trials: int | None = None
    timeout: float | None = None
    axis: str | None = None
    segments: bool = False
    kernel: str | None = None
    many: str | None = None
    hist: str | None = None
    topk: str | None = None
    weights: str | None = None
    scan: bool = False
    workers: int = 1
    shapes: str | None = None
    sampler: str = "tpe"
    seed: int = 0
    resume: bool = False
    max_rel_error: float | None = None
    study: str = "cltune"
    seeds: bool = True
    db: str | None = None
    storage: str | None = None


def _check_sampler(name: str) -> None:
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")


def tune_sizes(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune [--sizes ...]`: a built-in op over 1-D size buckets (default 2^12..2^24),
    40 trials per bucket and 150 s in all unless given."""
    _check_sampler(req.sampler)
    opts = TuneOptions(op=req.op, dtype=req.dtype,
                       buckets=parse_sizes(req.sizes) if req.sizes else DEFAULT_BUCKETS,
                       trials=req.trials or 40, timeout_s=req.timeout or 150.0,
                       sampler=req.sampler, seed=req.seed, resume=req.resume,
                       study_prefix=req.study, max_rel_error=req.max_rel_error,
                       seeds=req.seeds)
    info, results = service.tune(req.device, opts, req.db, req.storage, progress, req.workers)
    return info, [(f"{req.op}/{req.dtype}", results)]


def tune_shapes(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --axis/--segments [--shapes ...]`: a built-in op along axes of 2-D arrays
    and/or over segments (the axis family's variants), 12 trials per shape class and 300 s in
    all unless given."""
    _check_sampler(req.sampler)
    variants = service.axis_variants(req.op, req.dtype, req.axis, req.segments)
    keys = parse_shapes(req.shapes) if req.shapes else None
    opts = TuneOptions(op=req.op, dtype=req.dtype, trials=req.trials or 12,
                       timeout_s=req.timeout or 300.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    return service.tune_axis(req.device, variants, keys, opts, req.db, req.storage, progress,
                             req.workers)


def tune_kernel(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --kernel module:attribute`: the application's ReductionKernel, whole over
    `--sizes` (default 2^20) or with `--axis` along axes of 2-D inputs of `--shapes`; or its
    GenericScanKernel (or Inclusive/ExclusiveScanKernel) over `--sizes`."""
    if req.kernel is None:
        raise ValueError("--kernel module:attribute names the kernel to tune")
    knl = load_kernel(req.kernel)
    if isinstance(knl, GenericScanKernel):
        if req.axis is not None:
            raise ValueError("--axis tunes a ReductionKernel along axes; a scan kernel is "
                             "tuned over --sizes")
        buckets = parse_sizes(req.sizes) if req.sizes else (20,)
        info, results = tune_scan_spec(req.device, knl, buckets, trials=req.trials or 30,
                                       timeout=req.timeout or 180.0, db=req.db,
                                       storage=req.storage, seed=req.seed, progress=progress)
        return info, [(req.kernel, results)]
    return _tune_expression(req, knl, req.kernel, progress)


def tune_statistic(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --op <statistic>`: the statistic's ReductionKernel (cltune.stats.api),
    tuned as `tune_kernel` tunes an application's."""
    label, knl = stats_kernel(req.device, req.op, req.dtype)
    return _tune_expression(req, knl, label, progress)


def tune_many(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --many KxN[,...]`: k reductions of arrays of about N elements in one launch
    (the `many` family, `--op` sum/prod/min/max/norm), 12 trials per class and 120 s in all
    unless given."""
    _check_sampler(req.sampler)
    keys = parse_shapes(req.many or "64x4096")
    opts = TuneOptions(op=req.op, dtype=req.dtype, trials=req.trials or 12,
                       timeout_s=req.timeout or 120.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    return service.tune_family(req.device, "many", [f"{req.op}/{req.dtype}"], keys, opts,
                               req.db, req.storage, progress, req.workers)


def tune_hist(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --hist NxB[,...]`: bincount (`--op bincount`, integer `--dtype`) or uniform
    histograms (`--op histogram`, float32/float64) of about N elements in B bins (the `hist`
    family; `--weights float32|float64` tunes the weighted sums), 12 trials per class and
    120 s in all unless given."""
    _check_sampler(req.sampler)
    keys = parse_shapes(req.hist or "1048576x256")
    variant = f"{req.op}/{req.dtype}" + (f"/{req.weights}" if req.weights else "")
    hist_family.variant_of(variant)  # a clear error for a variant the family has not
    opts = TuneOptions(op=req.op, dtype=req.dtype, trials=req.trials or 12,
                       timeout_s=req.timeout or 120.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    return service.tune_family(req.device, hist_family.NAME, [variant], keys, opts, req.db,
                               req.storage, progress, req.workers)


def tune_topk(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --topk NxK[,...]`: the K largest of about N elements of `--dtype` (the
    `topk` family), 12 trials per class and 120 s in all unless given."""
    _check_sampler(req.sampler)
    keys = parse_shapes(req.topk or "16777216x8")  # log2 (N, K)
    if any(k > n for n, k in keys):
        raise ValueError("--topk: K must not exceed N (NxK: the K largest of N elements)")
    variant = f"topk/{req.dtype}"
    topk_family.variant_of(variant)  # a clear error for a dtype the family has not
    opts = TuneOptions(op="topk", dtype=req.dtype, trials=req.trials or 12,
                       timeout_s=req.timeout or 120.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    return service.tune_family(req.device, topk_family.NAME, [variant], keys, opts, req.db,
                               req.storage, progress, req.workers)


def tune_sort(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --op sort`: the radix passes' shape of cltune.sort, argsort and
    sort_by_key for keys of `--dtype` (the `sort` family) over `--sizes` (default
    sort_family.DEFAULT_SIZES: 2^20 and 2^24 on GPUs, 2^16 and 2^20 on CPUs), 12 trials per
    size and 120 s in all unless given."""
    _check_sampler(req.sampler)
    variant = sort_family.variant_for(req.dtype)  # a clear error for a dtype it has not
    if req.sizes:
        sizes = parse_sizes(req.sizes)
    else:
        kind = select_many(req.device)[0][0].type
        sizes = sort_family.DEFAULT_SIZES["cpu" if kind == "cpu" else "gpu"]
    opts = TuneOptions(op="sort", dtype=req.dtype, trials=req.trials or 12,
                       timeout_s=req.timeout or 120.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    return service.tune_family(req.device, sort_family.NAME, [variant], sizes, opts, req.db,
                               req.storage, progress, req.workers)


#: `cltune tune --scan` without --sizes/--axis: whole arrays of these sizes (log2) and the
#: default shapes along both axes
SCAN_SIZES = (16, 20, 24)
SCAN_SHAPES = ((20, 4), (12, 12))


def scan_keys(req: TuneRequest) -> list[tuple[str, tuple[tuple[int, int], ...]]]:
    """(layout, size keys) pairs `cltune tune --scan` tunes: whole arrays of --sizes are rows
    of one (keys (0, k)); --axis 1 scans rows of --shapes (rows layout), --axis 0 their
    columns (cols layout: keys (log2 rows, log2 columns))."""
    out: list[tuple[str, tuple[tuple[int, int], ...]]] = []
    if req.axis is None or req.sizes:
        sizes = parse_sizes(req.sizes) if req.sizes else SCAN_SIZES
        out.append(("rows", tuple((0, b) for b in sizes)))
    if req.axis is not None or not req.sizes:
        shapes = parse_shapes(req.shapes) if req.shapes else SCAN_SHAPES
        axes = AXES.get(req.axis or "both")
        if axes is None:
            raise ValueError(f"--axis takes 0, 1 or both, not {req.axis!r:.20}")
        rows = tuple(k for k in shapes) if 1 in axes else ()
        if rows:
            if out:
                out[0] = ("rows", tuple(dict.fromkeys(out[0][1] + rows)))
            else:
                out.append(("rows", rows))
        if 0 in axes:
            out.append(("cols", tuple(shapes)))
    return out


def tune_scan(req: TuneRequest, progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """`cltune tune --scan`: prefix scans (`--op` sum, prod, min, max; the scan family) of
    whole arrays of --sizes and along both axes of --shapes (or the --axis named), 8 trials
    per class and 180 s in all unless given."""
    _check_sampler(req.sampler)
    opts = TuneOptions(op=req.op, dtype=req.dtype, trials=req.trials or 8,
                       timeout_s=req.timeout or 180.0, sampler=req.sampler, seed=req.seed,
                       resume=req.resume, study_prefix=req.study, seeds=req.seeds)
    parts = scan_keys(req)
    runs: Runs = []
    info = None
    for layout, keys in parts:
        info, got = service.tune_family(
            req.device, "scan", [f"{req.op}/{req.dtype}/{layout}"], keys,
            replace(opts, timeout_s=opts.timeout_s * len(keys)
                    / sum(len(k) for _, k in parts)), req.db, req.storage, progress,
            req.workers)
        runs += got
    return info, runs  # type: ignore[return-value]


MODES: dict[str, Callable[[TuneRequest, RichProgress], tuple[DeviceInfo, Runs]]] = {
    "sizes": tune_sizes, "shapes": tune_shapes, "kernel": tune_kernel,
    "statistic": tune_statistic, "many": tune_many, "scan": tune_scan, "hist": tune_hist,
    "topk": tune_topk, "sort": tune_sort}


def _tune_expression(req: TuneRequest, kernel: str | ReductionKernel, label: str,
                     progress: RichProgress) -> tuple[DeviceInfo, Runs]:
    """A kernel (or its `module:attribute`) whole, 30 trials and 180 s per size class unless
    given; with `--axis` along axes, 20 trials and 120 s per shape and axis."""
    if req.axis is None:
        buckets = parse_sizes(req.sizes) if req.sizes else (20,)
        info, results = tune_kernel_spec(req.device, kernel, buckets, trials=req.trials or 30,
                                         timeout=req.timeout or 180.0, db=req.db,
                                         storage=req.storage, seed=req.seed, progress=progress)
        return info, [(label, results)]
    axes = AXES.get(req.axis)
    if axes is None:
        raise ValueError(f"--axis takes 0, 1 or both, not {req.axis!r:.20}")
    keys = parse_shapes(req.shapes) if req.shapes else None
    timeout = req.timeout or 120.0
    progress.note(f"tuning {kernel if isinstance(kernel, str) else kernel.name} along axis "
                  f"{' and '.join(map(str, axes))} ({timeout:g} s at most per shape and axis)")
    info, results = tune_kernel_axis_spec(req.device, kernel, axes, keys,
                                          trials=req.trials or 20, timeout=timeout, db=req.db,
                                          storage=req.storage, seed=req.seed)
    return info, [(label, results)]


def stats_kernel(device: str, op: str, dtype: str) -> tuple[str, ReductionKernel]:
    """The statistic's ReductionKernel (cltune.stats.api) on the selected device, and its
    label."""
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


def load_kernel(spec: str) -> ReductionKernel | GenericScanKernel:
    """The `cltune.ReductionKernel` or `cltune.GenericScanKernel` (an Inclusive or
    ExclusiveScanKernel: the one it wraps) that `module:attribute` names: the attribute
    itself, or what it returns when called without arguments. The module is the
    application's code (imported, so it runs)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"--kernel {spec!r:.80}: expected module:attribute")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"--kernel {spec!r:.80}: cannot import {module!r}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--kernel {spec!r:.80}: {module} has no attribute {attr!r}")
        obj = getattr(obj, part)
    kinds = (ReductionKernel, GenericScanKernel)
    if not isinstance(obj, kinds) and not isinstance(getattr(obj, "_knl", None), kinds) \
            and callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001 - the application's function failed: say so
            raise ValueError(f"--kernel {spec!r:.80}: calling it failed: "
                             f"{type(e).__name__}: {e}"[:300]) from None
    if not isinstance(obj, kinds) and isinstance(getattr(obj, "_knl", None), GenericScanKernel):
        obj = obj._knl  # an InclusiveScanKernel / ExclusiveScanKernel: the kernel it calls
    if not isinstance(obj, kinds):
        raise ValueError(f"--kernel {spec!r:.80} is a {type(obj).__name__}, not a "
                         "cltune.ReductionKernel or GenericScanKernel (or a function "
                         "returning one)")
    return obj


def _reduction(knl: Any) -> ReductionKernel:
    if not isinstance(knl, ReductionKernel):
        raise ValueError(f"{type(knl).__name__} is not a cltune.ReductionKernel")
    return knl


def tune_scan_spec(selector: str, knl: GenericScanKernel, buckets: tuple[int, ...] = (20,), *,
                   trials: int = 30, timeout: float = 180.0, db: str | None = None,
                   storage: str | None = None, seed: int = 0, progress: Progress | None = None,
                   ) -> tuple[DeviceInfo, list[BucketResult]]:
    """Tune a GenericScanKernel on the selected device at the given size classes (log2; its
    `sample_args` make the inputs, in the evaluation worker). Returns (device info,
    per-size-class results), like `service.tune`."""
    opts = TuneOptions(family=gscan_family.NAME, variant=knl.fingerprint,
                       buckets=tuple(buckets), trials=trials, timeout_s=timeout, seed=seed,
                       target_options={"kernel": knl, "db": db})
    return service.tune(selector, opts, db, storage, progress)


def tune_kernel_spec(selector: str, kernel: str | ReductionKernel,
                     buckets: tuple[int, ...] = (20,), *, trials: int = 30,
                     timeout: float = 180.0, db: str | None = None, storage: str | None = None,
                     seed: int = 0, progress: Progress | None = None,
                     ) -> tuple[DeviceInfo, list[BucketResult]]:
    """Tune a ReductionKernel (or the one `module:attribute` names) whole on the selected
    device at the given size classes (log2; its `sample_args` make the inputs). Returns
    (device info, per-size-class results), like `service.tune`."""
    knl = _reduction(kernel if not isinstance(kernel, str) else load_kernel(kernel))
    opts = TuneOptions(family=expr_family.NAME, variant=knl.fingerprint,
                       buckets=tuple(buckets), trials=trials, timeout_s=timeout, seed=seed,
                       target_options={"kernel": knl, "db": db})
    return service.tune(selector, opts, db, storage, progress)


def tune_kernel_axis_spec(selector: str, kernel: str | ReductionKernel, axes: tuple[int, ...],
                          shapes: tuple[tuple[int, int], ...] | None = None, *,
                          trials: int = 20, timeout: float = 120.0, db: str | None = None,
                          storage: str | None = None, seed: int = 0,
                          ) -> tuple[DeviceInfo, list[BucketResult]]:
    """Tune a ReductionKernel (or the one `module:attribute` names) along `axes` (0: columns,
    1: rows) of 2-D inputs of `shapes` ((log2 rows, log2 cols) pairs; default
    KERNEL_AXIS_SHAPES) on the selected device, which must be one of the kernel's context. Its
    `sample_args` make the inputs, reshaped. `timeout` is per shape and axis. Returns (device
    info, the tuner's results, one per shape and axis)."""
    knl = _reduction(kernel if not isinstance(kernel, str) else load_kernel(kernel))
    info, dev = select(selector)
    mine = [d for d in knl.context.devices if d.int_ptr == dev.int_ptr]
    if not mine:
        raise ValueError(f"device {selector!r:.40} is not in {kernel!r:.80}'s context "
                         f"({', '.join(d.name.strip() for d in knl.context.devices)})")
    q = cl.CommandQueue(knl.context, mine[0])
    out: list[BucketResult] = []
    for a, b in shapes or KERNEL_AXIS_SHAPES:
        shape = (1 << a, 1 << b)
        args = tuple(x.reshape(shape) if isinstance(x, cla.Array) else x
                     for x in knl.sample_args(q, shape[0] * shape[1], seed))
        for axis in axes:
            out += knl.tune(*args, axis=axis, trials=trials, timeout=timeout, queue=q, db=db,
                            storage=storage, seed=seed)
    return info, out
