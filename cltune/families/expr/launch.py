"""Enqueue one config of an expression reduction: the launch plan, per-queue scratch, the
stage-1 / stage-2 (or single-pass) launches. Thread-safe: kernel arguments are shared state of
a build (several launchers can share one), so launches of one build hold its lock.

A warm call takes a prepared launch (plan, scratch, every fixed argument) for its queue, n and
index step: only the application's buffers and the result are set on each call, and offsets,
scalars and the start index when they change; the kernels are enqueued directly (pyopencl's
Kernel.__call__ sets every argument on every call).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.expr.config import ExprConfig
from cltune.families.expr.kernel import ExprBuilt, build
from cltune.opencl.expression import ExprSpec
from cltune.opencl.kernel_args import changed, set_scalar, set_value
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scratch import Scratch


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


class _Prepared:
    """One (queue, n, step kind) launch: sizes, scratch and the argument values last set."""

    __slots__ = ("b", "s", "p", "two", "g1", "l1", "g2", "nu", "bufs", "vals", "last1",
                 "last2", "partials", "fixed1", "fixed2")

    def __init__(self, b: ExprBuilt, s: Scratch, p: ExprPlan, cfg: ExprConfig) -> None:
        self.b, self.s, self.p = b, s, p
        self.two = not (p.groups == 1 or cfg.passes == 1)
        self.g1, self.l1, self.g2 = (p.groups * p.wg,), (p.wg,), (p.wg,)
        self.nu = nu = len(b.user_types)
        self.bufs = tuple(i for i, t in enumerate(b.user_types) if t is None)
        self.vals = tuple((i, t) for i, t in enumerate(b.user_types) if t is not None)
        self.partials = s.partials
        # the application's values (offsets, scalars) and start/step/res_off last set, per stage
        self.last1: list = [None] * (nu + 8)
        self.last2: list = [None] * (nu + 5)
        # stage 1: user..., start, step, n, chunk, partials, ticket, res, res_off
        self.fixed1 = ((nu + 2, np.int64(p.n)), (nu + 3, np.int64(p.chunk)),
                       (nu + 4, s.partials), (nu + 5, s.ticket))
        # stage 2: user..., n, partials, m, res, res_off
        self.fixed2 = ((nu, np.int64(p.n)), (nu + 1, s.partials), (nu + 2, np.uint32(p.groups)))

    def launch(self, queue: cl.CommandQueue, user_args: Sequence[object], start: int,
               step: int, res: cl.Buffer, res_off: int,
               wait_for: Sequence[cl.Event] | None) -> list[cl.Event]:
        with self.b.lock:
            return self._launch(queue, user_args, start, step, res, res_off, wait_for)

    def warm(self, queue: cl.CommandQueue, user_args: Sequence[object], res: cl.Buffer,
             wait_for: Sequence[cl.Event] | None) -> cl.Event:
        """`launch(queue, user_args, 0, 1, res, 0, wait_for)` on an in-order queue (the warm
        call of ReductionKernel.warm_call), returning the last event: where the build's last
        launch was this one's warm one, every argument but the application's and the result
        is still set (~0.2 us less than `launch`)."""
        b, bufs, vals = self.b, self.bufs, self.vals
        lock = b.lock
        lock.acquire()  # by hand: ~0.1 us less than `with`
        try:
            if b.owner.get("warm") is not self:
                ev = self._launch(queue, user_args, 0, 1, res, 0, wait_for)[-1]
                b.owner["warm"] = self
                return ev
            k = b.stage1
            last = self.last1
            for i in bufs:
                k.set_arg(i, user_args[i])
            for i, t in vals:
                a = user_args[i]
                if last[i] != a or a == 0 and type(a) is not int and changed(last[i], a):
                    set_scalar(k, i, t(a))
                    last[i] = a
            k.set_arg(self.nu + 6, res)
            ev = cl.enqueue_nd_range_kernel(queue, k, self.g1, self.l1, None, wait_for)
            if not self.two:
                return ev
            k = b.stage2
            last = self.last2
            for i in bufs:
                k.set_arg(i, user_args[i])
            for i, t in vals:
                a = user_args[i]
                if last[i] != a or a == 0 and type(a) is not int and changed(last[i], a):
                    set_scalar(k, i, t(a))
                    last[i] = a
            k.set_arg(self.nu + 3, res)
            return cl.enqueue_nd_range_kernel(queue, k, self.g2, self.g2, None, None)
        finally:
            lock.release()

    def _launch(self, queue: cl.CommandQueue, user_args: Sequence[object], start: int,
                step: int, res: cl.Buffer, res_off: int,
                wait_for: Sequence[cl.Event] | None) -> list[cl.Event]:
        """`launch` with the build's lock held."""
        b, s, nu, bufs, vals = self.b, self.s, self.nu, self.bufs, self.vals
        b.owner["warm"] = None  # arguments are set here: no launch's warm state holds
        if not s.in_order and s.last is not None:
            wait_for = [*(wait_for or ()), s.last]
        k = b.stage1
        last = self.last1
        owned = b.owner.get("s1") is self
        if not owned:  # another launch set this kernel last: every argument again
            for j, v in self.fixed1:
                set_value(k, j, v)
            b.owner["s1"] = self
        # the application's arguments (inline: this is the warm call's path): buffers on
        # every call (never kept, so never held alive), values when they changed
        for i in bufs:
            k.set_arg(i, user_args[i])
        for i, t in vals:
            a = user_args[i]
            if not owned or last[i] != a or (a == 0 and type(a) is not int
                                                and changed(last[i], a)):
                set_scalar(k, i, t(a))
                last[i] = a
        if not owned or last[nu] != start or last[nu + 1] != step:
            set_scalar(k, nu, np.int64(start))
            set_scalar(k, nu + 1, np.int64(step))
            last[nu], last[nu + 1] = start, step
        k.set_arg(nu + 6, res)
        if not owned or last[nu + 7] != res_off:
            set_scalar(k, nu + 7, np.int64(res_off))
            last[nu + 7] = res_off
        ev1 = cl.enqueue_nd_range_kernel(queue, k, self.g1, self.l1, None, wait_for)
        if not self.two:
            s.last = ev1
            return [ev1]
        k = b.stage2
        last = self.last2
        owned = b.owner.get("s2") is self
        if not owned:
            for j, v in self.fixed2:
                set_value(k, j, v)
            b.owner["s2"] = self
        for i in bufs:
            k.set_arg(i, user_args[i])
        for i, t in vals:
            a = user_args[i]
            if not owned or last[i] != a or (a == 0 and type(a) is not int
                                                and changed(last[i], a)):
                set_scalar(k, i, t(a))
                last[i] = a
        k.set_arg(nu + 3, res)
        if not owned or last[nu + 4] != res_off:
            set_scalar(k, nu + 4, np.int64(res_off))
            last[nu + 4] = res_off
        ev2 = cl.enqueue_nd_range_kernel(queue, k, self.g2, self.g2, None,
                                         None if s.in_order else [ev1])
        s.last = ev2
        return [ev1, ev2]


