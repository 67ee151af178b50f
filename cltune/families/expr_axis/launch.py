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
    (each `chunk` rows; split > 1 adds the combining second kernel, whose work-items of an
    output are `lanes2`)."""

    groups: int
    split: int
    chunk: int
    lanes2: int = 1

    def stage2_sizes(self, wg: int, nout: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The global and local sizes of stage 2 for `nout` outputs and work-groups of `wg`:
        (wg / lanes2) outputs a group, lanes2 work-items each."""
        per = max(1, wg // self.lanes2)
        return (-(-nout // per) * per, self.lanes2), (per, self.lanes2)


#: CPUs: a reduction of at most this many elements is not split along its axis, the second
#: launch costing more than the groups it adds (mean/var of float32, builtin configs, split as
#: planned against unsplit, this 2-core host: 300x300 along 0 1.30-2.02x faster unsplit on both
#: runtimes, 100x1000 along 1 1.11-1.25x, 1000x100 along 0 1.18-2.29x on Debian's PoCL and
#: 0.92-0.93x on Intel's; from 4096x64 on Intel's split wins, up to 2x)
CPU_MAX_UNSPLIT = 1 << 17

#: the most steps one accumulator folds in a launch: longer axes are split (an accumulator that
#: does not restart, kernel.wide_accumulator, keeps its rounding below float32's this way)
MAX_STEPS = 1 << 24

#: GPUs, rows: a split leaves a work-item at least this many elements of a row (columns keep
#: config.MIN_ROWS_PER_ITEM): few long rows fill the device. H100, mean/var/argmax of
#: 8x1048576, 4x2000003, 1x4194304 along rows: 16 within 3 % of the best of 4..64 with stage
#: 2's lanes; tall-narrow columns ran best at 64 (2000003x7 var 38.2 us against 43.1 at 16).
#: scripts/experiments/stats_axis_skinny.py, docs/logs/benchmarks-*.md "Statistics along skinny
#: shapes"
GPU_MIN_ROW_ELEMS_PER_ITEM = 16

#: GPUs: stage 2 gives an output lanes (powers of two up to the work-group) while outputs x
#: lanes stay within this: each lane folds every lanes-th partial, a tree in __local memory
#: combines them. A work-item an output folded the 512-2048 partials of a tall-narrow
#: block's few outputs one after another: 1048576x8 float32 mean along axis 0 took 115 us
#: on the H100, 28.8 us with 256 lanes (torch 24.8)
STAGE2_ITEMS = 1 << 14


def axis_plan(cfg: AxisExprConfig, compute_units: int, outer: int, r: int,
              inner: int, max_unsplit: int = 0, min_rows: int = MIN_ROWS_PER_ITEM,
              stage2_items: int = 0) -> AxisPlan:
    """Groups across the outputs; when they are fewer than cfg.groups_per_cu per compute
    unit, the axis is split over groups too, as long as every work-item keeps `min_rows`
    rows or more and the view holds more than `max_unsplit` elements; and wherever an
    accumulator would fold more than MAX_STEPS steps. Stage 2 gives each output up to
    cfg.wg lanes (powers of two, at most the split) while outputs x lanes stay within
    `stage2_items` (0: a work-item an output)."""
    outputs = outer * inner
    if cfg.streamed:  # a work-item a strip of one outer block
        groups = max(1, -(-(outer * -(-inner // cfg.strip)) // cfg.wg))
    else:
        groups = max(1, -(-outputs // cfg.outputs_per_group))
    want = cfg.groups_per_cu * max(1, compute_units)
    split = 1
    if groups < want and r > 0 and outputs * r > max_unsplit:
        per_group = cfg.lanes * cfg.items * min_rows  # the fewest rows worth a group
        split = max(1, min(-(-want // groups), r // per_group))
    block = cfg.lanes * cfg.items
    split = max(split, -(-r // (MAX_STEPS * block)))
    chunk = -(-r // split) if r else 0
    if split > 1:
        chunk = -(-chunk // block) * block
        split = -(-r // chunk)
    lanes2 = 1
    while (split > 1 and lanes2 * 2 <= min(split, cfg.wg)
           and outputs * lanes2 * 2 <= stage2_items):
        lanes2 *= 2
    return AxisPlan(groups, split, chunk, lanes2)


def device_plan(cfg: AxisExprConfig, info: Any, outer: int, r: int, inner: int) -> AxisPlan:
    """axis_plan on the device `info` describes (CPUs: CPU_MAX_UNSPLIT, a work-item an
    output in stage 2; GPUs: GPU_MIN_ROW_ELEMS_PER_ITEM along rows, STAGE2_ITEMS)."""
    if info.type == "cpu":
        return axis_plan(cfg, info.compute_units, outer, r, inner, CPU_MAX_UNSPLIT)
    min_rows = GPU_MIN_ROW_ELEMS_PER_ITEM if cfg.layout == "rows" else MIN_ROWS_PER_ITEM
    return axis_plan(cfg, info.compute_units, outer, r, inner, 0, min_rows, STAGE2_ITEMS)


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
        g2, l2 = p.stage2_sizes(wg, outer * inner)
        evs.append(b.stage2(queue, g2, l2, *user_args, r, outer, inner, p.split,
                            s.partials, res, res_off,
                            wait_for=None if s.in_order else [ev]))
    s.last = evs[-1]
    return evs
