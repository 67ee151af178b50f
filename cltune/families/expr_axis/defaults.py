"""The heuristic config of an expression along an axis for a shape (the `builtin` level): from
the device's kind and limits and the (outer, r, inner) view; `heuristic_build` steps down to
smaller work-groups where the built kernel's limits refuse it."""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.device.info import DeviceInfo
from cltune.families.expr_axis.config import (
    MAX_WG,
    STREAM_STRIPS,
    AxisExprConfig,
)
from cltune.families.expr_axis.kernel import (
    CASCADE_DEPTH,
    MAX_SHORT,
    AxisBuilt,
    build,
    streams,
)
from cltune.opencl.build import BuildError
from cltune.opencl.expression import ExprSpec

#: CPU columns: a work-item's accumulators (strip x items) are kept within this many bytes
#: (more spill: var's 32-byte accumulators at items=2 ran 1.3-3x slower on both CPU runtimes)
CPU_ACC_BYTES = 256
#: CPUs: columns of at most this many rows take strips of 8 outputs (16 before) with one
#: accumulator each (2 before for mean and norms). Configs interleaved in one process
#: (scripts/experiments/cpu_cols_ab.py, docs/logs/cpu-stats-short-cols-2026-12-06.txt), this
#: AMD EPYC host, float32, before / after ms a call: Debian's PoCL mean of 4x1048576 along 0
#: 2.73 / 1.79, 3x1000003 1.48 / 1.05, 16x262144 1.74 / 0.87; norm 2.47 / 1.80, 1.96 / 1.48,
#: 0.98 / 0.76; var 3.10 / 2.04, 2.85 / 1.89, 1.25 / 1.11. Intel's runtime: mean 2.10 / 1.76,
#: 1.78 / 1.48; norm 2.62 / 2.12, 2.40 / 1.80; var 4.51 / 3.56, 3.84 / 3.09. (16-output strips
#: with one accumulator ran faster still on PoCL and slower than before on Intel's for norms;
#: 8-output strips of var on long columns, 100000x64, slower on both.)
CPU_SHORT_COL = 16


