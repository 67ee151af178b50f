"""The `builtin` level for the axis family: a config per layout and shape derived from the
device's limits, for devices (or shapes) never tuned.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152, is_nvidia=True)
    >>> builtin_axis_config(gpu, "rows", 1 << 20, 16).short()
    'rows wg256 L1 v4 i1 g8'
    >>> builtin_axis_config(gpu, "rows", 12345, 678).short()
    'rows wg256 L64 v1 i4 g8'
"""

from __future__ import annotations

from typing import Any

from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.kernel import source_hash
from cltune.families.axis.launch import NARROW_COLS, SHORT_ROW

#: CPUs, strided axis: vectors per work-item's strip of columns. Strips of 4096 columns
#: (256 x 16) kept 32 KiB of double accumulators per work-item and left few work-items on
#: shapes of few rows; 64 x 16 measured best or near it on both CPU runtimes (2026-12-03)
CPU_STRIP_VECTORS = 64

#: CPUs (rows): from this length on, 4 vectors in flight and 64 groups per compute unit
#: (1.0-1.9x the 8 and 8 before on rows of 256-4096 on both CPU runtimes, 2026-12-05)
CPU_LONG_ROW = 256
#: CPUs: at most this many long rows get a work-item a group, one load in flight (rows split
#: over 64 groups a CU: 8 x 2^20 to 256 x 2^15 float32, 1.2-1.5x the 8-wide groups on PoCL,
#: 1.2-1.3x on Intel's runtime; at 1024 rows Intel's 8-wide groups were 1.2x faster;
#: scripts/experiments/axis_rows_cpu_sweep.py, 2026-12-05)
CPU_FEW_ROWS = 256
#: CPUs (strided): at most this many reduced rows (fewer than the 8 a pass streams) stream
#: strips of 256 columns, 2 rows a pass (the 1024-column strip's 4 KB of accumulators then
#: take each row on its own: 2-7 x 10^6 float32 along axis 0 1.4-2.2x faster on PoCL, on a
#: noisy host; 8 rows, one whole pass: 0.84x in three alternating runs, kept)
CPU_FEW_REDUCED = 7
#: CPUs (strided): rows a pass where one strip spans a whole row (at most 1024 columns), so a
#: piece of rows is one contiguous run: folding 8 rows a pass read it 8 row-streams at a
#: time and ran at 0.66-0.81x numpy. float32 sums along axis 0, ms a call, builtin (8) -> 1,
#: interleaved in one process (scripts/experiments/axis_cpu_sweep.py,
#: docs/logs/cpu-axis-whole-row-2026-12-07.txt, this 2-core AMD EPYC host): Debian's PoCL
#: 65536x256 5.05 -> 2.73, 20000x700 2.60 -> 2.40; Intel's runtime 3.65 -> 2.04-2.22, 2.52 ->
#: 1.82 (numpy 2.3-3.9). Strips narrower than the row (4096x4096, 2000x3001) keep 8: 1 ran
#: there 1.4-2.8x slower.
CPU_WHOLE_ROW_ITEMS = 1

#: GPUs (rows): elements of a row per lane, and the work-items a launch aims for at least
ROW_ELEMS_PER_LANE = 16
MIN_WORK_ITEMS = 1 << 19
#: GPUs (strided): columns per tile, and rows per work-item along the reduced axis at least
COL_TILE = 64
COL_ROWS_PER_LANE = 8
#: GPUs (strided): at most this many kept columns is "narrow" (a few outputs of long columns;
#: 8 columns keep the tile rule: C4 v2 i4 g4, 17.6 / 18.0 us on the H200 / H100 at 1048576x8,
#: the narrow rule's 18.4 / 20.2)
NARROW = 7


