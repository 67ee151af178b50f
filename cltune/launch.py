"""Enqueue a built config on n elements: stage 1, then stage 2 (or the single-pass finish).

A `Launcher` belongs to one (context, device, op, config). It builds lazily (32-bit indices,
64-bit only for inputs that need them), keeps scratch (partials, the single-pass ticket) per
queue and grows it only when n grows, and caches plans per n. Enqueues are serialised by a lock
because OpenCL kernel arguments are shared state.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import pyopencl as cl

from .config import Config
from .devices import DeviceInfo
from .ops import OpSpec
from .plan import Plan, make_plan, needs_index64
from .program import Built, build


class _Scratch:
    """Per-queue scratch. On an out-of-order queue a launch waits for the previous one that
    used this scratch (`last`), so partials are never overwritten while still being read."""

    __slots__ = ("partials", "capacity", "ticket", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials: cl.Buffer | None = None
        self.capacity = 0
        self.ticket = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
        self.last: cl.Event | None = cl.enqueue_fill_buffer(queue, self.ticket, np.uint32(0),
                                                             0, 4)
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


class Launcher:
    """Launches one config; thread-safe."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec,
                 cfg: Config) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self._built: dict[bool, Built] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._plans: OrderedDict[int, Plan] = OrderedDict()
        self._lock = threading.RLock()
        self._args: dict[int, list[object]] = {}
        self._locals: dict[int, cl.LocalMemory] = {}
        self._dtypes: dict[int, list] = {}

    def built(self, index64: bool = False) -> Built:
        b = self._built.get(index64)
        if b is None:
            b = build(self.ctx, self.dev, self.info, self.spec, self.cfg, index64=index64)
            idx = np.uint64 if index64 else np.uint32
            two = [None, idx] * (2 if self.spec.op == "dot" else 1)
            for k, dts in ((b.stage1, [*two, idx, idx, None, None, None, None]),
                           (b.stage2, [None, np.uint32, None, None])):
                k.set_scalar_arg_dtypes(dts)
                self._dtypes[id(k)] = dts
            self._args[id(b.stage1)] = []
            self._args[id(b.stage2)] = []
            self._built[index64] = b
        return b

    def _set_args(self, kernel: cl.Kernel, args: list[object]) -> None:
        """Set only the arguments that changed since this kernel's last launch (the list also
        keeps the buffers alive: kernels hold no references to their arguments)."""
        last = self._args[id(kernel)]
        if len(last) != len(args):
            kernel.set_args(*args)
            self._args[id(kernel)] = list(args)
            return
        dtypes = self._dtypes[id(kernel)]
        for i, (a, b) in enumerate(zip(args, last, strict=True)):
            if a is not b and a != b:
                dt = dtypes[i]
                kernel.set_arg(i, a if dt is None else dt(a))
                last[i] = a

    def plan(self, n: int) -> Plan:
        p = self._plans.get(n)
        if p is None:
            p = make_plan(self.cfg, n, self.info.compute_units)
            self._plans[n] = p
            if len(self._plans) > 64:
                self._plans.popitem(last=False)
        return p

    def _scratch_for(self, queue: cl.CommandQueue, nbytes: int) -> _Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = _Scratch(self.ctx, queue)
        if s.capacity < nbytes:
            s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
            s.capacity = nbytes
        return s

    def enqueue(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, n: int, out: cl.Buffer,
                y: cl.Buffer | None = None, yoff: int = 0,
                wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """Reduce n elements of x (from element xoff) into out[0]; returns the kernel events."""
        plan = self.plan(n)
        idx64 = needs_index64(plan, max(xoff, yoff))
        b = self.built(idx64)
        m = plan.groups * b.partials_per_group
        with self._lock:
            s = self._scratch_for(queue, m * b.acc_itemsize)
            if not s.in_order and s.last is not None:
                wait_for = [*(wait_for or ()), s.last]
            args: list[object] = [x, xoff]
            if self.spec.op == "dot":
                args += [y, yoff]
            args += [n, plan.chunk, s.partials, self._local(b.local_elems * b.acc_itemsize),
                     s.ticket, out]
            self._set_args(b.stage1, args)
            ev1 = cl.enqueue_nd_range_kernel(queue, b.stage1, (plan.global_size,), (plan.wg,),
                                             wait_for=wait_for)
            if self.cfg.passes == 1:
                s.last = ev1
                return [ev1]
            self._set_args(b.stage2, [s.partials, m, out,
                                      self._local(self.cfg.wg * b.acc_itemsize)])
            ev2 = cl.enqueue_nd_range_kernel(queue, b.stage2, (self.cfg.wg,), (self.cfg.wg,),
                                             wait_for=None if s.in_order else [ev1])
            s.last = ev2
            return [ev1, ev2]

    def _local(self, nbytes: int) -> cl.LocalMemory:
        lm = self._locals.get(nbytes)
        if lm is None:
            lm = self._locals[nbytes] = cl.LocalMemory(nbytes)
        return lm
