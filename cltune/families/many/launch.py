"""Enqueue a built ManyConfig on a list of arrays: the table of each launch (group prefixes,
offsets, lengths; uploaded once per layout and kept), scratch per queue, and the launches of
kernels/many.cl in chunks of `slots` arrays into one result buffer.

A `ManyLauncher` belongs to one (context, device, variant, config) and is thread-safe: kernel
arguments are state shared by everyone using a build, so launches hold one lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.many.config import ManyConfig
from cltune.families.many.family import ManyVariant
from cltune.families.many.kernel import FIN_ARGS, ManyBuilt, build, many_args, scalar_types
from cltune.opencl.kernel_args import ArgSetter, setter

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
    where its partials start, and whether any array spans more than one group."""

    start: int
    count: int
    meta: cl.Buffer
    groups: int
    pbase: int
    split: bool


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
        self._sets: dict[bool, tuple[ArgSetter, ArgSetter]] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._layouts: OrderedDict[tuple, Layout] = OrderedDict()
        self._local: cl.LocalMemory | None = None
        # what unused slots point at (never read)
        self._dummy = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, 64)

    def built(self, index64: bool = False) -> ManyBuilt:
        b = self._built.get(index64)
        if b is None:
            b = build(self.ctx, self.dev, self.info, self.variant, self.cfg, index64=index64)
            idx = np.uint64 if index64 else np.uint32
            self._sets[index64] = (
                setter(b.many, scalar_types(many_args(self.cfg.slots), idx)),
                setter(b.fin, scalar_types(FIN_ARGS, idx)))
            self._built[index64] = b
            self._local = cl.LocalMemory(max(1, b.tile_bytes))
        return b

    def layout(self, offsets: tuple[int, ...], lengths: tuple[int, ...]) -> Layout:
        """The launches of a call with these offsets and lengths (tables uploaded once)."""
        key = (offsets, lengths)
        hit = self._layouts.get(key)
        if hit is not None:
            self._layouts.move_to_end(key)
            return hit
        index64 = any(o + n > IDX32_LIMIT for o, n in zip(offsets, lengths, strict=True))
        dtype = np.uint64 if index64 else np.uint32
        parts, pbase, K = [], 0, self.cfg.slots
        for s in range(0, len(lengths), K):
            meta, groups, split = table(self.cfg, offsets[s:s + K], lengths[s:s + K], dtype)
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=meta)
            parts.append(Part(s, min(K, len(lengths) - s), buf, groups, pbase, split))
            pbase += groups if split else 0
        lay = Layout(tuple(parts), pbase, index64 or pbase > IDX32_LIMIT)
        self._layouts[key] = lay
        if len(self._layouts) > MAX_LAYOUTS:
            self._layouts.popitem(last=False)
        return lay

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
        offsets, lengths = tuple(p[1] for p in pieces), tuple(p[2] for p in pieces)
        wg, K = self.cfg.wg, self.cfg.slots
        evs: list[cl.Event] = []
        with _LOCK:  # the layouts' LRU and the kernels' arguments are shared state
            lay = self.layout(offsets, lengths)
            b = self.built(lay.index64)
            many, fin = self._sets[lay.index64]
            s = self._scratch_for(queue, lay.partials, b.acc_dtype.itemsize)
            waits = list(wait_for or ())
            if not s.in_order and s.last is not None:
                waits.append(s.last)
            # the launches touch disjoint outputs and partials: on an out-of-order queue each
            # waits for the inputs only, and a marker joins them
            for part in lay.parts:
                bufs = [p[0] for p in pieces[part.start:part.start + part.count]]
                bufs += [self._dummy] * (K - len(bufs))
                ev = many.launch(queue, (part.groups * wg,), (wg,),
                                 (*bufs, part.meta, part.count, s.partials, part.pbase, out,
                                  obase + part.start, self._local),
                                 waits or None)
                evs.append(ev)
                if part.split:
                    ev = fin.launch(queue, (part.count * wg,), (wg,),
                                    (part.meta, part.count, s.partials, part.pbase, out,
                                     obase + part.start, self._local),
                                    None if s.in_order else [ev])
                    evs.append(ev)
                if s.in_order:
                    waits = []
            if not s.in_order and len(evs) > 1:
                evs.append(cl.enqueue_marker(queue, wait_for=evs))
            s.last = evs[-1]
        return evs