#: CPUs, strided columns (not streamed): work-items a group, at most; fewer where all the
#: outputs make fewer strips. Both CPU runtimes run a group's work-items as vector lanes, so a
#: group of 8 over the one strip of a tall-narrow block (2000003x4 along 0: 4 outputs) walked
#: its rows with 7 idle lanes. float32 along axis 0, ms a call, served (8) -> a work-item a
#: group, configs interleaved in one process (scripts/experiments/expr_axis_tall_cpu.py,
#: docs/logs/cpu-stats-tall-2026-12-07.txt, this 2-core AMD EPYC host): Debian's PoCL
#: 2000003x4 mean 20.6 -> 2.1, var 39.1 -> 5.0, argmax 54.7 -> 6.0, norm 16.9 -> 2.3;
#: 1048576x16 mean 28.1 -> 4.8, var 38.4 -> 4.9, argmax 87.7 -> 10.8, norm 31.7 -> 3.4;
#: Intel's runtime 2000003x4 mean 18.8 -> 2.4, var 62.7 -> 4.8, argmax 34.1 -> 5.3, norm 25.0
#: -> 8.3; 1048576x16 mean 51.4 -> 5.0, var 188.9 -> 22.7, argmax 95.8 -> 17.1, norm 178.9 ->
#: 24.4 (numpy: 6.7-162). Two strips (1000003x7) ran within noise of 8 on both.
CPU_COL_WG = 8
#: CPUs, fewer rows than CPU_COL_WG of at least CPU_ROW_STREAM_MIN elements whose
#: accumulators the rule above leaves out (var's, sums with the rounding cascade; not
#: argmin/argmax, whose few long rows go to cltune.stats.argvec): a work-item a group with this
#: many accumulators, where groups of 8 rows with 2 were served. var along axis 1, ms a call,
#: configs interleaved in one process (scripts/experiments/expr_axis_tall_cpu.py FULL=1,
#: docs/logs/cpu-stats-few-rows-2026-12-07.txt, CI beside it), before -> 4 (8):
#: Debian's PoCL 4x2000003 5.9 -> 2.3 (1.5), 7x1500001 3.5 -> 3.0 (2.0), 3x700001 1.65 ->
#: 0.66 (0.45); Intel's runtime 15.5 -> 7.1 (6.6), 7.2 -> 5.7 (9.0), 3.5 -> 1.4 (2.6). 8 wins
#: on PoCL and loses on Intel's runtime (as its norms do: CPU_ROW_STREAM_ITEMS)
CPU_FEW_ROWS_ITEMS = 4
#: CPUs, columns of at least 64 outputs whose accumulators hold floating-point values of at
#: most this many bytes (kernel.streams: float32 data summed in double, as cltune.stats' mean
#: and norms, or accumulators with the rounding cascade, as a float32 or float64 sum):
#: strips of up to 1024 outputs streamed (config.STREAM_STRIPS), STREAM_ROWS rows a pass.
#: ms a call along axis 0 of 4096x4096, this AMD EPYC host, 2026-12-07
#: (docs/logs/cpu-stats-stream-2026-12-07.txt): float32 mean, before/after alternated,
#: Debian's PoCL 7.0-11.0 -> 3.8-3.9, Intel's runtime 5.9-6.3 -> 2.2-2.8; norm 6.3-6.5 ->
#: 2.3-3.2 and 3.9-4.1 -> 2.1-2.3 (numpy: mean 3.3-3.6, norm 13-15); configs forced in one
#: process, a ReductionKernel's float32 sum 8.1 -> 3.5 and 8.3 -> 2.1 (numpy 3.8-4.4), float64
#: 9.6 -> 4.9 and 10.5 -> 5.6 (numpy 8.1-8.6). var's 32-byte accumulators stay in strips of 16
#: (streamed: PoCL 8.9 -> 3.6, Intel's 6.2 -> 8.2, its struct not vectorised along a strip),
#: as do exact ones (argmax: 65536x256 on Intel's 8.8-9.0 -> 11.4-11.6)
CPU_STREAM_ACC_BYTES = 16
STREAM_ROWS = 8
#: (in `choose`) the streamed strip is the widest of STREAM_STRIPS whose private accumulators
#: fit, whatever the kept axis's width (a strip's runtime width is at most the row's), where it
#: was the widest within the row: rows of 64-1023 outputs took strips of 64 or 256, compiled
#: for that width, and ran up to 2x slower. float32 mean along axis 0, ms a call, configs
#: interleaved in one process (scripts/experiments/expr_axis_tall_cpu.py FULL=1,
#: docs/logs/cpu-stats-stream-span-2026-12-07.txt), served (the old strip) -> 1024: Debian's
#: PoCL 65536x256 4.55-6.20 -> 2.52-2.92, 20000x700 3.60 -> 2.25, 150000x100 2.12 -> 2.32,
#: 200000x64 1.84 -> 1.68; Intel's runtime 3.73-5.75 -> 2.47-2.96, 3.55 -> 2.19, 2.37 -> 2.22,
#: 1.79 -> 2.11 (numpy 2.4-4.7); norms alike
#: CPUs, rows of at least this many elements with wide accumulators of at most
#: CPU_STREAM_ACC_BYTES (mean, norms of float32): a work-item a group (CPU_ROW_STREAM_ITEMS
#: accumulators; 8 in the figures here), where 8 work-items had 2-4. ms a call, configs
#: interleaved in one process, this AMD EPYC host, 2026-12-07
#: (docs/logs/cpu-stats-rows-2026-12-07.txt), mean / norm, before -> after:
#: Debian's PoCL 65536x256 3.89 -> 2.84 / 4.36 -> 2.92, 4096x4096 2.85 -> 2.65 / 3.07 -> 2.38,
#: 2000x3001 0.94 -> 0.80 / 1.09 -> 0.79, 100x1000 0.111 -> 0.082 / 0.126 -> 0.080; Intel's
#: runtime 8.86 -> 6.13 / 5.65 -> 3.91, 3.39 -> 3.24 / 3.47 -> 2.82, 1.27 -> 0.89 / 1.21 ->
#: 0.84, 0.040 -> 0.034 / 0.040 -> 0.035. Shorter rows (1048576x64: Intel's 20.2 -> 31.4), var
#: (Intel's 6.2 -> 12.3) and argmax (PoCL 10.1 -> 16.3) lost so and keep the rule above.
CPU_ROW_STREAM_MIN = 256
#: the accumulators of that work-item: 4, where 8 were measured above on an AVX2 host. On this
#: session's AVX-512 host (Zen 4) Intel's runtime ran norms with 8 at 3.8-4.4x the time of 4
#: (float32 along axis 1, ms a call, interleaved in one process, 8 -> 4: 65536x256 10.45 ->
#: 2.73, 4096x4096 8.62 -> 2.06, 2000x3001 2.62 -> 0.59 where numpy takes 2.35, 4x2000003 4.78
#: -> 1.16), means alike either way; Debian's PoCL ran norms 1.0-1.7x slower with 4
#: (2000x3001 0.76 -> 1.01, 1000x1000 0.15 -> 0.26, numpy 0.31) and means 1.0-1.4x: 4 is the
#: count that is never far off on either (docs/logs/cpu-stats-rows-items-2026-12-07.txt)
CPU_ROW_STREAM_ITEMS = 4
#: a streamed strip's private accumulators (with the cascade: level 1 and the counter's slots
#: too) are kept within this many bytes (a float64 sum's strip of 1024: 96 KB)
STREAM_PRIVATE_BYTES = 128 << 10