def builtin_axis_config(info: Any, layout: str, a: int, b: int,
                        element_bytes: int = 8) -> AxisConfig:
    """rows/segs: a rows (segments) of mean length b; cols: a reduced rows of b columns.

    GPUs: rows get a lane per ~16 elements up to a work-group per row, neighbouring lanes
    loading neighbouring vectors (warp shuffles combine up to 32 lanes on NVIDIA); columns
    get tiles of ~64 columns, a work-item per vector of them (`_gpu_rows`, `_gpu_cols`: fitted
    to an H200 sweep). CPUs: a work-item per row (vectorised along the
    row; rows of 2..16 packed several to a 16-wide vector load); columns are
    streamed row after row, 8 rows a pass, in strips of up to 1024 columns (`stream`, as
    numpy does). Long rows and columns are split over groups by groups_per_cu. Vectors stay
    within the device's restriction (`DeviceInfo.vector_cap`) for lanes of `element_bytes`."""
    cap = info.vector_cap(element_bytes) if hasattr(info, "vector_cap") else 16
    cpu = info.type == "cpu"
    wg = min(pow2_at_most(info.max_wg), 8 if cpu else 256)
    if layout in ("rows", "segs"):
        if not cpu:
            return _gpu_rows(info, wg, a, b, cap)
        if layout == "rows" and 2 <= b <= SHORT_ROW and cap >= 2:
            # rows of 2..16: whole rows in each vector load (clt_ax_packed), 4 in flight, or
            # (other lengths) blocks of 16 rows transposed in registers; a work-item a group
            # (PoCL: 24 GB/s against 11 with 8, whose work-item loop the driver vectorises
            # across already-vector code; docs/logs/benchmarks-*.md)
            return AxisConfig(wg=1, lanes=1, vec=min(16, cap), items=4, groups_per_cu=8)
        vec = min(16, pow2_at_most(b), cap)
        # up to 8 vectors in flight: as many as a row has (docs/logs/benchmarks-*.md)
        items = min(8, pow2_at_most(max(1, b // vec)))
        if layout == "rows" and b >= CPU_LONG_ROW and a <= CPU_FEW_ROWS:  # a work-item a group
            return AxisConfig(wg=1, lanes=1, vec=vec, items=1, groups_per_cu=64)
        # rows and segments: a work-item a group, 4 vectors in flight, each group a contiguous
        # block of rows (CLT_AX_BLOCKED), where 8-wide groups walked them groups x 8 rows
        # apart: 65536x256 float32 rows 1.4-2.5 ms where 3.1-4.7, 2^20x64 7.7-10.1 where
        # 14-18, segments of ~256 1.6-3.1 ms where 3.8-7.1, two segments of 2^23 4.5 ms where
        # 15.4 (docs/logs/cpu-axis-rows-blocked-2026-12-06.txt)
        return AxisConfig(wg=1, lanes=1, vec=vec, items=min(items, 4), groups_per_cu=8)
    if cpu and b <= NARROW_COLS and cap >= 2:
        # a few columns: read as a flat array, 512-bit vectors (clt_ax_cols_narrow)
        vec = min(64 // max(4, element_bytes), cap)
        return AxisConfig(wg=min(pow2_at_most(info.max_wg), 16), lanes=0, cols=1, vec=vec,
                          items=2, groups_per_cu=8, stream=1)
    if cpu:  # stream strips of up to 1024 columns, 8 rows a pass (docs/logs/benchmarks-*.md)
        vec = min(16, pow2_at_most(b), cap)
        few = a <= CPU_FEW_REDUCED
        cols = min(CPU_STRIP_VECTORS // 4 if few else CPU_STRIP_VECTORS,
                   pow2_at_least(-(-b // vec)))
        # a strip as wide as the rows: one row a pass (CPU_WHOLE_ROW_ITEMS)
        items = 2 if few else CPU_WHOLE_ROW_ITEMS if cols * vec >= b else 8
        return AxisConfig(wg=max(cols, min(pow2_at_most(info.max_wg), 16)), lanes=0,
                          cols=cols, vec=vec, items=items, groups_per_cu=8, stream=1)
    return _gpu_cols(info, wg, a, b, cap)


def _onepass(info: Any) -> int:
    """GPUs finish split rows/columns in the same launch (the last group of each, behind an
    atomic ticket) where 64-bit accumulators can take part too; a second launch costs NVIDIA's
    driver 5-8 us."""
    return int(bool(getattr(info, "int64_atomics", False)))


def _gpu_rows(info: Any, wg: int, rows: int, b: int, cap: int) -> AxisConfig:
    """A lane per ~ROW_ELEMS_PER_LANE elements of a row, more lanes while the whole launch
    has fewer than MIN_WORK_ITEMS work-items; 4-wide loads only where every row starts
    aligned to them (b % 4 == 0: unaligned vloads cost up to 2.4x on the H200), else scalar
    loads four in flight. Fitted to an H200 sweep of 15 untuned shapes (geometric mean 1.13x
    the best of ~200 configs per shape, against 1.52x for the earlier rule;
    docs/logs/benchmarks-*.md,
    scripts/experiments/axis_gpu_sweep.py)."""
    vec = min(4, cap) if b % 4 == 0 else 1
    lanes = max(1, min(wg, pow2_at_least(-(-b // ROW_ELEMS_PER_LANE))))
    while rows * lanes < MIN_WORK_ITEMS and lanes < wg and lanes * vec < b:
        lanes *= 2
    warp = int(bool(getattr(info, "is_nvidia", False)) and 2 <= lanes <= 32)
    return AxisConfig(wg=wg, lanes=lanes, vec=vec, items=1 if vec > 1 else 4, groups_per_cu=8,
                      warp=warp, onepass=_onepass(info))


def _gpu_cols(info: Any, wg: int, r: int, inner: int, cap: int) -> AxisConfig:
    """Tiles of ~COL_TILE columns (2-wide loads where the row stride allows), widened while
    a group would have fewer than COL_ROWS_PER_LANE rows per work-item along the reduced axis;
    groups_per_cu 16 from 2^24 elements on, else 4 (fitted with the rows rule above: 1.15x the
    best per shape against 1.91x for the earlier rule); fewer than COL_ROWS_PER_LANE reduced
    rows: 8 groups a CU, 2 loads a step."""
    vec = min(2, cap) if inner % 2 == 0 else 1
    while wg * vec * 8 > info.local_mem and vec > 1:
        vec //= 2
    cols = max(1, min(wg, COL_TILE // vec, pow2_at_least(-(-inner // vec))))
    while cols < wg and (wg // cols) * COL_ROWS_PER_LANE > r:
        cols *= 2
    if inner <= NARROW and r >= COL_ROWS_PER_LANE:
        # tall and narrow (a few outputs): half as many work-items across as the row has
        # columns (each column's work-items read neighbouring rows' cells), scalar loads, 2 a
        # step, 8 groups a CU (H200 / H100, scripts/experiments/axis_gpu_sweep.py --wide:
        # 2000003x7 29.3 / 33.9 us against the tile rule's 31.4 / 35.7; 4194304x4 30.6 / 37.6
        # against 40.8 / 47.1; served on the H100 after: 32.9 and 36.8)
        return AxisConfig(wg=wg, lanes=0, cols=max(1, min(4, pow2_at_least(inner) // 2)),
                          vec=1, items=2, groups_per_cu=8, onepass=_onepass(info))
    if r < COL_ROWS_PER_LANE:
        # few reduced rows, many outputs (3 x 3000017 along axis 0): a group walks its units
        # one after another, each a memory round trip: twice the groups, fewer loads a step
        # (H100, scripts/experiments/axis_gpu_sweep.py --wide: 37.7 -> 26.6 us, torch 26.1)
        return AxisConfig(wg=wg, lanes=0, cols=cols, vec=vec, items=2, groups_per_cu=8,
                          onepass=_onepass(info))
    return AxisConfig(wg=wg, lanes=0, cols=cols, vec=vec, items=4,
                      groups_per_cu=16 if r * inner >= 1 << 24 else 4, onepass=_onepass(info))


def safest_axis_config(info: Any, layout: str) -> AxisConfig:
    """Scalar loads, small groups: when even the builtin config does not build."""
    wg = min(pow2_at_most(info.max_wg), 32)
    if layout == "cols":
        return AxisConfig(wg=wg, lanes=0, cols=wg, vec=1, items=1, groups_per_cu=4)
    return AxisConfig(wg=wg, lanes=1, vec=1, items=1, groups_per_cu=4)


#: the size class the health check vets the untuned axis configs at (2^10 x 2^6)
HEALTH_CLASS = (10, 6)


def untuned(info: Any, spec: OpSpec) -> list[tuple]:
    """What the runtime serves untuned for `spec` along rows and columns, as the health check
    vets it: (variant, config chain, size class, source hash, lane bytes)."""
    lane = spec.vector_element_bytes
    return [(f"{spec.op}/{spec.dtype}/{kind}",
             [builtin_axis_config(info, kind, 1 << HEALTH_CLASS[0], 1 << HEALTH_CLASS[1], lane),
              safest_axis_config(info, kind)], HEALTH_CLASS, source_hash(), lane)
            for kind in ("rows", "cols")]
