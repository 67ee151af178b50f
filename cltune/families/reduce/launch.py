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

from cltune.core.ops import OpSpec
from cltune.device.info import DeviceInfo
from cltune.families.reduce.config import Config
from cltune.families.reduce.kernel import STAGE2, STAGE2_DTYPES, Built, build, stage1_args
from cltune.families.reduce.plan import Plan, make_plan, needs_index64
from cltune.opencl.kernel_args import set_scalar
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scratch import Scratch

_S2_OUT = STAGE2.out
SMALL_OFFSET = 1 << 30  # offsets below this share one prepared launch per (queue, n)
_ANY_OFFSET = 1 << 62  # larger offsets share another, with 64-bit indices

# Built kernels are shared by every Launcher of the same (context, op, config): which prepared
# launch last set a kernel's arguments is therefore tracked on the build (`Built.owners`), and
# launches are serialised by one lock (argument state lives in the kernel object).
_LAUNCH_LOCK = threading.Lock()  # never taken twice: launch() and prepared() call no locked code


def _forget(p: Prepared) -> None:
    """Make kernels whose arguments were set by `p` set all of them on their next launch."""
    owners = p.built.owners
    for k, owner in list(owners.items()):
        if owner is p:  # pop: clear_caches() may drop `p` while another thread launches
            owners.pop(k, None)


class Prepared:
    """A launch ready to enqueue: kernels, sizes, scratch and the current argument values."""

    __slots__ = ("built", "stage1", "stage2", "scratch", "gsize", "lsize", "args1", "args2",
                 "idx", "slots", "owners", "ix", "iout", "xoff")
    # args1 / args2: the current argument values, in the order of reduce/kernel.py's slots

    def __init__(self, built: Built, stage2: bool, scratch: Scratch, gsize: tuple[int],
                 lsize: tuple[int], args1: list, args2: list | None, idx: type,
                 slots: tuple) -> None:
        self.built, self.scratch, self.owners = built, scratch, built.owners
        self.stage1, self.stage2 = built.stage1, built.stage2 if stage2 else None
        self.gsize, self.lsize, self.args1, self.args2, self.idx = (gsize, lsize, args1, args2,
                                                                    idx)
        self.slots = slots  # the stage-1 slots every launch sets: x, xoff, out, y, yoff
        self.ix, self.iout, self.xoff = slots[0], slots[2], args1[slots[1]]

    def launch1(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, out: cl.Buffer,
                wait_for: Sequence[cl.Event] | None) -> cl.Event:
        """`launch` of one input (no y), its last event: the hot path's. While this launch
        set stage 1's arguments last at this offset, only x and out are set (the lock taken
        and given by hand: ~0.1 us less than `with`)."""
        lock = _LAUNCH_LOCK
        lock.acquire()
        try:
            k1 = self.stage1
            if (self.stage2 is None and self.scratch.in_order and xoff == self.xoff
                    and self.owners.get("stage1") is self):
                k1.set_arg(self.ix, x)
                k1.set_arg(self.iout, out)
                return cl.enqueue_nd_range_kernel(queue, k1, self.gsize, self.lsize, None,
                                                  wait_for)
        finally:
            lock.release()
        return self.launch(queue, x, xoff, out, None, 0, wait_for)[-1]

    def launch(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, out: cl.Buffer,
               y: cl.Buffer | None, yoff: int, wait_for: Sequence[cl.Event] | None,
               ) -> list[cl.Event]:
        """Enqueue on `queue` (the one this launch was prepared for); returns the events. The
        warm case (one input at the same offset, kernels last set by this launch) sets only
        the input and result: the statements here are most of the host cost of a call."""
        with _LAUNCH_LOCK:
            s = self.scratch
            if s.last is not None:  # out-of-order queue: after the last user of this scratch
                wait_for = [*(wait_for or ()), s.last]
            k1, owners = self.stage1, self.owners
            if y is None and xoff == self.xoff and owners.get("stage1") is self:
                k1.set_arg(self.ix, x)
                k1.set_arg(self.iout, out)
            else:
                self._set_stage1(x, xoff, out, y, yoff)
            # positional (keywords cost the compiled binding ~0.15 us a launch)
            ev1 = cl.enqueue_nd_range_kernel(queue, k1, self.gsize, self.lsize, None, wait_for)
            k2 = self.stage2
            if k2 is None:
                if not s.in_order:
                    s.last = ev1
                return [ev1]
            if owners.get("stage2") is self:
                k2.set_arg(_S2_OUT, out)
            else:
                a2 = self.args2
                a2[_S2_OUT] = out
                k2.set_args(*a2)
                a2[_S2_OUT] = None
                owners["stage2"] = self
            ev2 = cl.enqueue_nd_range_kernel(queue, k2, self.lsize, self.lsize, None,
                                             None if s.in_order else [ev1])
            if not s.in_order:
                s.last = ev2
            return [ev1, ev2]

    def _set_stage1(self, x: cl.Buffer, xoff: int, out: cl.Buffer, y: cl.Buffer | None,
                    yoff: int) -> None:
        """All of stage 1's arguments when another launch set them last, else the buffers and
        the offsets that changed."""
        k1, a = self.stage1, self.args1
        ix, ixoff, iout, iy, iyoff = self.slots
        if self.owners.get("stage1") is not self:  # the kernel last ran another plan
            a[ix], a[ixoff], a[iout] = x, xoff, out
            if y is not None:
                a[iy], a[iyoff] = y, yoff
            k1.set_args(*a)
            self.owners["stage1"] = self
        else:
            k1.set_arg(ix, x)
            k1.set_arg(iout, out)
            if a[ixoff] != xoff:
                set_scalar(k1, ixoff, self.idx(xoff))
                a[ixoff] = xoff
            if y is not None:
                k1.set_arg(iy, y)
                if a[iyoff] != yoff:
                    set_scalar(k1, iyoff, self.idx(yoff))
                    a[iyoff] = yoff
        # the enqueued command holds its buffers; we must not: a prepared launch that kept the
        # caller's input alive pinned one input per (reducer, n) (GBs on a device)
        a[ix] = a[iout] = None
        if y is not None:
            a[iy] = None
        self.xoff = xoff