def stream_bytes(strip: int, acc_size: int, cascade: bool) -> int:
    """The private bytes of a streamed strip's accumulators."""
    return strip * acc_size * (2 + CASCADE_DEPTH if cascade else 1)

#: GPUs (fitted to H200 sweeps of var, argmax, mean and norm on 24 untuned shapes, see
#: `choose`): rows get a lane per max(MIN_ROW_ELEMS_PER_LANE, ROW_ELEMS_PER_ACC_BYTE *
#: accumulator bytes) elements of a row (var's 32: a lane per 256; mean's 8: per 128), more
#: lanes while the launch has fewer than MIN_ROW_ITEMS work-items;
#: strided columns get lanes along the axis until the launch has ~COL_ITEM_BYTES /
#: accumulator bytes work-items (var: 2^16), at most MAX_COL_LANES
ROW_ELEMS_PER_ACC_BYTE = 8
MIN_ROW_ELEMS_PER_LANE = 128
MIN_ROW_ITEMS = 1 << 13
COL_ITEM_BYTES = 1 << 21
MAX_COL_LANES = 32
#: GPUs: a tall-narrow block (at most TALL_OUTPUTS outputs) gets up to TALL_LANES lanes along
#: the axis, 2 accumulators each for var's 32-byte ones, 1 for narrower (mean, norms,
#: argmin/argmax). H100, 2000003x7 / 3000017x3 / 1048576x8 along 0, mean, argmax and var: 2
#: each ran 1.09x the best of the grid in geometric mean, where 32 lanes with the
#: accumulators below ran 1.27x (3000017x3 argmax 37.1 -> 22.5 us, var 30.8 -> 21.9; torch
#: 26.2 / 26.6); scripts/experiments/stats_axis_skinny.py --few-plans. A second H100 run
#: (2026-12-07, `--tall`, 6 shapes of 3-16 columns, 7 blocks of 20 calls;
#: docs/logs/h100-stats-tall-2026-12-07.json) put 2 for mean at 1.25x the best (2.4x at
#: 1500001x7: 45 us where 1 item takes 19-27) and 1 item at 1.13x for mean and argmax; var
#: kept 2 (1.03x)
TALL_OUTPUTS = 16
TALL_LANES = 64
#: GPUs: columns of at most this many rows take two outputs a work-item (see `_gpu_cols`)
SHORT_COL = 8


