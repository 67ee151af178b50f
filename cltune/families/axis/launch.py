"""Enqueue a built AxisConfig on a shape: plans (groups, split of long rows/columns), scratch
per queue, and the launches of kernels/axis.cl.

An `AxisLauncher` belongs to one (context, device, op, config) and is thread-safe: kernel
arguments are state shared by everyone using a build, so launches hold one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.core.ops import OpSpec
from cltune.device.info import DeviceInfo
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.kernel import (
    COLS_FIN,
    ROWS_FIN,
    AxisBuilt,
    build,
    builds_packed,
    cols_args,
    cols_narrow_args,
    cols_stream_args,
    rows_args,
    scalar_dtypes,
    segs_args,
    segs_long_args,
)
from cltune.opencl.kernel_args import ArgSetter, setter

MAX_SPLIT = 4096
#: CPUs: outputs per group of the columns' finishing kernel, so that a work-item adds its own
#: output's pieces and the tree in __local memory has no steps (was 32 outputs per group, two
#: work-items per output: 10000 x 1000 float32 along axis 0, 16 pieces, finishing kernel
#: 20.0 -> 15.7 us on Intel's runtime, 33.7 -> 14.9 on PoCL: scripts/experiments/axis_splits.py)
FIN_COLS_CPU = 1024
#: the least a piece of a split streamed column strip reads (CPUs, the stream layout): a
#: 200 x 200 float32 sum along axis 0 was 16 pieces of 10 KB and a finishing launch, 6.7 us of
#: device time where one piece takes 3.6 (Intel's runtime); 100 x 10000 was 2 pieces of each
#: of its 10 strips, 98.6 us where one piece each takes 39.9 (PoCL: 161 -> 76)
MIN_PIECE_BYTES = 1 << 18
_IDX32_LIMIT = (1 << 32) - (1 << 20)
#: the longest rows clt_ax_packed takes (other lengths: blocks of vec rows transposed)
SHORT_ROW = 16
#: the most columns clt_ax_cols_narrow takes (its AXN_MAX: a case of its switch each)
NARROW_COLS = 16
_LOCK = threading.RLock()


@dataclass(frozen=True)
class AxisPlan:
    """Work-groups of the first kernel, pieces per row/column (`split`, 1: no finish kernel)
    and elements (rows) per piece."""

    groups: int
    split: int
    chunk: int
    ctiles: int = 1  # column tiles per outer block (strided layout)

    def partials(self, rows_or_outputs: int) -> int:
        return rows_or_outputs * self.split if self.split > 1 else 0


def _split(cfg: AxisConfig, cus: int, base: int, length: int, step: int) -> tuple[int, int]:
    """Pieces per row (column strip) so that base * split units fill the groups launched but
    do not exceed them: one unit over would make one group take two in turn, the whole
    launch waiting on it (rounding up took 3000x5000 along axis 0 from 29 to 41 us on the
    H200: 553 units on 528 groups)."""
    target = cfg.groups_per_cu * max(1, cus)
    most = max(1, -(-length // (2 * step)))  # each piece at least two steps long
    split = max(1, min(target // max(1, base), most, MAX_SPLIT))
    chunk = -(-length // split)
    chunk = -(-chunk // cfg.vec) * cfg.vec if cfg.lanes else chunk
    return max(1, -(-length // max(1, chunk))), max(1, chunk)


def _groups(cfg: AxisConfig, cus: int, units: int) -> int:
    """Groups launched: each takes units g, g + groups, ... (at most groups_per_cu per CU)."""
    return max(1, min(units, cfg.groups_per_cu * max(1, cus)))


def plan_rows(cfg: AxisConfig, cus: int, rows: int, length: int) -> AxisPlan:
    base = -(-rows // (cfg.wg // cfg.lanes))
    split, chunk = _split(cfg, cus, base, length, cfg.lanes * cfg.vec * cfg.items)
    return AxisPlan(_groups(cfg, cus, base * split), split, chunk)


def plan_stream(cfg: AxisConfig, cus: int, outer: int, r: int, inner: int,
                elem_bytes: int = 0) -> AxisPlan:
    """Strips of cols * vec columns, each streamed by one work-item over a piece of rows;
    rows are split only as far as the device needs units, never below 4 rows, and (given
    the bytes an element reads, `elem_bytes`) never into pieces of fewer than
    MIN_PIECE_BYTES: below that a piece's work costs less than the finishing launch."""
    ctiles = -(-inner // (cfg.cols * cfg.vec))
    base = outer * ctiles
    target = cfg.groups_per_cu * max(1, cus)
    most = -(-r // 4)
    if elem_bytes:
        most = min(most, max(1, outer * r * inner * elem_bytes // (base * MIN_PIECE_BYTES)))
    split = max(1, min(target // base, most, MAX_SPLIT))
    chunk = -(-r // split)
    split = -(-r // chunk)
    return AxisPlan(base * split, split, chunk, ctiles)


def plan_narrow(cfg: AxisConfig, cus: int, outer: int, r: int, inner: int,
                elem_bytes: int = 0) -> AxisPlan:
    """clt_ax_cols_narrow: each outer block's blocks of vec rows split into pieces (a
    work-item each) as plan_stream splits rows: as far as the device needs units, never into
    pieces of fewer than MIN_PIECE_BYTES; `chunk` counts blocks."""
    nb = max(1, r // cfg.vec)
    target = cfg.groups_per_cu * max(1, cus)
    most = nb
    if elem_bytes:
        most = min(most, max(1, outer * r * inner * elem_bytes // (outer * MIN_PIECE_BYTES)))
    split = max(1, min(target // outer, most, MAX_SPLIT))
    chunk = -(-nb // split)
    split = -(-nb // chunk)
    return AxisPlan(outer * split, split, chunk)


def plan_cols(cfg: AxisConfig, cus: int, outer: int, r: int, inner: int,
              elem_bytes: int = 0) -> AxisPlan:
    if cfg.stream:
        return plan_stream(cfg, cus, outer, r, inner, elem_bytes)
    ctiles = -(-inner // (cfg.cols * cfg.vec))
    base = outer * ctiles
    split, chunk = _split(cfg, cus, base, r, (cfg.wg // cfg.cols) * cfg.items)
    return AxisPlan(_groups(cfg, cus, base * split), split, chunk, ctiles)


def _types(dtypes: list) -> tuple:
    """scalar_dtypes' entries as numpy scalar types (None: a buffer or local memory)."""
    return tuple(None if t is None else np.dtype(t).type for t in dtypes)


def _zeros(ctx: cl.Context, nbytes: int) -> cl.Buffer:
    """A buffer zeroed at creation (no fill command)."""
    return cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.zeros(max(4, nbytes), np.uint8))


class _Scratch:
    """Per-queue scratch: partials, one-pass tickets (kept zero by the kernels), the list of
    long segments with its count and ticket. On an out-of-order queue a launch waits for the
    previous one that used it (`last`)."""

    __slots__ = ("partials", "capacity", "tickets", "n_tickets", "long_list", "n_long",
                 "long_count", "long_ticket", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials: cl.Buffer | None = None
        self.capacity = 0
        self.tickets = _zeros(ctx, 4)
        self.n_tickets = 1
        self.long_list = _zeros(ctx, 4)
        self.n_long = 1
        self.long_count = _zeros(ctx, 4)
        self.long_ticket = _zeros(ctx, 4)
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


def _waits(s: _Scratch, wait_for: Sequence[cl.Event] | None) -> list | None:
    """What a launch waits for: the caller's events and, on an out-of-order queue, the last
    launch that used this scratch."""
    w = list(wait_for or ())
    if not s.in_order and s.last is not None:
        w.append(s.last)
    return w or None


class Prepared:
    """One rows/cols launch (and its finishing launch) of a shape, offsets and queue with all
    but the buffers set: called with x, out (and y) on every call. The scratch's partials and
    tickets are read at each call (another shape may have grown them), the application's
    buffers are never kept."""

    __slots__ = ("queue", "s", "two", "kern", "gsize", "lsize", "args", "tickets", "fin",
                 "bufs", "kept", "fin_token", "out_at", "lean")
    # tickets: the argument list ends (partials, tickets, out, local); else (partials, out)

    def __init__(self, queue: cl.CommandQueue, s: _Scratch, two: bool, kern: ArgSetter,
                 gsize: tuple, lsize: tuple, args: list, tickets: bool,
                 fin: tuple | None) -> None:
        self.queue, self.s, self.two, self.kern = queue, s, two, kern
        self.gsize, self.lsize, self.args, self.tickets, self.fin = gsize, lsize, args, \
            tickets, fin
        # the scratch's partials (and tickets): ours, set only when the scratch has grown;
        # the argument list ends (partials, tickets, out, local) or (partials, out)
        tail = len(args) - (4 if tickets else 2)
        self.kept = (tail, tail + 1) if tickets else (tail,)
        self.bufs = kern.buffers(args, self.kept)
        self.fin_token = object()  # the finishing kernel's own token (its ArgSetter's owner)
        self.out_at = len(args) - (2 if tickets else 1)
        # one launch whose only per-call buffers are x (y) and out: `__call__`'s lean case
        self.lean = fin is None and set(self.bufs) <= {0, 2 if two else 0, self.out_at}

    def __call__(self, x: cl.Buffer, out: cl.Buffer, y: cl.Buffer | None = None,
                 wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        s, kern = self.s, self.kern
        if self.lean:
            # this launch set the kernel's arguments last and the scratch is the one it set:
            # only the buffers change (what ArgSetter.launch_again would do, without copying
            # the argument list or a call more)
            k, tail = kern.k, self.kept[0]
            _LOCK.acquire()  # by hand: ~0.1 us less than `with`
            try:
                last = kern.last
                if (kern.owner is self and k._cltune_args is kern and last[tail] is s.partials
                        and (not self.tickets or last[tail + 1] is s.tickets)):
                    k.set_arg(0, x)
                    if self.two:
                        k.set_arg(2, y)
                    k.set_arg(self.out_at, out)
                    ev = cl.enqueue_nd_range_kernel(
                        self.queue, k, self.gsize, self.lsize, None,
                        (wait_for or None) if s.in_order else _waits(s, wait_for))
                    s.last = ev
                    return [ev]
            finally:
                _LOCK.release()
        a = list(self.args)  # [x, xoff, (y, yoff,) ..., partials, (tickets,) out, (local)]
        a[0] = x
        if self.two:
            a[2] = y
        s, q = self.s, self.queue
        tail = self.kept[0]  # partials' place (then tickets, out, local)
        with _LOCK:
            a[tail] = s.partials
            if self.tickets:
                a[tail + 1] = s.tickets
            a[-2 if self.tickets else -1] = out
            ev = self.kern.launch_again(q, self.gsize, self.lsize, a, self.bufs, self.kept,
                                        self, _waits(s, wait_for))
            evs = [ev]
            if self.fin is not None:
                kern, gsize, lsize, fa, at = self.fin
                fa = list(fa)
                fa[0], fa[at] = s.partials, out
                evs.append(kern.launch_again(q, gsize, lsize, fa, (at,), (0,), self.fin_token,
                                             None if s.in_order else [ev]))
            s.last = evs[-1]
        return evs


class AxisLauncher:
    """Launches one AxisConfig (rows, cols or segments); thread-safe."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec,
                 cfg: AxisConfig) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self._built: dict[bool, AxisBuilt] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._plans: dict[tuple, AxisPlan] = {}
        # per index width: the ArgSetter of each kernel (attached to the shared cl.Kernel)
        self._sets: dict[bool, dict[str, ArgSetter]] = {}
        self._local = None

    def built(self, index64: bool = False) -> AxisBuilt:
        b = self._built.get(index64)
        if b is None:
            b = build(self.ctx, self.dev, self.info, self.spec, self.cfg, index64=index64)
            idx = np.uint64 if index64 else np.uint32
            packed = (("packed", rows_args(self.spec)),) if b.packed is not None else ()
            if b.narrow is not None:
                packed += (("narrow", cols_narrow_args(self.spec)),)
            self._sets[index64] = {
                name: setter(getattr(b, name), _types(scalar_dtypes(args, idx, b.acc_dtype)))
                for name, args in (("rows", rows_args(self.spec)), *packed,
                                   ("cols", cols_args(self.spec)),
                                   ("cols_stream", cols_stream_args(self.spec)),
                                   ("segs", segs_args(self.spec)),
                                   ("segs_long", segs_long_args(self.spec)),
                                   ("rows_fin", ROWS_FIN), ("cols_fin", COLS_FIN))}
            self._built[index64] = b
            self._local = cl.LocalMemory(max(1, b.tile_bytes))
        return b

    def _scratch_for(self, queue: cl.CommandQueue, count: int, itemsize: int,
                     tickets: int = 0, segments: int = 0) -> _Scratch:
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = _Scratch(self.ctx, queue)
        nbytes = max(1, count) * itemsize
        if s.capacity < nbytes:
            # zeroed: one-pass builds exchange partials with atomics, which read the old bits
            s.partials = _zeros(self.ctx, nbytes)
            s.capacity = nbytes
        if s.n_tickets < tickets:
            s.tickets, s.n_tickets = _zeros(self.ctx, 4 * tickets), tickets
        if s.n_long < segments:
            s.long_list, s.n_long = _zeros(self.ctx, 4 * segments), segments
        return s

    def _x(self, x: cl.Buffer, xoff: int, y: cl.Buffer | None, yoff: int) -> list:
        return [x, xoff, y, yoff] if self.spec.n_inputs == 2 else [x, xoff]

    def rows(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, rows: int, length: int,
             out: cl.Buffer, *, y: cl.Buffer | None = None, yoff: int = 0,
             wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """out[r] = reduce(x[xoff + r*length : ... + length]) for r < rows (length >= 1)."""
        return self.prepare_rows(queue, xoff, yoff, rows, length)(x, out, y, wait_for)

    def cols(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, outer: int, r: int,
             inner: int, out: cl.Buffer, *, y: cl.Buffer | None = None, yoff: int = 0,
             wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """out[o*inner + i] = reduce over k of x[xoff + (o*r + k)*inner + i] (r >= 1)."""
        return self.prepare_cols(queue, xoff, yoff, outer, r, inner)(x, out, y, wait_for)

    def prepare_rows(self, queue: cl.CommandQueue, xoff: int, yoff: int, rows: int,
                     length: int) -> Prepared:
        """`rows` on this queue, offsets and shape, all but the buffers worked out: what a
        repeated call launches (its scratch made large enough now)."""
        p = self.plan("rows", rows, length, 1)
        i64 = max(xoff, yoff) + rows * length > _IDX32_LIMIT
        b = self.built(i64)
        k = self._sets[i64]
        wg, v = self.cfg.wg, self.cfg.vec
        if self.packs(rows, length) and p.split == 1:
            return self._prepare_packed(queue, k, xoff, yoff, rows, length, b)
        blocks = -(-rows // (wg // self.cfg.lanes))
        aligned = v > 1 and xoff % v == 0 and yoff % v == 0 and length % v == 0
        with _LOCK:
            s = self._scratch_for(queue, p.partials(rows), b.acc_dtype.itemsize, blocks)
        fin = None
        if p.split > 1 and not self.cfg.onepass:
            fin = (k["rows_fin"], (blocks * wg,), (wg,),
                   [None, rows, p.split, None, self._local], 3)
        return Prepared(queue, s, self.spec.n_inputs == 2, k["rows"], (p.groups * wg,), (wg,),
                        [None, xoff, *((None, yoff) if self.spec.n_inputs == 2 else ()), rows,
                         length, p.split, p.chunk, int(aligned), None, None, None,
                         self._local], True, fin)

    def packs(self, rows: int, length: int) -> bool:
        """Rows short enough for clt_ax_packed: CPUs, a work-item a row (lanes 1); lengths
        2..SHORT_ROW with a block's worth of rows (vec rows: folded as a tree in registers for
        lengths 2, 4, 8 or 16 <= vec, transposed for the others). GPUs keep a work-item per
        row until measured."""
        if not builds_packed(self.info, self.cfg) or not 2 <= length <= SHORT_ROW:
            return False
        return rows >= self.cfg.vec

    def _prepare_packed(self, queue: cl.CommandQueue, k: dict, xoff: int, yoff: int,
                        rows: int, length: int, b: AxisBuilt) -> Prepared:
        """clt_ax_packed: groups stream contiguous blocks of vectors (`chunk` of them)."""
        wg, v = self.cfg.wg, self.cfg.vec
        nv = rows // v  # blocks of v rows (len vector loads each)
        groups = _groups(self.cfg, self.info.compute_units, -(-nv // wg))
        chunk = -(-nv // groups)
        with _LOCK:
            s = self._scratch_for(queue, 0, b.acc_dtype.itemsize)
        return Prepared(queue, s, self.spec.n_inputs == 2, k["packed"], (groups * wg,), (wg,),
                        [None, xoff, *((None, yoff) if self.spec.n_inputs == 2 else ()), rows,
                         length, 1, chunk, 0, None, None, None, self._local], True, None)

    def prepare_cols(self, queue: cl.CommandQueue, xoff: int, yoff: int, outer: int, r: int,
                     inner: int) -> Prepared:
        """`cols` as `prepare_rows` does `rows`."""
        if self.narrows(r, inner):
            return self._prepare_narrow(queue, xoff, yoff, outer, r, inner)
        p = self.plan("cols", outer, r, inner)
        i64 = max(xoff, yoff) + outer * r * inner + p.partials(outer * inner) > _IDX32_LIMIT
        b = self.built(i64)
        k = self._sets[i64]
        wg, v = self.cfg.wg, self.cfg.vec
        aligned = v > 1 and xoff % v == 0 and yoff % v == 0 and inner % v == 0
        with _LOCK:
            s = self._scratch_for(queue, p.partials(outer * inner), b.acc_dtype.itemsize,
                                  outer * p.ctiles)
        xs = [None, xoff, *((None, yoff) if self.spec.n_inputs == 2 else ())]
        shape = [outer, r, inner, p.split, p.chunk, p.ctiles, int(aligned)]
        fin = None
        if p.split > 1 and (self.cfg.stream or not self.cfg.onepass):
            kept = outer * inner
            fcols = min(wg, FIN_COLS_CPU if self.info.type == "cpu" else 32,
                        1 << max(0, (kept - 1).bit_length()))
            fin = (k["cols_fin"], (-(-kept // fcols) * wg,), (wg,),
                   [None, outer, inner, p.split, fcols, None, self._local], 5)
        two = self.spec.n_inputs == 2
        if self.cfg.stream:  # its arguments end (partials, out): no tickets, no local memory
            return Prepared(queue, s, two, k["cols_stream"], (p.groups,), (1,),
                            [*xs, *shape, None, None], False, fin)
        return Prepared(queue, s, two, k["cols"], (p.groups * wg,), (wg,),
                        [*xs, *shape, None, None, None, self._local], True, fin)

    def narrows(self, r: int, inner: int) -> bool:
        """A few columns read as a flat array (clt_ax_cols_narrow): CPUs, streamed columns,
        1..NARROW_COLS of them, two blocks of vec rows at least."""
        return (self.info.type == "cpu" and bool(self.cfg.stream) and self.cfg.vec >= 2
                and inner <= NARROW_COLS and r >= 2 * self.cfg.vec)

    def _prepare_narrow(self, queue: cl.CommandQueue, xoff: int, yoff: int, outer: int,
                        r: int, inner: int) -> Prepared:
        p = self.plan("narrow", outer, r, inner)
        i64 = max(xoff, yoff) + outer * r * inner + p.partials(outer * inner) > _IDX32_LIMIT
        b = self.built(i64)
        k = self._sets[i64]
        wg = self.cfg.wg
        with _LOCK:
            s = self._scratch_for(queue, p.partials(outer * inner), b.acc_dtype.itemsize)
        xs = [None, xoff, *((None, yoff) if self.spec.n_inputs == 2 else ())]
        fin = None
        if p.split > 1:
            kept = outer * inner
            fcols = min(wg, FIN_COLS_CPU, 1 << max(0, (kept - 1).bit_length()))
            fin = (k["cols_fin"], (-(-kept // fcols) * wg,), (wg,),
                   [None, outer, inner, p.split, fcols, None, self._local], 5)
        return Prepared(queue, s, self.spec.n_inputs == 2, k["narrow"], (p.groups,), (1,),
                        [*xs, outer, r, inner, p.split, p.chunk, None, None], False, fin)

    def segs(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, n: int, offs: cl.Buffer,
             off64: bool, m: int, init: object, err: cl.Buffer, out: cl.Buffer, *,
             y: cl.Buffer | None = None, yoff: int = 0,
             wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """out[i] = reduce(x[offs[i]:offs[i+1]], initial=init) for i < m; offs: a buffer of
        m + 1 int32 (or int64 with off64) bounds, starting at its first byte."""
        i64 = max(xoff, yoff) + n > _IDX32_LIMIT or m > _IDX32_LIMIT
        self.built(i64)
        k = self._sets[i64]
        wg = self.cfg.wg
        groups = _groups(self.cfg, self.info.compute_units, -(-m // (wg // self.cfg.lanes)))
        with _LOCK:
            s = self._scratch_for(queue, 0, 1, segments=m)
            waits = _waits(s, wait_for)
            xs = self._x(x, xoff, y, yoff)
            ev = k["segs"].launch(queue, (groups * wg,), (wg,),
                                  (*xs, n, offs, int(off64), m, init, err, s.long_list,
                                   s.long_count, out, self._local), waits)
            # long segments: a work-group each (as many groups as the device holds at once)
            ev2 = k["segs_long"].launch(queue, (self.info.compute_units * 4 * wg,), (wg,),
                                        (*xs, offs, int(off64), init, s.long_list, s.long_count,
                                         s.long_ticket, out, self._local),
                                        None if s.in_order else [ev])
            s.last = ev2
            return [ev, ev2]

    def plan(self, layout: str, a: int, b: int, c: int) -> AxisPlan:
        """The plan of a `rows` (rows a of length b; c = 1) or `cols` (outer a, reduced b,
        inner c) launch."""
        p = self._plans.get((layout, a, b, c))
        if p is None:
            cus = self.info.compute_units
            eb = self.spec.itemsize * self.spec.n_inputs
            p = (plan_rows(self.cfg, cus, a, b) if layout == "rows" else
                 plan_narrow(self.cfg, cus, a, b, c, eb) if layout == "narrow" else
                 plan_cols(self.cfg, cus, a, b, c, eb))
            if len(self._plans) > 256:
                self._plans.clear()
            self._plans[(layout, a, b, c)] = p
        return p

    def count_split(self, rows: int, length: int) -> int:
        """How many pieces `rows` splits a row into (for tests and the docs)."""
        return self.plan("rows", rows, length, 1).split
