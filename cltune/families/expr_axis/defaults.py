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
    AxisExprConfig,
)
from cltune.families.expr_axis.kernel import AxisBuilt, build
from cltune.opencl.build import BuildError
from cltune.opencl.expression import ExprSpec

#: CPU columns: a work-item's accumulators (strip x items) are kept within this many bytes
#: (more spill: var's 32-byte accumulators at items=2 ran 1.3-3x slower on both CPU runtimes)
CPU_ACC_BYTES = 256


#: accumulator bytes per lane of a GPU rows config (registers; more spill)
GPU_ACC_BYTES = 64


def choose(info: Any, outer: int, r: int, inner: int, acc_size: int = 8) -> AxisExprConfig:
    """The config for reducing (outer, r, inner) along r on a device (`type`, `max_wg`) with
    accumulators of `acc_size` bytes. CPUs: rows a work-item each (1, 2 or 4 accumulators by
    length; 8 rows a group, 16 for argmin/argmax's 16-byte accumulators), columns a work-item
    per strip of 16 neighbouring outputs folding row after row (2 accumulators per output
    within CPU_ACC_BYTES). GPUs: rows a lane per 16 elements up to 256, columns up to 256
    neighbouring columns a group. Why, with the measurements behind each choice:
    docs/expressions.md, "The heuristic along an axis"."""
    cpu = getattr(info, "type", "gpu") == "cpu"
    cap = pow2_at_most(min(int(info.max_wg), MAX_WG))
    items = 1 if r < 64 else 2 if r < 1024 else 4
    if inner == 1:
        if cpu:  # 16-byte accumulators are argmin/argmax's (index, value): see above
            return AxisExprConfig("rows", min(cap, 16 if acc_size == 16 else 8), 1, items)
        wg = min(cap, 256)
        # a lane per 16 elements (the plain axis sums tuned on the H200: rows of 16 and of 4
        # one work-item each, of 64 8 lanes, of 256 16), 64 bytes of accumulators a lane
        items = max(1, min(4, GPU_ACC_BYTES // max(1, acc_size)))
        lanes = min(wg, pow2_at_most(max(1, r // 16)))
        return AxisExprConfig("rows", wg, lanes, items)
    if cpu:
        strip = min(16, pow2_at_most(inner))
        items = 2 if r >= 2 and strip * 2 * acc_size <= CPU_ACC_BYTES else 1
        return AxisExprConfig("cols", min(cap, 8), 1, items, strip)
    wg = min(cap, 256)
    cols = min(wg, pow2_at_least(inner))
    lanes = wg // cols
    while lanes > 1 and lanes * items > max(1, r):
        lanes //= 2
    return AxisExprConfig("cols", cols * lanes, lanes, items)


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
    cfg: AxisExprConfig | None = choose(info, outer, r, inner, spec.dtype_out.itemsize)
    while True:
        assert cfg is not None
        try:
            return build(ctx, dev, info, spec, cfg)
        except BuildError as e:
            cfg = _smaller(cfg) if "exceeds" in str(e) or "local memory" in str(e) else None
            if cfg is None:
                raise
