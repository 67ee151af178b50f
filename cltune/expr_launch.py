"""Enqueue one config of an expression reduction: the launch plan, per-queue scratch, the
stage-1 / stage-2 (or single-pass) launches. Thread-safe: kernel arguments are shared state,
so launches of one build are serialised by a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .devices import DeviceInfo
from .expr_config import ExprConfig
from .expr_source import ExprBuilt, ExprSpec, build


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class ExprPlan:
    n: int
    groups: int
    wg: int
    chunk: int  # elements per unit (a work-group when strided, a work-item when contiguous)


def make_plan(cfg: ExprConfig, n: int, compute_units: int) -> ExprPlan:
    """groups_per_cu x compute units groups (one when 0), capped so that every unit has work."""
    if n <= 0:
        return ExprPlan(max(0, n), 1, cfg.wg, 0)
    per_unit = 1 if cfg.layout == "contiguous" else cfg.wg  # work-items per unit
    units_per_group = cfg.wg // per_unit
    block = per_unit * cfg.items
    groups_wanted = cfg.groups_per_cu * max(1, compute_units) if cfg.groups_per_cu else 1
    units = max(1, min(groups_wanted * units_per_group, _ceil_div(n, block)))
    chunk = _ceil_div(_ceil_div(n, units), block) * block
    units = _ceil_div(n, chunk)
    return ExprPlan(n, _ceil_div(units, units_per_group), cfg.wg, chunk)


class _Scratch:
    __slots__ = ("partials", "capacity", "ticket", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials: cl.Buffer | None = None
        self.capacity = 0
        self.ticket = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                hostbuf=np.zeros(1, np.uint32))
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


class ExprLauncher:
    """Launches one config of one spec on one device."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                 cfg: ExprConfig) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self._built: dict[bool, ExprBuilt] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._plans: dict[int, ExprPlan] = {}
        self._lock = threading.Lock()
        self._item = spec.dtype_out.itemsize

    def built(self, unit_step: bool = True) -> ExprBuilt:
        b = self._built.get(unit_step)
        if b is None:
            b = self._built[unit_step] = build(self.ctx, self.dev, self.info, self.spec,
                                               self.cfg, unit_step=unit_step)
        return b

    def plan(self, n: int) -> ExprPlan:
        p = self._plans.get(n)
        if p is None:
            if len(self._plans) > 256:
                self._plans.clear()
            p = self._plans[n] = make_plan(self.cfg, n, self.info.compute_units)
        return p

    def _scratch_for(self, queue: cl.CommandQueue, groups: int) -> _Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = _Scratch(self.ctx, queue)
        need = max(1, groups) * self._item
        if s.capacity < need:
            s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, need)
            s.capacity = need
        return s

    def enqueue(self, queue: cl.CommandQueue, user_args: Sequence[object], start: int,
                step: int, n: int, res: cl.Buffer, res_off: int,
                wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """Reduce elements start, start+step, ... (n of them) into the result at
        `res` + `res_off` bytes; `user_args` are the kernel values of the application's
        arguments (each vector as base buffer and byte offset). Returns the kernel events."""
        p = self.plan(n)
        b = self.built(step == 1)
        wg = p.wg
        with self._lock:
            s = self._scratch_for(queue, p.groups)
            if not s.in_order and s.last is not None:
                wait_for = [*(wait_for or ()), s.last]
            ev1 = b.stage1(queue, (p.groups * wg,), (wg,), *user_args, start, step, n, p.chunk,
                           s.partials, s.ticket, res, res_off, wait_for=wait_for)
            if p.groups == 1 or self.cfg.passes == 1:
                s.last = ev1
                return [ev1]
            ev2 = b.stage2(queue, (wg,), (wg,), *user_args, n, s.partials, p.groups, res,
                           res_off, wait_for=None if s.in_order else [ev1])
            s.last = ev2
            return [ev1, ev2]
