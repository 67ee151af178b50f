"""Enqueue a built ManyConfig on a list of arrays: the table of each launch (group prefixes,
offsets, lengths; uploaded once per layout and kept), scratch per queue, and the launches of
kernels/many.cl in chunks of `slots` arrays into one result buffer.

A `ManyLauncher` belongs to one (context, device, variant, config) and is thread-safe: kernel
arguments are state shared by everyone using a build, so launches hold one lock.

A warm call of the same layout changes few arguments: the arrays' buffers and `out` (the
application's: set on every launch and never kept, so a caller's memory is never pinned).
`ManyArgs` keeps our own objects (the launch's table, the partials, the dummy of unused
slots, the local tile), compares them by identity (a kept buffer is alive, so its handle
cannot have been reused) and the scalars by value, and sets only what changed; unused slots
hold the dummy, and only the slots that held an array last time are set back to it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.many.config import ManyConfig
from cltune.families.many.family import ManyVariant
from cltune.families.many.kernel import FIN_ARGS, ManyBuilt, build, many_args
from cltune.opencl.kernel_args import KernelArgs, set_scalar
from cltune.opencl.prepared import PreparedCalls

#: element indices past this need the 64-bit index build
IDX32_LIMIT = (1 << 32) - (1 << 20)
#: table layouts kept per launcher (an application reducing the same arrays every step hits)
MAX_LAYOUTS = 64
_LOCK = threading.RLock()

#: (buffer, element offset, elements): one array of a call
Piece = tuple[cl.Buffer, int, int]


@dataclass(frozen=True, eq=False)
class Part:
    """One launch: `count` arrays from `start`, its table on the device, its group count,
    where its partials start, and whether any array spans more than one group; the global
    sizes of its launches (`gsize`, the finishing one's `fsize`) and the local one."""

    start: int
    count: int
    meta: cl.Buffer
    groups: int
    pbase: int
    split: bool
    gsize: tuple[int]
    fsize: tuple[int]
    lsize: tuple[int]


@dataclass(frozen=True, eq=False)
class Layout:
    parts: tuple[Part, ...]
    partials: int  # partials of every launch together
    index64: bool


def groups_of(cfg: ManyConfig, length: int) -> int:
    """Work-groups an array of `length` takes (an empty one: one, which writes the identity)."""
    return max(1, -(-length // cfg.chunk))


def table(cfg: ManyConfig, offsets: Sequence[int], lengths: Sequence[int],
          dtype: type) -> tuple[np.ndarray, int, bool]:
    """kernels/many.cl's `meta` for one launch: k + 1 group prefixes, k offsets, k lengths;
    with the group count and whether an array spans more than one group."""
    g = np.array([groups_of(cfg, n) for n in lengths], np.int64)
    first = np.concatenate([[0], np.cumsum(g)])
    meta = np.concatenate([first, np.asarray(offsets, np.int64),
                           np.asarray(lengths, np.int64)]).astype(dtype)
    return meta, int(first[-1]), bool((g > 1).any())


#: where a build's ManyArgs is kept: on its kernel (as cltune.opencl.kernel_args.setter does)
_ATTR = "_cltune_many_args"


class _Kernel:
    """What one kernel was last given: our buffers by identity, scalars by value."""

    __slots__ = ("k", "meta", "count", "partials", "pbase", "obase", "tile")

    def __init__(self, k: cl.Kernel) -> None:
        self.k = k
        self.meta = self.count = self.partials = self.pbase = self.obase = self.tile = None


class ManyArgs:
    """Launches of one build's two kernels (clt_many, clt_many_fin) that set only the
    arguments that changed since that build's last launch; one per kernel object (`args_of`),
    so launchers sharing a build share it. Callers hold the lock."""

    __slots__ = ("many", "fin", "slots", "idx", "acc_bytes", "dummy", "tile", "filled", "a",
                 "f")

    def __init__(self, ctx: cl.Context, built: ManyBuilt) -> None:
        self.many, self.fin = _Kernel(built.many), _Kernel(built.fin)
        self.slots = built.config.slots
        self.idx = np.uint64 if built.index64 else np.uint32
        self.acc_bytes = built.acc_dtype.itemsize
        self.dummy = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, 64)  # what unused slots point at
        self.tile = cl.LocalMemory(max(1, built.tile_bytes))
        self.filled = self.slots  # slots from here on hold the dummy (none, before a launch)
        self.a, self.f = many_args(self.slots), FIN_ARGS

    def _common(self, s: _Kernel, names: KernelArgs, meta: cl.Buffer, count: int,
                partials: cl.Buffer, pbase: int, out: cl.Buffer, obase: int) -> None:
        k = s.k
        if s.meta is not meta:
            k.set_arg(names.meta, meta)
            s.meta = meta
        if s.count != count:
            set_scalar(k, names.k, np.uint32(count))
            s.count = count
        if s.partials is not partials:
            k.set_arg(names.partials, partials)
            s.partials = partials
        if s.pbase != pbase:
            set_scalar(k, names.pbase, self.idx(pbase))
            s.pbase = pbase
        k.set_arg(names.out, out)
        if s.obase != obase:
            set_scalar(k, names.obase, np.uint32(obase))
            s.obase = obase
        if s.tile is not self.tile:
            k.set_arg(names.tile, self.tile)
            s.tile = self.tile

    def launch_many(self, queue: cl.CommandQueue, gsize: tuple[int], lsize: tuple[int],
                    bufs: Sequence[cl.Buffer | None], start: int, count: int, meta: cl.Buffer,
                    partials: cl.Buffer, pbase: int, out: cl.Buffer, obase: int,
                    wait_for: Sequence[cl.Event] | None) -> cl.Event:
        """clt_many on bufs[start:start + count] (the slots past them: the dummy)."""
        s = self.many
        set_arg = s.k.set_arg
        filled = self.filled
        self.filled = max(filled, count)  # until the dummies are back (a failed set_arg)
        for i, b in enumerate(bufs[start:start + count]):
            set_arg(i, b)
        if filled > count:
            dummy = self.dummy
            for i in range(count, filled):
                set_arg(i, dummy)
        self.filled = count
        self._common(s, self.a, meta, count, partials, pbase, out, obase)
        # positional (keywords cost the compiled binding ~0.15 us a launch)
        return cl.enqueue_nd_range_kernel(queue, s.k, gsize, lsize, None, wait_for)

    def launch_fin(self, queue: cl.CommandQueue, gsize: tuple[int], lsize: tuple[int],
                   meta: cl.Buffer, count: int, partials: cl.Buffer, pbase: int,
                   out: cl.Buffer, obase: int, wait_for: Sequence[cl.Event] | None,
                   ) -> cl.Event:
        """clt_many_fin: the arrays of more than one group combine their partials."""
        self._common(self.fin, self.f, meta, count, partials, pbase, out, obase)
        return cl.enqueue_nd_range_kernel(queue, self.fin.k, gsize, lsize, None, wait_for)


def args_of(ctx: cl.Context, built: ManyBuilt) -> ManyArgs:
    """The ManyArgs of a build's kernels, made on first use (under the lock)."""
    a = getattr(built.many, _ATTR, None)
    if a is None:
        a = ManyArgs(ctx, built)
        setattr(built.many, _ATTR, a)
    return a


class _Scratch:
    """Per-queue partials; on an out-of-order queue a launch waits for the previous one
    that used them (`last`)."""

    __slots__ = ("partials", "capacity", "last", "in_order")

    def __init__(self, queue: cl.CommandQueue) -> None:
        self.partials: cl.Buffer | None = None
        self.capacity = 0
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


class ManyLauncher:
    """Launches one ManyConfig on lists of arrays; thread-safe."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: ManyVariant,
                 cfg: ManyConfig) -> None:
        self.ctx, self.dev, self.info, self.variant, self.cfg = ctx, dev, info, variant, cfg
        self._built: dict[bool, ManyBuilt] = {}
        self._args: dict[bool, ManyArgs] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._layouts: PreparedCalls = PreparedCalls(MAX_LAYOUTS)

    def built(self, index64: bool = False) -> ManyBuilt:
        b = self._built.get(index64)
        if b is None:
            b = build(self.ctx, self.dev, self.info, self.variant, self.cfg, index64=index64)
            with _LOCK:
                self._args[index64] = args_of(self.ctx, b)
                self._built[index64] = b
        return b

    def layout(self, offsets: tuple[int, ...], lengths: tuple[int, ...]) -> Layout:
        """The launches of a call with these offsets and lengths (tables uploaded once)."""
        key = (offsets, lengths)
        hit = self._layouts.hit(key)
        if hit is not None:
            return hit
        index64 = any(o + n > IDX32_LIMIT for o, n in zip(offsets, lengths, strict=True))
        dtype = np.uint64 if index64 else np.uint32
        parts, pbase, K, wg = [], 0, self.cfg.slots, self.cfg.wg
        for s in range(0, len(lengths), K):
            meta, groups, split = table(self.cfg, offsets[s:s + K], lengths[s:s + K], dtype)
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=meta)
            count = min(K, len(lengths) - s)
            parts.append(Part(s, count, buf, groups, pbase, split, (groups * wg,),
                              (count * wg,), (wg,)))
            pbase += groups if split else 0
        lay = Layout(tuple(parts), pbase, index64 or pbase > IDX32_LIMIT)
        return self._layouts.keep(key, lay)

    def _scratch_for(self, queue: cl.CommandQueue, count: int, itemsize: int) -> _Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = _Scratch(queue)
        nbytes = max(1, count) * itemsize
        if s.capacity < nbytes:
            s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
            s.capacity = nbytes
        return s

    def enqueue(self, queue: cl.CommandQueue, pieces: Sequence[Piece], out: cl.Buffer,
                obase: int = 0, wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """out[obase + i] = reduce(pieces[i]) for every (buffer, offset, length) piece (in
        elements); one launch per `slots` pieces, and a finishing launch after each where an
        array spans more than one group."""
        lay = self.layout(tuple(p[1] for p in pieces), tuple(p[2] for p in pieces))
        return self.launch(queue, lay, [p[0] for p in pieces], out, obase, wait_for)

    def launch(self, queue: cl.CommandQueue, lay: Layout, bufs: Sequence[cl.Buffer | None],
               out: cl.Buffer, obase: int = 0, wait_for: Sequence[cl.Event] | None = None,
               ) -> list[cl.Event]:
        """`enqueue` with the layout of the call's offsets and lengths already at hand (the
        warm call of cltune.families.many.api) and the arrays' buffers in order."""
        a = self._args.get(lay.index64)
        if a is None:
            self.built(lay.index64)
            a = self._args[lay.index64]
        evs: list[cl.Event] = []
        with _LOCK:  # the kernels' arguments and the scratch are shared state
            s = self._scratch_for(queue, lay.partials, a.acc_bytes)
            waits = wait_for
            if not s.in_order and s.last is not None:
                waits = [*(waits or ()), s.last]
            # the launches touch disjoint outputs and partials: on an out-of-order queue each
            # waits for the inputs only, and a marker joins them
            for part in lay.parts:
                ev = a.launch_many(queue, part.gsize, part.lsize, bufs, part.start, part.count,
                                   part.meta, s.partials, part.pbase, out,
                                   obase + part.start, waits or None)
                evs.append(ev)
                if part.split:
                    ev = a.launch_fin(queue, part.fsize, part.lsize, part.meta, part.count,
                                      s.partials, part.pbase, out, obase + part.start,
                                      None if s.in_order else [ev])
                    evs.append(ev)
                if s.in_order:
                    waits = None
            if not s.in_order and len(evs) > 1:
                evs.append(cl.enqueue_marker(queue, wait_for=evs))
            s.last = evs[-1]
        return evs
