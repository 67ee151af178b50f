"""Enqueue a built expression along an axis: the launch plan of a view (groups, the split of
long reduced axes, chunks), per-queue scratch, and stage 1 then (for a split axis) stage 2."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.families.expr_axis.config import MIN_ROWS_PER_ITEM, AxisExprConfig


@dataclass(frozen=True)
class AxisPlan:
    """The launch of one call: `groups` work-groups across outputs, `split` along the axis
    (each `chunk` rows; split > 1 adds the combining second kernel)."""

    groups: int
    split: int
    chunk: int


#: CPUs: a reduction of at most this many elements is not split along its axis, the second
#: launch costing more than the groups it adds (mean/var of float32, builtin configs, split as
#: planned against unsplit, this 2-core host: 300x300 along 0 1.30-2.02x faster unsplit on both
#: runtimes, 100x1000 along 1 1.11-1.25x, 1000x100 along 0 1.18-2.29x on Debian's PoCL and
#: 0.92-0.93x on Intel's; from 4096x64 on Intel's split wins, up to 2x)
CPU_MAX_UNSPLIT = 1 << 17

#: the most steps one accumulator folds in a launch: longer axes are split (an accumulator that
#: does not restart, kernel.wide_accumulator, keeps its rounding below float32's this way)
MAX_STEPS = 1 << 24


def axis_plan(cfg: AxisExprConfig, compute_units: int, outer: int, r: int,
              inner: int, max_unsplit: int = 0) -> AxisPlan:
    """Groups across the outputs; when they are fewer than cfg.groups_per_cu per compute
    unit, the axis is split over groups too, as long as every work-item keeps
    MIN_ROWS_PER_ITEM rows or more and the view holds more than `max_unsplit` elements; and
    wherever an accumulator would fold more than MAX_STEPS steps."""
    outputs = outer * inner
    groups = max(1, -(-outputs // cfg.outputs_per_group))
    want = cfg.groups_per_cu * max(1, compute_units)
    split = 1
    if groups < want and r > 0 and outputs * r > max_unsplit:
        per_group = cfg.lanes * cfg.items * MIN_ROWS_PER_ITEM  # the fewest rows worth a group
        split = max(1, min(-(-want // groups), r // per_group))
    block = cfg.lanes * cfg.items
    split = max(split, -(-r // (MAX_STEPS * block)))
    chunk = -(-r // split) if r else 0
    if split > 1:
        chunk = -(-chunk // block) * block
        split = -(-r // chunk)
    return AxisPlan(groups, split, chunk)


def device_plan(cfg: AxisExprConfig, info: Any, outer: int, r: int, inner: int) -> AxisPlan:
    """axis_plan on the device `info` describes (CPUs: CPU_MAX_UNSPLIT)."""
    return axis_plan(cfg, info.compute_units, outer, r, inner,
                     CPU_MAX_UNSPLIT if info.type == "cpu" else 0)


class AxisScratch:
    """Per-queue scratch: the partials of split axes and the last launch that used them."""

    __slots__ = ("partials", "capacity", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
        self.capacity = 64
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


def enqueue(queue: cl.CommandQueue, s: AxisScratch, b: Any, p: AxisPlan,
            user_args: Sequence[object], outer: int, r: int, inner: int, res: cl.Buffer,
            res_off: int, itemsize: int,
            wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
    """Stage 1 of build `b` under plan `p` (and stage 2 where the axis is split) on `queue`,
    with the queue's scratch `s` (the caller holds the build's lock: kernel arguments are
    shared state). Returns the kernel events."""
    wg = b.config.wg
    if p.split > 1:
        need = p.split * outer * inner * itemsize
        if s.capacity < need:
            s.partials = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, need)
            s.capacity = need
    if not s.in_order and s.last is not None:
        wait_for = [*(wait_for or ()), s.last]
    # every argument is set here: no prepared launch (api.AxisReducer.warm) holds them now
    b.stage1._clt_owner = b.stage2._clt_owner = None
    ev = b.stage1(queue, (p.groups * wg, p.split), (wg, 1), *user_args, r, outer, inner,
                  p.chunk, s.partials, res, res_off, wait_for=wait_for)
    evs = [ev]
    if p.split > 1:
        n2 = -(-(outer * inner) // wg) * wg
        evs.append(b.stage2(queue, (n2,), (wg,), *user_args, r, outer, inner, p.split,
                            s.partials, res, res_off,
                            wait_for=None if s.in_order else [ev]))
    s.last = evs[-1]
    return evs
