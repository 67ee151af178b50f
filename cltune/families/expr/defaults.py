"""The configs an expression gets untuned: the builtin one from the device's limits, or one
derived from the device's tuned plain sum (`derive`), fitted to the device (`fit`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cltune.device.info import DeviceInfo
from cltune.families.expr.config import GROUPS_PER_CU, ITEMS, ExprConfig
from cltune.opencl.expression import LOCAL_RESERVE

#: bytes of accumulators per work-item an untuned config may hold (items x accumulator size):
#: 16 float32 accumulators, 4 argmax structs (index, value), 2 var structs (n, c, s1, s2 in
#: double). More spill on GPUs: on the H200 a var with 16 accumulators ran at 0.22-0.45 of the
#: sum's speed, and its kernel could not be built with more than 256 work-items per group.
ACC_BYTES = 64


def single_pass_passes(info: DeviceInfo) -> tuple[int, ...]:
    """The `passes` values offered on a device. The single-pass finish (the last group reads
    the other groups' partials) exchanges partials of any type, structs too, with plain
    stores; only NVIDIA's platform orders them across work-groups (the kernel's PTX
    `membar.gl`). OpenCL 1.2 gives no such order for non-atomic stores elsewhere (Oclgrind
    reports it as a race), so other devices finish in a second kernel."""
    return (1, 2) if info.is_nvidia else (2,)


def fit(cfg: ExprConfig, info: DeviceInfo, itemsize: int) -> ExprConfig:
    """cfg made runnable on the device: its work-group shrunk to what the device allows (max
    size, local memory), a single pass turned into two where the device cannot order it."""
    wg = cfg.wg
    while wg > 1 and (wg > info.max_wg or wg * itemsize + LOCAL_RESERVE > info.local_mem):
        wg //= 2
    passes = cfg.passes if cfg.passes in single_pass_passes(info) else 2
    return replace(cfg, wg=wg, passes=passes)


def items_for(items: int, itemsize: int, info: DeviceInfo) -> int:
    """`items` accumulators, on GPUs (registers) fewer where they would hold more than
    ACC_BYTES; CPUs keep them (the derived configs' A/B there, docs/expressions.md)."""
    while info.type != "cpu" and items > 1 and items * itemsize > ACC_BYTES:
        items //= 2
    return items


def builtin(info: DeviceInfo, itemsize: int) -> ExprConfig:
    """CPUs: one work-item per group streaming its own chunk with 4 accumulators, 4 per core
    (measured best on Intel's runtime and PoCL: wider groups make the compilers gather);
    GPUs and others: 256-wide groups, 4 loads in flight, 8 groups per compute unit, one
    launch where `fit` keeps a single pass."""
    if info.type == "cpu":
        cfg = ExprConfig("contiguous", 1, 4, 4, 2)
    else:
        # one launch where the device orders the single-pass finish (fit: NVIDIA), as the
        # sum's builtin (#39 item 2)
        cfg = ExprConfig("strided", 256, items_for(4, itemsize, info), 8, 1)
    return fit(cfg, info, itemsize)


#: GPUs, single pass: accumulators larger than this many bytes (var's and std's four doubles)
#: are served by size (`builtin_by_size`)
BIG_ACC = 16
#: ... and at most this many (the size measured: var's; larger structs would spill 4 of them)
MEASURED_ACC = 32
#: the size classes (log2) of `builtin_by_size`'s two configs: the nearer one serves
SMALL_LOG2, LARGE_LOG2 = 22, 27


def builtin_by_size(info: DeviceInfo, itemsize: int) -> tuple[tuple[ExprConfig, int | None], ...]:
    """The builtin configs with the size class (log2) each serves (None: every size). GPUs with
    a single-pass finish and accumulators of BIG_ACC to MEASURED_ACC bytes: 4 accumulators a
    work-item and 2 groups a compute unit up to about 2^24 elements (the last group combines
    2 partials a compute unit, not 8), `builtin` above. On an H100
    (scripts/experiments/var_sizes.py, two runs, docs/logs/h100-var-sizes-2026-12-07.txt and
    h100-stats-sweep-2026-12-07.txt), var of
    10^6 / 3*10^6 / 2^22 / 2^24 float32 took 14.0-14.1 / 14.3-19.6 / 17.7-19.9 / 38.2-38.5 us
    a call where `builtin` took 21.9-22.4 / 22.7-28.6 / 22.0-24.2 / 42.8; at 2^27 213.7
    against 198.7. mean, norm2 and argmax (8-16 byte accumulators) kept `builtin`: within
    noise up to 2^22, 1.1-1.8x slower with 2 groups a compute unit from 2^24."""
    base = builtin(info, itemsize)
    if info.type == "cpu" or not BIG_ACC < itemsize <= MEASURED_ACC or base.passes != 1:
        return ((base, None),)
    small = fit(ExprConfig("strided", 256, 4, 2, 1), info, itemsize)
    return ((small, SMALL_LOG2), (base, LARGE_LOG2))


def derive(sum_cfg: Any, info: DeviceInfo, itemsize: int) -> ExprConfig:
    """An expression config shaped like the device's tuned plain sum: the same work-group
    size, groups per compute unit and passes; its loads per work-item step (items x vec) as
    independent accumulators; per-work-item streaming (`serial`) as the contiguous layout, on
    CPUs with one work-item per group and as many work-items per compute unit (the sum's
    work-items vectorise their own loads; an expression's would be gathered across them), with
    no more accumulators than ACC_BYTES hold."""
    def closest(v: int, allowed: tuple[int, ...]) -> int:
        return min(allowed, key=lambda a: (abs(a - v), a))

    serial = sum_cfg.strategy == "serial"
    wg, gpc = min(sum_cfg.wg, 1024), sum_cfg.groups_per_cu
    if serial and info.type == "cpu":
        wg, gpc = 1, gpc * wg
    cfg = ExprConfig("contiguous" if serial else "strided", wg,
                     items_for(closest(min(16, sum_cfg.items * sum_cfg.vec), ITEMS), itemsize,
                               info),
                     closest(gpc, GROUPS_PER_CU[1:]), sum_cfg.passes)
    return fit(cfg, info, itemsize)


def builtin_near(info: DeviceInfo, itemsize: int, bucket: int) -> ExprConfig:
    """The builtin config that serves size class 2^bucket (`builtin_by_size`'s nearest)."""
    choices = builtin_by_size(info, itemsize)
    return min(choices, key=lambda cb: abs((cb[1] if cb[1] is not None else bucket) - bucket))[0]
