"""Enqueue a built ScanConfig on a view (outer, r, inner) of a buffer: the plan (chunks per
group, groups), scratch per queue, and the launches of kernels/scan.cl (one where a single
chunk covers the input, else reduce -> carries -> scan, or one chained pass).

A `ScanLauncher` belongs to one (context, device, variant, config) and is thread-safe: kernel
arguments are state shared by everyone using a build, so launches hold one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.core.pow2 import pow2_at_least
from cltune.device.info import DeviceInfo
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.kernel import (
    COLS_BATCH,
    SEG_NONE,
    SEG_OFFSETS,
    SEG_ROWS,
    Form,
    ScanBuilt,
    build,
    tiles_built,
)
from cltune.opencl.kernel_args import FAST_SETTER, pack_u32, set_u32
from cltune.opencl.prepared import PreparedCalls

L = U = int  # the kernels' scalar types are set at build (kernel.py)
_OOO = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


@dataclass(frozen=True)
class Plan:
    """How a call is cut: `groups` chunks of `chunk` elements (rows) or `groups` chunks of
    `chunk` rows per column (cols: `colgroups` groups across the columns, each `wc` strips
    by wg / wc chunks; the top step's `lanes` work-items a column)."""

    groups: int
    chunk: int
    colgroups: int = 1
    chained: bool = False  # one chained pass (else reduce-then-scan, or one group)
    wc: int = 0
    lanes: int = 1
    tile: bool = False  # GPUs' short columns: one launch, the chunks' carries in the group


#: argument places of the one-launch kernels (kernel.py's lists): down's result, chain's
#: result and state words (then the ticket counter, its base, the epoch)
_DOWN_OUT, _CHAIN_OUT, _CHAIN_STATUS = 9, 11, 7
_TILE_OUT = 7  # clt_scan_cols_tile's result


class _Warm:
    """A plain view's record of the arguments its one-launch kernel holds: set by this view
    (the kernel's `_clt_warm` is this object) at these element offsets, with these state
    buffers; anyone else setting the kernel's arguments drops the kernel's mark."""

    __slots__ = ("offs", "state", "go")

    def __init__(self) -> None:
        self.offs: tuple[int, int] | None = None
        self.state: tuple = (None, None)
        self.go: tuple = (None, None)  # (queue, its prepared call: ScanLauncher._prepared)


#: GPUs, strided scans: partials a top-step lane takes at most (it reads them twice, serially)
TOP_RUN = 32
#: GPUs, strided scans: columns this short are scanned whole by one work-item each, in one
#: launch (rows loaded in batches of CLT_COLS_BATCH: r / 8 memory round trips), never cut into
#: chunks whose carries take two more launches (#40: <= 64 rows x >= 10^4 float32 along axis
#: 0 took 58 us on the H200 against torch's 11; 64 x 10^4 was cut into 8 chunks of 8 rows,
#: reduce + top + down). H100, float32 x 10^4 columns, scripts/experiments/scan_short_cols.py:
#: one launch / chunks 0.54 at 64 rows, 0.44 at 128, 0.52 at 256, 0.89 at 512, 1.48 at 1024
SHORT_COLS = 512
#: GPUs, short columns of more than COLS_BATCH rows: a group of wc strips by wg / wc chunks
#: of at most COLS_BATCH rows (clt_scan_cols_tile), the chunks' carries combined in the group,
#: one memory round trip a work-item. Off: measured on an H100 (2026-12-07) it ran 0.91-1.03x
#: the time of the work-item a column it would replace on 8 short-column shapes and 1.50x on
#: 16x100000 (docs/logs/h100-scan-tile-2026-12-07.txt): no gain past the noise. Tested on
#: NVIDIA and the CPUs with the GPU plan forced, and under Oclgrind;
#: `python scripts/experiments/scan_short_cols.py` compares them
TILE_COLS = False
#: CPUs, rows: the fewest elements a served chunk takes (each chunk of a chained or
#: reduce-then-scan pass costs a work-group, and groups_per_cu is meant for inputs that fill
#: the caches: the builtin's 128 chunks a compute unit cut 4096 float32 into 256 chunks of 16).
#: `cltune.cumsum` of float32, builtin, us per warm call, bound off / 2^14 / 2^15, 5 rounds
#: alternating (scripts/experiments/scan_min_chunk.py, this 2-core AMD host, 2026-12-06):
#: Intel's runtime 4096 / 65537 / 262144 / 10^6 elements 32.2 / 53.0 / 77.5 / 207 ->
#: 8.7 / 16.6 / 46.9 / 159 at 2^15; Debian's PoCL 22.2 / 40.3 / 101.5 / 303 -> 6.8 / 25.6 /
#: 86.2 / 214. Launchers the tuner validates or tests drive keep min_chunk=0 (the config's own
#: chunks, many groups)
CPU_MIN_CHUNK = 1 << 15


def serving_min_chunk(info: DeviceInfo) -> int:
    """The min_chunk a served launcher (and the tuner's timing) uses on this device."""
    return CPU_MIN_CHUNK if info.type == "cpu" else 0


def plan(cfg: ScanConfig, compute_units: int, outer: int, r: int, inner: int,
         state_words: int | None = None, gpu: bool = False, min_chunk: int = 0,
         tiles: bool = True) -> Plan:
    """`state_words`: how many state words a chained pass may use (one buffer's worth); a
    chained config whose tiles need more scans this input by reduce-then-scan. `min_chunk`:
    rows cut into chunks (chain 0 and 3) get at least this many elements each (one group for
    an input shorter than twice that).

    Strided (cols) on GPUs: a group is wc strips (as many as there are, up to wg) by wg / wc
    chunks, so that few columns still fill the device: 2^20 x 16 float32 had 16 busy
    work-items a group of 256 and 1056 chunks of 993 rows scanned serially (498 us on the
    H200 against a 37 us copy); the top step gives each column up to wg lanes of TOP_RUN
    partials (a work-item a column read 1056 partials serially: ~100 us of 65536 x 256's
    182). CPUs keep a work-item's strip along the group (wc = wg) and one lane a column."""
    want = max(1, compute_units * cfg.groups_per_cu)
    if cfg.layout == "rows":
        n = outer * r * inner
        tiles = max(1, -(-n // cfg.tile))
        if cfg.chain in (1, 2) and (state_words is None or tiles <= state_words):
            return Plan(tiles, cfg.tile, chained=tiles > 1)  # a tile a group
        if min_chunk > 0:
            want = max(1, min(want, n // min_chunk))
        chunk = -(-max(1, n) // want)
        chunk = -(-chunk // cfg.tile) * cfg.tile  # whole tiles
        groups = max(1, -(-n // chunk))
        # chain=3: the same chunks in one chained pass (a chunk a group)
        return Plan(groups, chunk, chained=cfg.chain == 3 and groups > 1)
    strips = outer * -(-inner // cfg.items)  # a work-item's neighbouring columns
    wc = min(cfg.wg, pow2_at_least(strips)) if gpu else cfg.wg
    colgroups = max(1, -(-strips // wc))
    splits = max(1, min(want * (cfg.wg // wc) // colgroups, r // 8))
    if gpu and r <= SHORT_COLS:
        if tiles and TILE_COLS and tiles_built(cfg, gpu) and r > COLS_BATCH:
            need = -(-r // COLS_BATCH)  # chunks of at most COLS_BATCH rows
            if need <= cfg.wg:
                wc = min(cfg.wg // pow2_at_least(need), pow2_at_least(strips))
                chunk = -(-r // (cfg.wg // wc))
                return Plan(-(-r // chunk), chunk, -(-strips // wc), wc=wc, tile=True)
        splits = 1
    chunk = -(-max(1, r) // splits)
    groups = max(1, -(-r // chunk))
    lanes = min(cfg.wg, pow2_at_least(-(-groups // TOP_RUN))) if gpu else 1
    return Plan(groups, chunk, colgroups, wc=wc, lanes=lanes)


#: an event's status (get_info: ~0.05 us less a call than pyopencl's property)
_EXEC_STATUS = cl.event_info.COMMAND_EXECUTION_STATUS
#: a chained call's epoch is 29 bits of its state words (kernels/scan.cl)
EPOCH_LIMIT = (1 << 29) - 1


class _Scratch:
    """Per-queue partials; on an out-of-order queue a call's first launch waits for the
    previous call's last one (`last`), which read them. A chained config's state words
    (`status`, zeroed once: each call has its own epoch) and ticket counter (`base`: the
    tickets handed out so far, mod 2^32)."""

    __slots__ = ("pv", "pf", "capacity", "last", "status", "ticket", "status_cap", "epoch",
                 "base", "in_order")

    def __init__(self, in_order: bool = True) -> None:
        self.in_order = in_order  # the queue's (its properties are fixed at creation)
        self.last: cl.Event | None = None
        self.pv: cl.Buffer | None = None
        self.pf: cl.Buffer | None = None
        self.capacity = 0
        self.status: cl.Buffer | None = None
        self.ticket: cl.Buffer | None = None
        self.status_cap = 0
        self.epoch = 0
        self.base = 0


class ScanLauncher:
    """Launches one config of one variant; `enqueue` scans a view of a buffer into another
    (they may be the same: in place)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo,
                 variant: ScanVariant, cfg: ScanConfig, min_chunk: int = 0) -> None:
        """min_chunk: see `plan` (served launchers: `serving_min_chunk`; 0 scans in the
        config's own chunks)."""
        self.ctx, self.dev, self.info, self.variant, self.cfg = ctx, dev, info, variant, cfg
        self.min_chunk = min_chunk
        self._lock = threading.Lock()
        self._scratch: dict[int, _Scratch] = {}
        self._q_last: cl.CommandQueue | None = None  # the last call's queue and its scratch
        self._q_scratch: _Scratch | None = None
        self._dummy = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
        self._builds: dict[Form, ScanBuilt] = {}
        self._plans: dict[tuple[int, int, int], Plan] = {}
        self._forms: dict[tuple, Form] = {}
        self._words = variant.acc_bytes // 4
        # (view, exclusive) -> (build, plan, n, r, warm launch state)
        self._hot: PreparedCalls = PreparedCalls()

    def in_own_chunks(self) -> ScanLauncher:
        """This launcher, or where it has a min_chunk a twin without one sharing its builds
        (validation: the config's many-chunk paths checked on short inputs too)."""
        if not self.min_chunk:
            return self
        twin = ScanLauncher(self.ctx, self.dev, self.info, self.variant, self.cfg)
        twin._builds = self._builds
        return twin

    def built(self, form: Form | None = None) -> ScanBuilt:
        form = form or Form()
        b = self._builds.get(form)
        if b is None:
            b = self._builds[form] = build(self.ctx, self.dev, self.info, self.variant,
                                           self.cfg, form)
        return b

    def plan(self, outer: int, r: int, inner: int) -> Plan:
        p = self._plans.get((outer, r, inner))
        if p is None:
            if len(self._plans) > 256:
                self._plans.clear()
            words = self.dev.max_mem_alloc_size // 8 // self._state_width()
            p = self._plans[(outer, r, inner)] = plan(self.cfg, self.info.compute_units,
                                                      outer, r, inner, words,
                                                      gpu=self.info.type != "cpu",
                                                      min_chunk=self.min_chunk)
        return p

    def _state_width(self) -> int:
        """State words per tile of a chained pass: two for a 64-bit accumulator."""
        return self._words

    def _scratch_of(self, queue: cl.CommandQueue) -> _Scratch:
        """The queue's scratch; the queue of the last call is recognised by identity (its
        int_ptr and properties are queries of the driver, three of them a call before)."""
        if queue is self._q_last:
            return self._q_scratch
        s = self._scratch.get(queue.int_ptr)
        if s is None:
            s = self._scratch[queue.int_ptr] = _Scratch(not (queue.properties & _OOO))
        self._q_last, self._q_scratch = queue, s
        return s

    def _partials(self, queue: cl.CommandQueue, count: int, acc_bytes: int,
                  ) -> tuple[cl.Buffer, cl.Buffer]:
        s = self._scratch_of(queue)
        if s.capacity < count:
            cap = max(count, 2 * s.capacity)
            s.pv = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, cap * acc_bytes)
            s.pf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, cap * 4)
            s.capacity = cap
        return s.pv, s.pf  # type: ignore[return-value]

    def _chain_state(self, queue: cl.CommandQueue, words: int, wait_for):
        """The state words (zeroed when new or when the epochs run out), the ticket counter,
        this call's ticket base and epoch; the scratch remembers the next ones."""
        s = self._scratch_of(queue)
        if s.last is not None and s.last.get_info(_EXEC_STATUS) < 0:
            s.ticket = None  # a launch that failed may have left tickets taken: start over
            s.status_cap = 0
            s.base = 0
        if s.ticket is None:
            s.ticket = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                 hostbuf=np.zeros(1, np.uint32))
        fill = None
        grow = s.status_cap < words
        if grow or s.epoch >= EPOCH_LIMIT:
            if grow:
                s.status_cap = max(words, 2 * s.status_cap)
                s.status = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, s.status_cap * 8)
            fill = cl.enqueue_fill_buffer(queue, s.status, np.uint64(0), 0, s.status_cap * 8,
                                          wait_for=self._before(queue, wait_for))
            s.epoch = 0
        s.epoch += 1
        return s.status, s.ticket, fill

    def enqueue(self, queue: cl.CommandQueue, x: cl.Buffer, xoff: int, out: cl.Buffer,
                ooff: int, view: tuple[int, int, int], *, exclusive: bool = False,
                offsets: cl.Buffer | None = None, m: int = 0, off64: bool = False,
                wait_for: list[cl.Event] | None = None) -> list[cl.Event]:
        """Scan x[xoff:] viewed as (outer, r, inner) along r into out[ooff:] (element
        offsets); `offsets` (rows only): m + 1 CSR bounds, segments instead of rows. None when
        there is nothing to scan."""
        hot = self._hot.hit((view, exclusive)) if offsets is None else None
        if hot is not None:  # a plain call of a view launched before: its build and plan
            b, p, n, r, warm = hot
            if self._one_launch(p):
                evs: list[cl.Event] = []
                self._prepared(queue, hot, view)(x, xoff, out, ooff, wait_for, evs)
                return evs
            with self._lock:
                self._in_order = self._scratch_of(queue).in_order
                if self.cfg.layout == "rows":
                    return self._rows(queue, b, p, x, xoff, out, ooff, n, r, None, 0, wait_for)
                return self._cols(queue, b, p, x, xoff, out, ooff, view[0], r, view[2],
                                  self.cfg.wg, wait_for)
        outer, r, inner = (int(v) for v in view)
        if outer * r * inner == 0:
            return []
        cfg = self.cfg
        if cfg.layout == "rows":
            if inner != 1:
                raise ValueError("the rows layout scans a contiguous axis (inner == 1)")
            seg = SEG_OFFSETS if offsets is not None else SEG_ROWS if outer > 1 else SEG_NONE
            fk = (bool(exclusive), seg, bool(off64) and seg == SEG_OFFSETS)
        else:
            if offsets is not None:
                raise ValueError("segments are scanned by the rows layout")
            fk = (bool(exclusive), SEG_NONE, False)
        form = self._forms.get(fk)
        if form is None:
            form = self._forms[fk] = Form(*fk)
        b = self.built(form)
        p = self.plan(outer, r, inner)
        if p.tile and b.tile is None:  # a build without the tile kernel (a forced CPU build)
            p = self._plans[(outer, r, inner)] = plan(
                cfg, self.info.compute_units, outer, r, inner, gpu=self.info.type != "cpu",
                min_chunk=self.min_chunk, tiles=False)
        if offsets is None and type(exclusive) is bool:
            self._hot.keep((view, exclusive), (b, p, outer * r, r, _Warm()))
        wg = cfg.wg
        with self._lock:  # the kernels' arguments, and _in_order, are shared state
            self._in_order = self._scratch_of(queue).in_order
            if cfg.layout == "rows":
                return self._rows(queue, b, p, x, xoff, out, ooff, outer * r, r,
                                  offsets, m, wait_for)
            return self._cols(queue, b, p, x, xoff, out, ooff, outer, r, inner, wg, wait_for)

    def warm_rows(self, queue: cl.CommandQueue, view: tuple[int, int, int],
                  exclusive: bool) -> Callable[..., cl.Event] | None:
        """The prepared call of a plain rows view launched before in one launch (one group,
        or the chained pass) on `queue`: `go(x, xoff, out, ooff)` does what `enqueue` would
        for that view, its build, plan and kernel found once — one function, not five (the
        scanner's warm call was ~4.5 us of Python on a 2-core host, enqueue stubbed). None
        for other views (they keep `enqueue`)."""
        hot = self._hot.get((view, exclusive))
        if hot is None or not self._one_launch(hot[1]):
            return None
        return self._prepared(queue, hot, view)

    def _one_launch(self, p: Plan) -> bool:
        """Views of this plan are scanned in one launch: rows by one group or the chained
        pass, strided columns (GPUs' short ones) by one chunk a column."""
        return p.groups == 1 or p.tile or (self.cfg.layout == "rows" and p.chained)

    def _prepared(self, queue: cl.CommandQueue, hot: tuple,
                  view: tuple[int, int, int]) -> Callable[..., cl.Event]:
        """The one-launch view `hot`'s prepared call on `queue` (made once per queue):
        `go(x, xoff, out, ooff, wait_for=None, evs=None)` sets only the input and result (and,
        chained, the state buffers if replaced, the ticket base and epoch) while the kernel
        still holds this view's arguments at these offsets, else all of them; enqueues; returns
        the launch's event (`evs`, when given, gets the state's clearing fill first). Only the
        state's slow cases (a failed launch before, the state grown or its epochs spent) go
        through `_chain_state`."""
        b, p, n, r, w = hot
        if w.go[0] is queue:
            return w.go[1]
        single = p.groups == 1 or p.tile
        k = b.tile if p.tile else b.down if single else b.chain
        wg = self.cfg.wg
        if self.cfg.layout == "rows":
            gsize, lsize = ((wg,) if single else (p.groups * wg,)), (wg,)

            def full(x: cl.Buffer, xoff: int, out: cl.Buffer, ooff: int) -> None:
                self._rows_args(b, p, x, xoff, out, ooff, n, r)
        elif p.tile:  # short columns, a group's carries (_cols with p.tile)
            gsize, lsize = (p.colgroups * wg,), (wg,)

            def full(x: cl.Buffer, xoff: int, out: cl.Buffer, ooff: int) -> None:
                self._cols_tile_args(b, p, x, xoff, out, ooff, view[0], r, view[2])
        else:  # strided columns, one chunk each (_cols with p.groups == 1)
            gsize, lsize = (p.colgroups * wg, 1), (wg, 1)

            def full(x: cl.Buffer, xoff: int, out: cl.Buffer, ooff: int) -> None:
                self._cols_one_args(b, p, x, xoff, out, ooff, view[0], r, view[2])
        words = p.groups * self._state_width()
        groups, lock = p.groups, self._lock
        out_at = _TILE_OUT if p.tile else _DOWN_OUT if single else _CHAIN_OUT

        def go(x: cl.Buffer, xoff: int, out: cl.Buffer, ooff: int,
               wait_for: list[cl.Event] | None = None,
               evs: list[cl.Event] | None = None) -> cl.Event:
            lock.acquire()  # by hand: ~0.1 us less than `with`
            try:
                # _scratch_of's common case inlined: the queue of the last call
                s = self._q_scratch if queue is self._q_last else self._scratch_of(queue)
                self._in_order = s.in_order
                if single:
                    if getattr(k, "_clt_warm", None) is w and w.offs == (xoff, ooff):
                        k.set_arg(0, x)
                        k.set_arg(out_at, out)
                    else:
                        full(x, xoff, out, ooff)
                        k._clt_warm, w.offs = w, (xoff, ooff)
                    e = cl.enqueue_nd_range_kernel(queue, k, gsize, lsize, None, wait_for)
                    if evs is not None:
                        evs.append(e)
                    return e
                last = s.last
                if (s.ticket is None or s.status_cap < words or s.epoch >= EPOCH_LIMIT
                        or last is not None and last.get_info(_EXEC_STATUS) < 0):
                    status, ticket, fill = self._chain_state(queue, words, wait_for)
                else:  # _chain_state's common case
                    s.epoch += 1
                    status, ticket, fill = s.status, s.ticket, None
                if getattr(k, "_clt_warm", None) is w and w.offs == (xoff, ooff):
                    k.set_arg(0, x)
                    k.set_arg(out_at, out)
                    st = w.state
                    if st[0] is not status or st[1] is not ticket:  # reallocated
                        k.set_arg(_CHAIN_STATUS, status)
                        k.set_arg(_CHAIN_STATUS + 1, ticket)
                        w.state = (status, ticket)
                    if FAST_SETTER:  # set_u32 inlined
                        k._set_arg_buf(_CHAIN_STATUS + 2, pack_u32(s.base))
                        k._set_arg_buf(_CHAIN_STATUS + 3, pack_u32(s.epoch))
                    else:  # pragma: no cover - a pyopencl without the private setter
                        set_u32(k, _CHAIN_STATUS + 2, s.base)
                        set_u32(k, _CHAIN_STATUS + 3, s.epoch)
                else:
                    self._rows_args(b, p, x, xoff, out, ooff, n, r, (status, ticket, s))
                    k._clt_warm, w.offs, w.state = w, (xoff, ooff), (status, ticket)
                if fill is not None:
                    before = None if s.in_order else [fill]
                elif s.in_order or last is None:
                    before = wait_for
                else:
                    before = [*(wait_for or ()), last]
                e = cl.enqueue_nd_range_kernel(queue, k, gsize, lsize, None, before)
                s.base = (s.base + groups) & 0xFFFFFFFF
                s.last = e
                if evs is not None:
                    if fill is not None:
                        evs.append(fill)
                    evs.append(e)
                return e
            finally:
                lock.release()

        w.go = (queue, go)
        return go

    def _before(self, queue: cl.CommandQueue, wait_for: list[cl.Event] | None,
                ) -> list[cl.Event] | None:
        """The first launch's wait list: the caller's, and on an out-of-order queue the
        previous call's last launch (it read the partials this one overwrites)."""
        last = self._scratch_of(queue).last
        if self._in_order or last is None:
            return wait_for
        return [*(wait_for or []), last]

    def _after(self, e: cl.Event) -> list[cl.Event] | None:
        """The wait list of a launch that follows `e`: none on an in-order queue, which orders
        them already (NVIDIA's driver pays a host round trip, ~50 us, for every event waited
        on between kernels)."""
        return None if self._in_order else [e]

    def _rows_args(self, b: ScanBuilt, p: Plan, x, xoff, out, ooff, n, seglen, chained=None,
                   offsets=None, m=0):
        """All the arguments of the one-launch kernels (down for one group, else chain); a
        warm launch's record of having set them is dropped."""
        seg = (L(seglen), offsets if offsets is not None else self._dummy, L(m))
        if chained is None:
            b.down.set_args(x, L(xoff), L(n), L(p.chunk), *seg, self._dummy, U(0), out,
                            L(ooff))
            b.down._clt_warm = None
        else:
            status, ticket, s = chained
            b.chain.set_args(x, L(xoff), L(n), L(p.chunk), *seg, status, ticket, U(s.base),
                             U(s.epoch), out, L(ooff))
            b.chain._clt_warm = None

    def _chain_launch(self, queue, k: cl.Kernel, p: Plan, s: _Scratch, fill, wait_for):
        before = self._after(fill) if fill is not None else self._before(queue, wait_for)
        e = cl.enqueue_nd_range_kernel(queue, k, (p.groups * self.cfg.wg,), (self.cfg.wg,),
                                       None, before)
        s.base = (s.base + p.groups) & 0xFFFFFFFF
        s.last = e
        return [e] if fill is None else [fill, e]

    def _rows(self, queue, b: ScanBuilt, p: Plan, x, xoff, out, ooff, n, seglen, offsets, m,
              wait_for):
        wg = self.cfg.wg
        if p.groups == 1:
            self._rows_args(b, p, x, xoff, out, ooff, n, seglen, None, offsets, m)
            return [cl.enqueue_nd_range_kernel(queue, b.down, (wg,), (wg,), None, wait_for)]
        if p.chained:
            nw = self._state_width()
            status, ticket, fill = self._chain_state(queue, p.groups * nw, wait_for)
            s = self._scratch_of(queue)
            self._rows_args(b, p, x, xoff, out, ooff, n, seglen, (status, ticket, s), offsets,
                            m)
            return self._chain_launch(queue, b.chain, p, s, fill, wait_for)
        seg = (L(seglen), offsets if offsets is not None else self._dummy, L(m))
        pv, pf = self._partials(queue, p.groups, b.acc_dtype.itemsize)
        b.reduce.set_args(x, L(xoff), L(n), L(p.chunk), *seg, pv, pf)
        e1 = cl.enqueue_nd_range_kernel(queue, b.reduce, (p.groups * wg,), (wg,),
                                        wait_for=self._before(queue, wait_for))
        b.top.set_args(pv, pf, L(p.groups))
        e2 = cl.enqueue_nd_range_kernel(queue, b.top, (wg,), (wg,), wait_for=self._after(e1))
        b.down.set_args(x, L(xoff), L(n), L(p.chunk), *seg, pv, U(1), out, L(ooff))
        b.down._clt_warm = None
        e3 = cl.enqueue_nd_range_kernel(queue, b.down, (p.groups * wg,), (wg,),
                                        wait_for=self._after(e2))
        self._scratch_of(queue).last = e3
        return [e1, e2, e3]

    def _cols_one_args(self, b: ScanBuilt, p: Plan, x, xoff, out, ooff, outer, r, inner):
        """All the arguments of the one-launch strided kernel (down, one chunk a column)."""
        b.down.set_args(x, L(xoff), L(outer), L(r), L(inner), L(p.chunk), U(p.wc), self._dummy,
                        U(0), out, L(ooff))

    def _cols_tile_args(self, b: ScanBuilt, p: Plan, x, xoff, out, ooff, outer, r, inner):
        """All the arguments of the short columns' kernel (a group's carries)."""
        b.tile.set_args(x, L(xoff), L(outer), L(r), L(inner), L(p.chunk), U(p.wc), out,
                        L(ooff))

    def _cols(self, queue, b: ScanBuilt, p: Plan, x, xoff, out, ooff, outer, r, inner, wg,
              wait_for):
        ncols = outer * inner
        gx = p.colgroups * wg
        gy = -(-p.groups // (wg // p.wc))  # groups along the chunks: wg / wc chunks each
        dims = (L(outer), L(r), L(inner), L(p.chunk), U(p.wc))
        b.down._clt_warm = None  # a prepared call's record of its arguments no longer holds
        if p.tile:
            b.tile._clt_warm = None
            self._cols_tile_args(b, p, x, xoff, out, ooff, outer, r, inner)
            return [cl.enqueue_nd_range_kernel(queue, b.tile, (gx,), (wg,),
                                               wait_for=wait_for)]
        if p.groups == 1:
            self._cols_one_args(b, p, x, xoff, out, ooff, outer, r, inner)
            return [cl.enqueue_nd_range_kernel(queue, b.down, (gx, 1), (wg, 1),
                                               wait_for=wait_for)]
        pv, _ = self._partials(queue, p.groups * ncols, b.acc_dtype.itemsize)
        b.reduce.set_args(x, L(xoff), *dims, pv)
        e1 = cl.enqueue_nd_range_kernel(queue, b.reduce, (gx, gy), (wg, 1),
                                        wait_for=self._before(queue, wait_for))
        b.top.set_args(pv, L(ncols), L(p.groups), U(p.lanes))
        gt = -(-ncols // (wg // p.lanes)) * wg  # the carries: lanes work-items a column
        e2 = cl.enqueue_nd_range_kernel(queue, b.top, (gt,), (wg,), wait_for=self._after(e1))
        b.down.set_args(x, L(xoff), *dims, pv, U(1), out, L(ooff))
        e3 = cl.enqueue_nd_range_kernel(queue, b.down, (gx, gy), (wg, 1),
                                        wait_for=self._after(e2))
        self._scratch_of(queue).last = e3
        return [e1, e2, e3]