def choose(info: Any, outer: int, r: int, inner: int, acc_size: int = 8,
           stream: bool = False, cascade: bool = False) -> AxisExprConfig:
    """The config for reducing (outer, r, inner) along r on a device (`type`, `max_wg`) with
    accumulators of `acc_size` bytes (`stream`, `cascade`: kernel.streams of the spec). CPUs,
    accumulators that hold floats of up to 16 bytes (`stream`): columns of 64 outputs or more
    streamed in strips of up to 1024, rows of 256 or more (wide ones only, no `cascade`) a
    work-item a group with 8 accumulators (see CPU_STREAM_ACC_BYTES, CPU_ROW_STREAM_MIN). Other
    CPU views: rows a work-item each (1, 2 or 4 accumulators by
    length; 8 rows a group, 16 for argmin/argmax's 16-byte accumulators), columns a work-item
    per strip of 16 neighbouring outputs folding row after row (2 accumulators per output
    within CPU_ACC_BYTES). GPUs: rows a lane per max(128, 8 x accumulator bytes) elements,
    doubled while the launch is small, 4 accumulators a work-item; columns split along the
    axis over up to 32 lanes while outputs x lanes stay under 2^21 / (accumulator bytes),
    with 4 accumulators (var), 2 (argmin/argmax) or, for 8-byte ones, 4 on up to 8 lanes and
    1 on more. On H200 sweeps (scripts/experiments/stats_axis_gpu_sweep.py,
    docs/logs/h200-stats-axis-sweep-*2026-12-03.json: var and argmax on 10 shapes, mean and
    norm on 14) these ran 1.07x (rows) / 1.05x (columns) the best of ~50 configs per case in
    geometric mean, where the earlier rule (a lane per 16 elements, one lane per column from
    256 columns on) ran 1.25x / 1.44x. Why, with the measurements behind each
    choice: docs/expressions.md, "The heuristic along an axis"."""
    cpu = getattr(info, "type", "gpu") == "cpu"
    cap = pow2_at_most(min(int(info.max_wg), MAX_WG))
    items = 1 if r < 64 else 2 if r < 1024 else 4
    if inner == 1:
        if cpu and stream and not cascade and acc_size <= CPU_STREAM_ACC_BYTES \
                and r >= CPU_ROW_STREAM_MIN:
            # wide accumulators (mean, norms of float32) along rows of 256 or more: a
            # work-item a group, CPU_ROW_STREAM_ITEMS accumulators (CPU_ROW_STREAM_MIN's
            # measurements)
            return AxisExprConfig("rows", 1, 1, CPU_ROW_STREAM_ITEMS)
        if cpu and outer < CPU_COL_WG and r >= CPU_ROW_STREAM_MIN and acc_size != 16:
            # fewer long rows than a group's work-items (var, sums with the cascade): a
            # work-item a group, 4 accumulators (CPU_FEW_ROWS_ITEMS)
            return AxisExprConfig("rows", 1, 1, CPU_FEW_ROWS_ITEMS)
        if cpu and 2 <= r <= CPU_SHORT_ROW and acc_size <= 8:
            # rows of 2..16 elements, built for their length (short_rows): groups of
            # CPU_SHORT_ROW_WG for accumulators of up to 8 bytes (its comment)
            return AxisExprConfig("rows", min(cap, CPU_SHORT_ROW_WG), 1, 1)
        if cpu:  # 16-byte accumulators are argmin/argmax's (index, value): see above
            return AxisExprConfig("rows", min(cap, 16 if acc_size == 16 else 8), 1, items)
        return _gpu_rows(cap, outer, r, acc_size)
    fits = [s for s in STREAM_STRIPS
            if stream_bytes(s, acc_size, cascade) <= STREAM_PRIVATE_BYTES]
    # the widest strip whose accumulators fit, whatever the row's width (the comment
    # after STREAM_ROWS)
    wide = max(fits, default=0) \
        if cpu and stream and acc_size <= CPU_STREAM_ACC_BYTES and inner >= STREAM_STRIPS[0] \
        else 0
    if wide:  # streamed strips (CPU_STREAM_ACC_BYTES' measurements)
        return AxisExprConfig("cols", 1, 1, min(STREAM_ROWS, pow2_at_most(max(1, r))), wide)
    if cpu:
        strip = min(16, pow2_at_most(inner))
        if r <= CPU_SHORT_COL:  # strips of 8 outputs, one accumulator each
            return AxisExprConfig("cols", min(cap, 8), 1, 1, min(strip, 8))
        items = 2 if r >= 2 and strip * 2 * acc_size <= CPU_ACC_BYTES else 1
        # no more work-items a group than the outputs have strips (CPU_COL_WG)
        wg = min(cap, CPU_COL_WG, pow2_at_most(max(1, outer * -(-inner // strip))))
        return AxisExprConfig("cols", wg, 1, items, strip)
    return _gpu_cols(cap, outer, r, inner, acc_size)


def _gpu_rows(cap: int, outer: int, r: int, acc_size: int) -> AxisExprConfig:
    wg = min(cap, 256)
    items = 4
    per_lane = max(MIN_ROW_ELEMS_PER_LANE, ROW_ELEMS_PER_ACC_BYTE * max(1, acc_size))
    lanes = min(wg, pow2_at_least(-(-r // per_lane)))
    while outer * lanes < MIN_ROW_ITEMS and lanes < wg and lanes * items < r:
        lanes *= 2
    return AxisExprConfig("rows", wg, lanes, items)


def _gpu_cols(cap: int, outer: int, r: int, inner: int, acc_size: int) -> AxisExprConfig:
    wg = min(cap, 256)
    work = COL_ITEM_BYTES // max(1, acc_size) // max(1, outer * inner)
    tall = outer * inner <= TALL_OUTPUTS
    lanes = max(1, min(TALL_LANES if tall else MAX_COL_LANES, wg, pow2_at_most(max(1, work))))

    # var's 32-byte accumulators 4 a work-item; argmin/argmax's 16-byte ones 2 (4: up to
    # 1.8x slower); 8-byte ones (mean, norms) 4 on few lanes, 1 on many (2 on 32 lanes ran
    # 1.5-2.3x the best); a tall-narrow block's TALL_LANES lanes 2 (var) or 1
    def items(lanes: int) -> int:
        if tall and lanes >= TALL_LANES:
            return 2 if acc_size >= 32 else 1
        return 4 if acc_size >= 32 else 2 if acc_size >= 16 else 4 if lanes <= 8 else 1

    while lanes > 1 and lanes * items(lanes) > max(1, r):
        lanes //= 2
    if lanes == 1 and r <= SHORT_COL:
        # millions of short columns: two neighbouring outputs a work-item, one accumulator
        # each, var in groups of 128 (H100, float32, per call: 8x1048576 along 0 mean 19.8 ->
        # 14.0 us, var 28.4 -> 16.3, argmax 21.5 -> 20.3; 4x2000003 mean 27.2 -> 17.3-17.9,
        # norm 24.8 -> 17.4, argmax 31.1 -> 26.3; torch 14.6 / 19.9 / 24.3 and 19.1 / 19.5 /
        # 31.6; scripts/experiments/stats_axis_skinny.py)
        # argmin/argmax's 16-byte accumulators 2 a work-item (H100, 2026-12-07: 1.19x the
        # best of the grid with 1, 1.06x with 2, torch/this 0.95 -> 1.08 over 4x1048576,
        # 7x1500001, 3x3000017 along 0; docs/logs/h100-stats-shortcols-2026-12-07.txt)
        return AxisExprConfig("cols", min(wg, 128) if acc_size >= 32 else wg, 1,
                              2 if acc_size == 16 else 1, 2, 16)
    return AxisExprConfig("cols", wg, lanes, items(lanes), 1, 16)


#: CPUs: rows of 2..CPU_SHORT_ROW elements, a work-item each and unsplit, are reduced by a
#: build for their exact length (kernel.build's `short`, CLT_AX_SHORT: the row's loop becomes
#: straight-line code), where accumulators are at most CPU_SHORT_ACC_BYTES. float32 along rows
#: of 32 MB arrays, ms a call, the served config general -> exact, interleaved in one process
#: (scripts/experiments/short_rows_cpu.py, docs/logs/cpu-short-rows-2026-12-07.txt, a 2-core
#: Intel Xeon host): Debian's PoCL argmax 2.5-4.0x faster at every length (2000000x4 15.8 ->
#: 4.4), mean and norm 1.6-2.4x from 4 elements on (2000000x4 mean 8.3 -> 4.5, 1600000x5 norm
#: 7.6 -> 3.2) and 0.85-0.99x at 2 and 3, a ReductionKernel's float32 sum 1.2-1.9x; Intel's
#: runtime sums 1.45-2.7x, argmax 1.1-1.3x, mean and norm 0.85-1.26x (16 elements: 0.85-0.97).
#: var's 32-byte accumulators stay general (forced exact: 0.68-1.94x on PoCL, 0.83-1.14x on
#: Intel's). numpy took 3-10x longer than the general build on every row here.
CPU_SHORT_ROW = MAX_SHORT
CPU_SHORT_ACC_BYTES = 16
#: CPUs: the work-group of those exact builds where accumulators are at most 8 bytes (mean,
#: norms, sums), where 8 served general builds. ms a call along rows, interleaved in one
#: process (scripts/experiments/expr_axis_tall_cpu.py FULL=1 AX=1, the exact builds under
#: groups of 4/8/16/32/64; docs/logs/cpu-short-rows-2026-12-07.txt): Debian's PoCL mean of
#: 2000000x4 4.63 (8) -> 2.58 (32) / 2.22 (64), 1600000x5 4.00 -> 2.18 / 2.03, 1000000x8
#: 3.27 -> 2.17 / 2.48, 500000x16 2.58 -> 2.65 / 2.88; Intel's runtime 7.36 -> 3.17 / 2.98,
#: 5.61 -> 2.93 / 2.79, 4.12 -> 2.39 / 2.25, 3.89 -> 2.01 / 2.01; norms alike. 32 is within
#: 15 % of the best on both. argmin/argmax keep 16 (PoCL's best; Intel's runtime 5-15 %
#: faster at 64, PoCL 1.4x slower there at 4 elements)
CPU_SHORT_ROW_WG = 32


def short_rows(info: Any, cfg: AxisExprConfig, plan: Any, outer: int, r: int, inner: int,
               acc_size: int) -> int:
    """The row length to build `cfg` for (kernel.build's `short`), or 0 for the general
    build: CPUs, rows (inner 1) of 2..CPU_SHORT_ROW elements a work-item each (lanes 1),
    not split, accumulators of at most CPU_SHORT_ACC_BYTES."""
    if getattr(info, "type", "gpu") != "cpu" or inner != 1 or cfg.layout != "rows":
        return 0
    if cfg.lanes != 1 or plan.split != 1 or not 2 <= r <= CPU_SHORT_ROW:
        return 0
    return r if acc_size <= CPU_SHORT_ACC_BYTES else 0


def _smaller(cfg: AxisExprConfig) -> AxisExprConfig | None:
    """The same layout with half the work-group (for kernels whose limit is lower)."""
    if cfg.wg == 1:
        return None
    wg = cfg.wg // 2
    return AxisExprConfig(cfg.layout, wg, min(cfg.lanes, wg), cfg.items, cfg.strip,
                          cfg.groups_per_cu)


def heuristic_build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                    outer: int, r: int, inner: int) -> AxisBuilt:
    """The build of `choose`'s config for the shape, its work-group halved while the
    kernel's limits refuse it (BuildError when the expression itself does not build)."""
    cfg: AxisExprConfig | None = choose(info, outer, r, inner, spec.dtype_out.itemsize,
                                        *streams(spec))
    while True:
        assert cfg is not None
        try:
            return build(ctx, dev, info, spec, cfg)
        except BuildError as e:
            cfg = _smaller(cfg) if "exceeds" in str(e) or "local memory" in str(e) else None
            if cfg is None:
                raise