class Launcher:
    """Launches one config; thread-safe."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec,
                 cfg: Config) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self._built: dict[bool, Built] = {}
        self._scratch: dict[int, Scratch] = {}
        self._plans: OrderedDict[int, Plan] = OrderedDict()
        self._lock = _LAUNCH_LOCK
        # (queue, n, big) -> prepared launch; a dropped one stops owning its kernels' arguments
        self._prepared: PreparedCalls = PreparedCalls(256, on_drop=_forget)
        self._locals: dict[int, cl.LocalMemory] = {}
        self._s1 = stage1_args(spec)
        s1 = self._s1  # the slots every launch sets, resolved once (the warm path is ~8 us)
        self._slots = (s1.x, s1.xoff, s1.out, getattr(s1, "y", None) if spec.n_inputs == 2
                       else None, getattr(s1, "yoff", None) if spec.n_inputs == 2 else None)

    def built(self, index64: bool = False) -> Built:
        b = self._built.get(index64)
        if b is None:
            b = build(self.ctx, self.dev, self.info, self.spec, self.cfg, index64=index64)
            b.stage1.set_scalar_arg_dtypes(
                self._s1.scalar_dtypes(np.uint64 if index64 else np.uint32))
            b.stage2.set_scalar_arg_dtypes(STAGE2_DTYPES)
            self._built[index64] = b
        return b

    def plan(self, n: int) -> Plan:
        p = self._plans.get(n)
        if p is None:
            p = make_plan(self.cfg, n, self.info.compute_units)
            self._plans[n] = p
            if len(self._plans) > 64:
                self._plans.popitem(last=False)
        return p

    def _scratch_for(self, queue: cl.CommandQueue, nbytes: int) -> Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = Scratch(self.ctx, queue)
        if s.capacity < nbytes:
            # zeroed once at creation: single-pass builds exchange partials with atomics, and
            # an atomic store reads the old bits (Oclgrind: uninitialised otherwise)
            s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                   hostbuf=np.zeros(nbytes, np.uint8))
            s.capacity = nbytes
        return s

    def enqueue(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, n: int, out: cl.Buffer,
                y: cl.Buffer | None = None, yoff: int = 0,
                wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """Reduce n elements of x (from element xoff) into out[0]; returns the kernel events.

        Warm calls take a prepared launch (plan, kernels, scratch, fixed arguments) for this
        queue and n; only the input, result and changed offsets are set on each call."""
        big = xoff >= SMALL_OFFSET or yoff >= SMALL_OFFSET
        p = self._prepared.get((queue.int_ptr, n, big)) or self.prepared(queue, n, big)
        return p.launch(queue, x, xoff, out, y, yoff, wait_for)

    def prepared(self, queue: cl.CommandQueue, n: int, big: bool = False) -> Prepared:
        """The prepared launch for (queue, n) and offsets below SMALL_OFFSET (big: any offset,
        64-bit indices); a caller may keep it and call its `launch` while offsets stay so."""
        with self._lock:
            key = (queue.int_ptr, n, big)
            p = self._prepared.get(key)
            if p is None:
                p = self._prepared.keep(key, self._prepare(queue, n, _ANY_OFFSET if big
                                                           else SMALL_OFFSET))
            return p

    def _prepare(self, queue: cl.CommandQueue, n: int, offset_bound: int) -> Prepared:
        plan = self.plan(n)
        idx64 = needs_index64(plan, offset_bound)
        b = self.built(idx64)
        m = plan.groups * b.partials_per_group
        s = self._scratch_for(queue, m * b.acc_itemsize)
        # the partials buffer may have grown: launches prepared for other n must re-set it
        s1 = self._s1
        for other in self._prepared.values():
            if other.scratch is s and other.args1[s1.partials] is not s.partials:
                other.args1[s1.partials] = s.partials
                if other.args2 is not None:
                    other.args2[STAGE2.partials] = s.partials
                _forget(other)
        values = {"x": None, "xoff": 0, "y": None, "yoff": 0, "n": n, "chunk": plan.chunk,
                  "partials": s.partials,
                  "tile": self._local(b.local_elems * b.acc_itemsize), "ticket": s.ticket,
                  "out": None}
        args1: list[object] = [values[name] for name in s1.names]
        args2 = None
        if self.cfg.passes == 2:
            v2 = {"partials": s.partials, "m": m, "out": None,
                  "tile": self._local(self.cfg.wg * b.acc_itemsize)}
            args2 = [v2[name] for name in STAGE2.names]
        return Prepared(b, args2 is not None, s, (plan.global_size,), (plan.wg,), args1, args2,
                         np.uint64 if idx64 else np.uint32, self._slots)

    def _local(self, nbytes: int) -> cl.LocalMemory:
        lm = self._locals.get(nbytes)
        if lm is None:
            lm = self._locals[nbytes] = cl.LocalMemory(nbytes)
        return lm