class ExprLauncher:
    """Launches one config of one spec on one device."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                 cfg: ExprConfig) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self._built: dict[bool, ExprBuilt] = {}
        self._scratch: dict[int, Scratch] = {}
        self._plans: dict[int, ExprPlan] = {}
        self._prepared: PreparedCalls = PreparedCalls(256)  # (queue, n, unit step) -> launch
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

    def _scratch_for(self, queue: cl.CommandQueue, groups: int) -> Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = Scratch(self.ctx, queue)
        need = max(1, groups) * self._item
        if s.capacity < need:
            s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, need)
            s.capacity = need
        return s

    def prepared(self, queue: cl.CommandQueue, n: int, unit_step: bool) -> _Prepared:
        key = (queue.int_ptr, n, unit_step)
        with self._lock:
            pr = self._prepared.get(key)
            if pr is not None and pr.partials is pr.s.partials:
                return pr
            p = self.plan(n)
            s = self._scratch_for(queue, p.groups)
            return self._prepared.keep(key, _Prepared(self.built(unit_step), s, p, self.cfg))

    def enqueue(self, queue: cl.CommandQueue, user_args: Sequence[object], start: int,
                step: int, n: int, res: cl.Buffer, res_off: int,
                wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """Reduce elements start, start+step, ... (n of them) into the result at
        `res` + `res_off` bytes; `user_args` are the kernel values of the application's
        arguments (each vector as base buffer and byte offset). Returns the kernel events."""
        pr = self._prepared.hit((queue.int_ptr, n, step == 1))
        if pr is None or pr.partials is not pr.s.partials:
            pr = self.prepared(queue, n, step == 1)
        return pr.launch(queue, user_args, start, step, res, res_off, wait_for)
