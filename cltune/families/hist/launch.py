"""Enqueue a built HistConfig: the plan (groups, a contiguous block of the input each), the
scratch per queue (a cell per bin), passes of 32-bit counters, and the result.

    la = HistLauncher(ctx, dev, info, spec, cfg)
    la.run(queue, x, xoff, n, w, woff, nbins, bins, out)   # out[:nbins] = the histogram
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.device.info import DeviceInfo
from cltune.families.hist.config import HistConfig
from cltune.families.hist.kernel import HistBuilt, HistSpec, build
from cltune.opencl.events import in_order
from cltune.opencl.kernel_args import flat_grid, setter

#: elements one pass of 32-bit counters takes (a bin can count to 2^32 - 1)
PASS = (1 << 32) - (1 << 20)
#: local/private: the most bins of a window a group's block is sized for (a larger histogram
#: is made a window at a time, each zeroed and merged once a group)
WINDOW_CELLS = 16384
#: the least a group takes: a group zeroes and merges its whole histogram once
MIN_CHUNK = 4096


@dataclass(frozen=True)
class UniformBins:
    """numpy's uniform bins: `edges` (nbins + 1, the data's dtype: its first and last are the
    range as the data compares it) and `denom` (numpy's last_edge - first_edge)."""

    edges: np.ndarray
    denom: float


#: clt_hist_out's argument types
_OUT_TYPES = (None, np.int64, np.int64, np.int64, np.uint32, None, np.int64)


def groups(cfg: HistConfig, compute_units: int, n: int, nbins: int,
           rows: int = 1) -> tuple[int, int]:
    """(groups a row, chunk) for `rows` histograms of n elements each: groups_per_cu x compute
    units in all, fewer where a group's block would be smaller than MIN_CHUNK or than its
    histogram (zeroing and storing it costs ~nbins)."""
    n = max(1, n)
    most = max(1, cfg.groups_per_cu * max(1, compute_units))
    least = max(MIN_CHUNK, 4 * min(nbins, WINDOW_CELLS) if cfg.strategy != "global" else 0,
                cfg.wg)
    g = max(1, min(-(-most // max(1, rows)), -(-n // least)))
    chunk = -(-n // g)
    return -(-n // chunk), chunk


class _Both:
    """Two locks taken as one `with` (first, then second)."""

    def __init__(self, first: threading.Lock, second: threading.Lock) -> None:
        self.first, self.second = first, second

    def __enter__(self) -> None:
        self.first.acquire()
        self.second.acquire()

    def __exit__(self, *exc: object) -> None:
        self.second.release()
        self.first.release()


class HistLauncher:
    """One (context, device, spec, config); thread-safe (a launch holds the build's lock)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: HistSpec,
                 cfg: HistConfig, built: HistBuilt | None = None) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self.b = built
        self._own_build = built is None  # its kernels' arguments set under this one's lock
        self._scratch: dict[int, cl.Buffer] = {}
        self._dummy = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, 16)
        self._edges: dict[bytes, cl.Buffer] = {}
        self._locals: dict[int, cl.LocalMemory] = {}
        # clt_hist's argument types (None: a buffer or local memory), kernels/hist.cl's order
        real = spec.real_dtype.type
        self._hist_types = (None, np.int64, np.int64,
                            *((None, np.int64) if spec.weights is not None else ()),
                            np.int64, spec.dtype.type, spec.dtype.type, real, None, np.int64,
                            np.int64, np.int64, None, None, np.int64, np.int64)
        # clt_hist_fin's: clt_hist's, then the result, its base, the edges out and theirs, ne
        self._fin_types = (*self._hist_types, None, np.int64, None, np.int64, np.int64)
        self._lock = threading.Lock()

    def built(self) -> HistBuilt:
        """The build (made on first use: BuildError with the compiler's words)."""
        if self.b is None:
            self.b = build(self.ctx, self.dev, self.spec, self.cfg)
        return self.b

    def window(self, nbins: int) -> int:
        """The bins a launch takes: all of them (global), or as many of a group's copies as
        fit the device's __local memory (local, private: the histogram a window at a time);
        0 when not even one bin does."""
        if self.cfg.strategy == "global":
            return nbins
        per_bin = self.cfg.local_bytes(1, self.spec.acc_bytes)
        return max(0, min(nbins, (int(self.info.local_mem) - 1024) // per_bin))

    def fits(self, nbins: int) -> bool:
        """Whether this config makes a histogram of nbins here (a window at a time)."""
        return self.window(nbins) >= 1

    def _edges_buffer(self, edges: np.ndarray) -> cl.Buffer:
        """The edges on the device, kept per value (a call with the same bins uploads none)."""
        host = np.ascontiguousarray(edges, self.spec.dtype)
        key = host.tobytes()
        buf = self._edges.get(key)
        if buf is None:
            if len(self._edges) >= 16:
                self._edges.clear()
            buf = self._edges[key] = cl.Buffer(
                self.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        return buf

    def _scratch_for(self, queue: cl.CommandQueue, nbytes: int) -> tuple[cl.Buffer, bool]:
        """(the scratch, whether it is new): a queue's own is kept between calls, zero (each
        call's clt_hist_out clears the cells it adds up, clt_hist_fin's last group its cells
        and its ticket), so that a call needs no fill. One cell more than asked: the ticket
        of clt_hist_fin (cell nbins)."""
        nbytes += self.spec.acc_bytes
        if in_order(queue) is None:  # calls may overlap there: each its own
            return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, max(nbytes, 64)), True
        s = self._scratch.get(queue.int_ptr)
        if s is None or s.size < nbytes:
            s = self._scratch[queue.int_ptr] = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE,
                                                         max(nbytes, 64))
            return s, True
        return s, False

    def extremes(self, queue: cl.CommandQueue, x: cla.Array, xoff: int, n: int,
                 wait_for: list[cl.Event] | None = None) -> tuple[np.generic, np.generic]:
        """(min, max) of the integers x[xoff .. xoff + n) (n >= 1) as numpy scalars of their
        dtype: one launch, each group's pair read back together (a wait), the rest on the
        host."""
        b = self.built()
        if b.extremes is None:
            raise ValueError("extremes are bincount's (integer inputs)")
        g = max(1, min(4 * max(1, self.info.compute_units), -(-n // MIN_CHUNK)))
        chunk = -(-n // g)
        g = -(-n // chunk)
        host = np.empty(2 * g, self.spec.dtype)
        with self._lock, b.lock:
            part = self._part_for(queue, host.nbytes)
            ev = setter(b.extremes, (None, np.int64, np.int64, np.int64, None)).launch(
                queue, (g * self.cfg.wg,), (self.cfg.wg,),
                (x.base_data, x.offset // x.dtype.itemsize + xoff, n, chunk, part), wait_for)
            cl.enqueue_copy(queue, host, part, wait_for=[ev], is_blocking=True)
        return host[0::2].min(), host[1::2].max()

    def _local(self, nbytes: int) -> cl.LocalMemory:
        """The `__local` argument of nbytes, kept: the argument setter then leaves it set."""
        local = self._locals.get(nbytes)
        if local is None:
            local = self._locals[nbytes] = cl.LocalMemory(nbytes)
        return local

    def one_pass(self, nbins: int, n: int) -> bool:
        """Whether `count_once` makes bincount's n elements in nbins bins here: one launch of
        clt_hist_once (counts, one window, one pass of 32-bit counters)."""
        b = self.built()
        return b.once is not None and 0 < n < PASS and self.window(nbins) >= nbins

    def count_once(self, queue: cl.CommandQueue, x: cla.Array, n: int, nbins: int,
                   out: cl.Buffer, wait_for: list[cl.Event] | None = None,
                   ) -> tuple[cl.Event, np.generic, np.generic]:
        """bincount before its length is known (`one_pass` must hold): the counts of the values
        0 .. nbins - 1 among x's n elements (contiguous 1-D) into out[0 .. nbins) (int64),
        and, from the same read of x, the least and the largest element (numpy scalars of
        x's dtype; read back, a wait). Values outside 0 .. nbins - 1 are not counted: a
        caller whose largest value is nbins or more counts again with more bins."""
        b = self.built()
        sp, acc = self.spec, self.spec.acc_dtype.itemsize
        gpr, chunk = groups(self.cfg, self.info.compute_units, n, nbins, 1)
        host = np.empty(2 * gpr, sp.dtype)
        nloc = max(acc, self.cfg.local_bytes(nbins, acc))
        local = self._local(nloc)
        lo = hi = sp.dtype.type(0)
        with self._lock, b.lock:
            scratch, fresh = self._scratch_for(queue, nbins * acc)
            try:
                before = wait_for
                if fresh:  # a new scratch: zero once (clt_hist_fin leaves its cells zero)
                    ev0 = cl.enqueue_fill_buffer(queue, scratch, np.zeros(1, sp.acc_dtype), 0,
                                                 scratch.size, wait_for=wait_for)
                    before = [ev0]
                part = self._part_for(queue, host.nbytes)
                ev = setter(b.once, (*self._fin_types, None)).launch(
                    queue, (gpr * self.cfg.wg,), (self.cfg.wg,),
                    (x.base_data, x.offset // x.dtype.itemsize, n, nbins, lo, hi,
                     sp.real_dtype.type(1), self._dummy, chunk, n, gpr, scratch, local, 0,
                     nbins, out, 0, self._dummy, 0, 0, part), before)
                cl.enqueue_copy(queue, host, part, wait_for=[ev], is_blocking=True)
            except BaseException:
                self._scratch.pop(queue.int_ptr, None)  # its zeros are no longer known
                raise
        return ev, host[0::2].min(), host[1::2].max()

    def _part_for(self, queue: cl.CommandQueue, nbytes: int) -> cl.Buffer:
        key = -queue.int_ptr  # beside the queue's scratch (keys of in-order queues)
        s = self._scratch.get(key)
        if s is None or s.size < nbytes or in_order(queue) is None:
            s = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, max(64, nbytes))
            if in_order(queue) is not None:
                self._scratch[key] = s
        return s

    def prepared(self, queue: cl.CommandQueue, n: int, nbins: int,
                 bins: UniformBins) -> Callable[..., cl.Event | None] | None:
        """The launches `run` makes for n elements in nbins uniform `bins` (no weights, one row)
        on the in-order `queue`, prepared for calls in a loop: `launch(x_buf, x_base, out_buf,
        out_base, e_buf, e_base, wait_for)` (bases in elements) enqueues clt_hist_fin (the
        counts and their move into out in one launch: its last group finishes), setting only
        the input and result buffers (and the bases when they change); it also writes
        `bins.edges` into e_buf from e_base (the returned edges, of the spec's dtype); it
        returns the launch's event; None
        once the queue's scratch was replaced (`run` serves then). None where the call is not
        one pass of one window, or the queue's scratch is not made yet (after a `run`)."""
        sp = self.spec
        if (sp.weights is not None or in_order(queue) is None or not 0 < n < PASS
                or self.window(nbins) < nbins):
            return None
        b = self.built()
        acc = sp.acc_dtype.itemsize
        scratch = self._scratch.get(queue.int_ptr)
        if scratch is None or scratch.size < (nbins + 1) * acc or b.fin is None:
            return None  # cell nbins: clt_hist_fin's ticket
        real = sp.real_dtype.type
        lo, hi = bins.edges[0], bins.edges[-1]
        scale, edges = real(nbins / bins.denom), self._edges_buffer(bins.edges)
        nloc = max(acc, self.cfg.local_bytes(nbins, acc))
        local = self._local(nloc)
        gpr, chunk = groups(self.cfg, self.info.compute_units, n, nbins, 1)
        fin = setter(b.fin, self._fin_types)
        g1, l1 = (gpr * self.cfg.wg,), (self.cfg.wg,)
        # the launcher's lock, and the build's (its kernels' arguments) where another
        # launcher may share the build: every launch takes the two in this order, so a build
        # of its own is only ever set under the first (one lock a warm call: ~0.15 us less)
        guard = self._lock if self._own_build else _Both(self._lock, b.lock)
        kept, qkey, k = self._scratch, queue.int_ptr, b.fin
        token = object()

        def launch(xbuf: cl.Buffer, xbase: int, obuf: cl.Buffer, obase: int, ebuf: cl.Buffer,
                   ebase: int, wait_for: list[cl.Event] | None) -> cl.Event | None:
            with guard:
                if kept.get(qkey) is not scratch:
                    return None
                if fin.owner == (token, xbase, obase, ebase) and k._cltune_args is fin:
                    # launch_keyed's warm branch inline: its 20 values are not even made
                    k.set_arg(0, xbuf)
                    k.set_arg(15, obuf)
                    k.set_arg(17, ebuf)
                    return cl.enqueue_nd_range_kernel(queue, k, g1, l1, None, wait_for)
                return fin.launch_keyed(
                    queue, g1, l1, (xbuf, xbase, n, nbins, lo, hi, scale, edges, chunk, n, gpr,
                                    scratch, local, 0, nbins, obuf, obase, ebuf, ebase,
                                    nbins + 1),
                    (0, 15, 17), (token, xbase, obase, ebase), wait_for)
        return launch

    def run(self, queue: cl.CommandQueue, x: cla.Array, xoff: int, n: int, w: cla.Array | None,
            woff: int, nbins: int, bins: UniformBins | None, out: cla.Array,
            wait_for: list[cl.Event] | None = None, rows: int = 1,
            shift: int = 0) -> list[cl.Event]:
        """out[0:rows * nbins] = the histograms of x's elements xoff .. xoff + n, `rows` rows
        of n / rows each (w's from woff as weights); x and w contiguous 1-D of the spec's
        dtypes, out of its out_dtype; bincount counts value v in bin v - shift. Returns the
        launches' events, the last one last (out's events are left to the caller)."""
        sp, b = self.spec, self.built()
        if not self.fits(nbins):
            raise ValueError(f"{nbins} bins do not fit {self.cfg.short()}'s __local memory")
        if rows < 1 or n % rows:
            raise ValueError(f"{n} elements are not {rows} rows")
        real = sp.real_dtype.type
        if bins is None:
            lo = hi = sp.dtype.type(shift)
            scale, edges = real(1), self._dummy
        else:
            lo, hi = bins.edges[0], bins.edges[-1]
            scale = real(nbins / bins.denom)
            edges = self._edges_buffer(bins.edges)
        acc = sp.acc_dtype.itemsize
        # weighted sums of local/private groups: a scratch row a group, added by clt_hist_out
        # in a fixed order; counts (added with atomics) and global: a row a histogram
        grouped = self.cfg.strategy != "global" and sp.weights is not None
        # counts: 32-bit counters, passes of fewer than 2^32 elements (one row) or rows
        # shorter than that; grouped: one pass
        step = PASS if sp.weights is None and rows == 1 else max(1, n)
        if rows > 1 and sp.weights is None and n // rows >= PASS:
            raise ValueError(f"rows of {n // rows} elements exceed 32-bit counters")
        win = self.window(nbins)
        nloc = max(acc, self.cfg.local_bytes(win, acc))
        local = self._local(nloc)
        ooff = out.offset // out.dtype.itemsize
        wargs = (w.base_data, w.offset // w.dtype.itemsize + woff) \
            if sp.weights is not None else ()
        xbase = x.offset // x.dtype.itemsize + xoff
        gpr, _ = groups(self.cfg, self.info.compute_units, min(n, step) // rows, nbins, rows)
        evs: list[cl.Event] = []
        with self._lock, b.lock:
            scratch, fresh = self._scratch_for(queue,
                                               rows * (gpr if grouped else 1) * nbins * acc)
            try:
                self._passes(queue, b, x, xbase, n, w, woff, wargs, nbins, lo, hi, scale, edges,
                             out, ooff, wait_for, rows, step, grouped, fresh, scratch, local,
                             win, evs)
            except BaseException:
                self._scratch.pop(queue.int_ptr, None)  # its zeros are no longer known
                raise
        return evs

    def _passes(self, queue, b, x, xbase, n, w, woff, wargs, nbins, lo, hi, scale, edges,
                out, ooff, wait_for, rows, step, grouped, fresh, scratch, local, win, evs):
        """The launches of `run`: per pass of `step` elements, the histogram kernel (a launch
        a window of `win` bins) and clt_hist_out (which leaves the counts' cells zero
        again); counts of one row in one window and one pass: clt_hist_fin alone (its last
        group does clt_hist_out's part)."""
        sp, inorder = self.spec, in_order(queue) is not None
        cus = self.info.compute_units
        ev: cl.Event | None = None
        for p0 in range(0, max(1, n), step):
            m = min(step, n - p0)
            # an in-order queue orders the launches; else each waits for the one before
            before = list(wait_for or []) if ev is None else [] if inorder else [ev]
            parts = 1
            if (fresh and not grouped) or m == 0:  # a new scratch: zero all of it once
                ev = cl.enqueue_fill_buffer(queue, scratch, np.zeros(1, sp.acc_dtype), 0,
                                            scratch.size, wait_for=before or None)
                evs.append(ev)
                before = [] if inorder else [ev]
                fresh = False
            if m > 0:
                gpr, chunk = groups(self.cfg, cus, m // rows, nbins, rows)
                parts = gpr if grouped else 1
                if sp.weights is not None:
                    wargs = (wargs[0], w.offset // w.dtype.itemsize + woff + p0)
                if b.fin is not None and rows == 1 and win >= nbins and m == n:
                    ev = setter(b.fin, self._fin_types).launch(
                        queue, (gpr * self.cfg.wg,), (self.cfg.wg,),
                        (x.base_data, xbase, n, nbins, lo, hi, scale, edges, chunk, n, gpr,
                         scratch, local, 0, nbins, out.base_data, ooff, self._dummy, 0, 0),
                        before or None)
                    evs.append(ev)
                    continue  # one pass: nothing follows
                for w0 in range(0, nbins, win):
                    # an ArgSetter sets only the arguments that changed since its last call
                    ev = setter(b.hist, self._hist_types).launch(
                        queue, (rows * gpr * self.cfg.wg,), (self.cfg.wg,),
                        (x.base_data, xbase + p0, m, *wargs, nbins, lo, hi, scale, edges,
                         chunk, m // rows, gpr, scratch, local, w0, min(win, nbins - w0)),
                        before or None)
                    evs.append(ev)
                    before = [] if inorder else [ev]
            total = rows * nbins
            ev = setter(b.out, _OUT_TYPES).launch(
                queue, *flat_grid(total), (scratch, nbins, parts, total,
                                        int(p0 > 0) | (0 if grouped else 2),
                                        out.base_data, ooff),
                None if inorder else [ev])
            evs.append(ev)
