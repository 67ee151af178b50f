"""The `builtin` level for the axis family: a config per layout and shape derived from the
device's limits, for devices (or shapes) never tuned.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152, is_nvidia=True)
    >>> builtin_axis_config(gpu, "rows", 1 << 20, 16).short()
    'rows wg256 L4 v4 i1 g8 warp'
"""

from __future__ import annotations

from typing import Any

from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.kernel import source_hash

#: CPUs, strided axis: vectors per work-item's strip of columns. Strips of 4096 columns
#: (256 x 16) kept 32 KiB of double accumulators per work-item and left few work-items on
#: shapes of few rows; 64 x 16 measured best or near it on both CPU runtimes (2026-12-03)
CPU_STRIP_VECTORS = 64


def builtin_axis_config(info: Any, layout: str, a: int, b: int,
                        element_bytes: int = 8) -> AxisConfig:
    """rows/segs: a rows (segments) of mean length b; cols: a reduced rows of b columns.

    GPUs: rows get a lane per vector up to a work-group per row, so that neighbouring lanes
    load neighbouring vectors (warp shuffles combine up to 32 lanes on NVIDIA); columns get
    one work-item per vector of columns. CPUs: a work-item per row (vectorised along the
    row); columns are streamed row after row, 8 rows a pass, in strips of up to 1024
    columns (`stream`, as numpy does). Long rows and columns are split over groups by
    groups_per_cu. Vectors stay within the device's restriction (`DeviceInfo.vector_cap`)
    for lanes of `element_bytes`."""
    cap = info.vector_cap(element_bytes) if hasattr(info, "vector_cap") else 16
    cpu = info.type == "cpu"
    wg = min(pow2_at_most(info.max_wg), 8 if cpu else 256)
    if layout in ("rows", "segs"):
        vec = min(16 if cpu else 4, pow2_at_most(b), cap)
        if cpu:  # up to 8 vectors in flight: as many as a row has (docs/benchmarks.md)
            items = min(8, pow2_at_most(max(1, b // vec)))
            return AxisConfig(wg=wg, lanes=1, vec=vec, items=items, groups_per_cu=8)
        lanes = min(wg, pow2_at_least(-(-b // vec)))
        warp = int(bool(getattr(info, "is_nvidia", False)) and 2 <= lanes <= 32)
        return AxisConfig(wg=wg, lanes=lanes, vec=vec, items=2 if b >= 2 * lanes * vec else 1,
                          groups_per_cu=8, warp=warp)
    if cpu:  # stream strips of up to 1024 columns, 8 rows a pass (docs/benchmarks.md)
        vec = min(16, pow2_at_most(b), cap)
        cols = min(CPU_STRIP_VECTORS, pow2_at_least(-(-b // vec)))
        return AxisConfig(wg=max(cols, min(pow2_at_most(info.max_wg), 16)), lanes=0,
                          cols=cols, vec=vec, items=8, groups_per_cu=8, stream=1)
    vec = min(4, pow2_at_most(b), cap)
    while wg * vec * 8 > info.local_mem and vec > 1:
        vec //= 2
    cols = min(wg, pow2_at_least(-(-b // vec)))
    return AxisConfig(wg=wg, lanes=0, cols=cols, vec=vec, items=2, groups_per_cu=8)


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
