"""Enqueue a built TopkConfig: the plan (groups a row, a contiguous block each), the scratch
per queue, and the launches of the lists or the radix strategy (kernels/topk.cl).

    la = TopkLauncher(ctx, dev, info, spec, cfg)
    la.run(queue, x, xoff, m, rows, k, largest, values, indices)   # rows x k of each
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.device.info import DeviceInfo
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import (
    RESERVE,
    SAMPLE_BINS,
    TopkBuilt,
    TopkSpec,
    bins_bytes,
    build,
)
from cltune.opencl.events import in_order
from cltune.opencl.kernel_args import flat_grid, setter

#: the least a group takes (lists: a group's merge costs about wg x kp)
MIN_CHUNK = 4096
#: radix: the most bytes of the groups' counts of the last digit kept (beyond: a pass more)
KEEP_BYTES = 16 << 20
#: rowsel: a row that fits __local memory beside the group's own is read from global memory
#: once and selected from there (its 4-5 passes over __local memory); off: every pass reads x
ROW_CACHE = True
#: scratch buffers kept per launcher (queues x names) before they are all let go
MAX_KEPT = 32
#: the longest row (an index is a uint; its largest value marks an empty place)
MAX_ROW = (1 << 32) - 2

_I64, _U32 = np.int64, np.uint32

#: the sample strategy: the sample's rank of the threshold is the least whose chance of
#: fewer than k keys reaching it is below SAMPLE_MISS on data in any order (a Poisson tail;
#: the finishing group then selects from the whole row: correct, slow); the row is left to
#: the radix select where the keys kept would be more than SAMPLE_KEEP of it
SAMPLE_MISS = 1e-6
SAMPLE_KEEP = 1 / 8
#: the fewest elements of the row a key of the sample stands for (a smaller sample for a
#: shorter row: each group selects in it)
SAMPLE_STRETCH = 32
#: the most keys of the finishing group's own sample of the candidates (a long row's many)
FIN_SAMPLE = 4096


def sample_rank(mu: float, miss: float = SAMPLE_MISS) -> int:
    """The least r with P(Poisson(mu) >= r) <= miss (mu: the sample's keys expected at or
    above the k-th key).

    >>> sample_rank(0.06), sample_rank(0.49), sample_rank(7.8), sample_rank(1000.0)
    (4, 7, 25, 1161)
    """
    if mu > 30:  # (the tail as a normal one's, 5 sigma: e^-mu would underflow)
        return math.ceil(mu + 5 * math.sqrt(mu) + 2)
    term = math.exp(-mu)  # P(X = 0)
    below, r = term, 1  # P(X < r)
    while 1.0 - below > miss:
        term *= mu / r
        below += term
        r += 1
    return r


def sample_plan(spec: TopkSpec, local_mem: int, m: int, k: int
                ) -> tuple[int, int, int, int, int] | None:
    """(the sample's rank r of the threshold, the candidates kept, the finishing group's
    second sample (0: none), the candidates above its threshold kept, the sample's keys) of
    the sample strategy for k of one row of m, or None where it does not serve (a short row,
    a large k, its finishing group's __local memory). The sample takes up to spec.sample
    keys, one a stretch of at least SAMPLE_STRETCH elements (each group selects in it)."""
    s = min(spec.sample, pow2_at_most(max(1, m // SAMPLE_STRETCH)))
    if not spec.sample or not spec.local_sort or s < 2 * SAMPLE_BINS:
        return None
    fin = spec.kp * (spec.key_bytes + 4) + bins_bytes(spec.fin_wg) + 4 * (2 * spec.fin_wg + 4)
    if fin + RESERVE > local_mem:
        return None
    r = sample_rank(s * k / m)
    expect = r * (m / s)  # the keys expected above the threshold
    if r > s // 8 or expect > m * SAMPLE_KEEP:
        return None
    cap = min(pow2_at_least(int(max(4 * expect, 2 * spec.kp, 4096))), pow2_at_least(m))
    s2 = min(FIN_SAMPLE, (local_mem - RESERVE - fin) // spec.key_bytes)
    s2 = pow2_at_most(s2) if s2 >= 2 * SAMPLE_BINS else 0
    cap2 = min(cap, max(8192, 4 * spec.kp)) if s2 else 0
    return r, cap, s2, cap2, s


def groups(cfg: TopkConfig, compute_units: int, m: int, rows: int) -> tuple[int, int]:
    """(groups a row, chunk) for `rows` rows of m elements: groups_per_cu x compute units in
    all, fewer where a group's block would be smaller than MIN_CHUNK."""
    m = max(1, m)
    most = max(1, cfg.groups_per_cu * max(1, compute_units))
    g = max(1, min(-(-most // max(1, rows)), -(-m // max(MIN_CHUNK, cfg.wg))))
    chunk = -(-m // g)
    return -(-m // chunk), chunk


class TopkLauncher:
    """One (context, device, spec, config); thread-safe (a launch holds the build's lock)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: TopkSpec,
                 cfg: TopkConfig, built: TopkBuilt | None = None) -> None:
        self.ctx, self.dev, self.info, self.spec, self.cfg = ctx, dev, info, spec, cfg
        self.b = built
        self._scratch: dict[tuple[int, str], cl.Buffer] = {}
        self._locals: dict[int, cl.LocalMemory] = {}
        self._lock = threading.Lock()
        kt = spec.key_dtype.type
        self._types = {
            "clt_tk_lists": (None, _I64, _I64, kt, None, None, _I64, _I64, _I64, _U32, _U32,
                             None, None, None, None, _I64, None, None),
            "clt_tk_hist": (None, _I64, _I64, kt, _I64, _I64, None, _U32, _U32, _U32, _U32,
                            None, None, _U32, None, None, None),
            "clt_tk_ties": (None, _I64, _I64, kt, _I64, _I64, None, None, None),
            "clt_tk_collect": (None, _I64, _I64, kt, _I64, _I64, None, None, _U32, _U32, _U32,
                               _I64, None, None, None, None),
            "clt_tk_sort": (None, None, _I64, _U32, None, _I64, _I64, None, None, _I64, None,
                            None),
            "clt_tk_bitonic": (None, None, _I64, _I64, _I64),
            "clt_tk_emit": (None, _I64, _U32, None, _I64, _I64, None, None, _I64),
            "clt_tk_sfilter": (None, _I64, _I64, kt, _I64, _U32, _U32, _U32, None, None, None,
                               None, None, None, None, None),
            "clt_tk_sfinish": (None, _I64, _I64, kt, _I64, _U32, _U32, _U32, None, None, None,
                               None, None, None, None, _I64, _U32, _U32, None, None, None,
                               None, None, None, None),
            "clt_tk_rowsel": (None, _I64, _I64, kt, _U32, None, None, _I64, None, None, None,
                              None, None, _U32),
            "clt_tk_transpose": (None, _I64, None, _I64, _I64, _I64),
            "clt_tk_transpose_index": (None, _I64, None, _I64, _I64, _I64),
        }

    def built(self) -> TopkBuilt:
        """The build (made on first use: BuildError with the compiler's words)."""
        if self.b is None:
            self.b = build(self.ctx, self.dev, self.spec, self.cfg)
        return self.b

    def fits(self, k: int) -> bool:
        """Whether this config selects k here (its list length, its __local memory)."""
        if not self.cfg.handles(k) or k > self.spec.kp:
            return False
        if self.cfg.strategy == "rowsel" and not self.spec.local_sort:
            return False  # (its pairs are sorted in __local memory)
        need = self.cfg.local_bytes(self.spec.kp, self.spec.key_bytes)
        return need + RESERVE <= self.info.local_mem

    def row_cached(self, m: int) -> bool:
        """rowsel: whether a row of m keys fits __local memory beside the group's own
        (then read from global memory once, every pass over __local memory)."""
        need = self.cfg.local_bytes(self.spec.kp, self.spec.key_bytes) + m * self.spec.key_bytes
        return ROW_CACHE and need + RESERVE <= self.info.local_mem

    def _local(self, nbytes: int) -> cl.LocalMemory:
        loc = self._locals.get(nbytes)
        if loc is None:  # kept: the argument setter then leaves it set
            loc = self._locals[nbytes] = cl.LocalMemory(max(4, nbytes))
        return loc

    def _buffer(self, queue: cl.CommandQueue, name: str, nbytes: int) -> cl.Buffer:
        return self._fresh(queue, name, nbytes)[0]

    def _fresh(self, queue: cl.CommandQueue, name: str, nbytes: int) -> tuple[cl.Buffer, bool]:
        """(a scratch buffer of the queue, whether it is new): kept between calls on an
        in-order queue; calls on another queue get their own."""
        nbytes = max(64, nbytes)
        if in_order(queue) is None:  # calls may overlap there: each its own
            return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes), True
        key = (queue.int_ptr, name)
        s = self._scratch.get(key)
        if s is None and len(self._scratch) >= MAX_KEPT:
            self._scratch.clear()
        if s is None or s.size < nbytes:
            s = self._scratch[key] = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
            return s, True
        return s, False

    def _go(self, queue: cl.CommandQueue, name: str, gsize: tuple, lsize: tuple | None,
            args: tuple, before: list[cl.Event], evs: list[cl.Event]) -> list[cl.Event]:
        ev = setter(self.b.kernel(name), self._types[name]).launch(  # type: ignore[union-attr]
            queue, gsize, lsize, args, before or None)
        evs.append(ev)
        return [] if in_order(queue) is not None else [ev]

    def _fill(self, queue: cl.CommandQueue, buf: cl.Buffer, pattern: np.ndarray, nbytes: int,
              before: list[cl.Event], evs: list[cl.Event]) -> list[cl.Event]:
        ev = cl.enqueue_fill_buffer(queue, buf, pattern, 0, nbytes, wait_for=before or None)
        evs.append(ev)
        return [] if in_order(queue) is not None else [ev]

    def transpose(self, queue: cl.CommandQueue, src: cla.Array, srcoff: int, dst: cla.Array,
                  batches: int, p: int, q: int,
                  wait_for: list[cl.Event] | None = None) -> cl.Event:
        """dst[a, q, p] = src[srcoff:][a, p, q] for `batches` matrices of p x q (src and dst
        contiguous, x's dtype or int64: the indices)."""
        self.built()
        if dst.offset:
            raise ValueError("transpose writes a whole array (offset 0)")
        name = "clt_tk_transpose_index" if src.dtype == np.int64 and \
            self.spec.dtype != np.int64 else "clt_tk_transpose"
        total = batches * p * q
        with self._lock, self.b.lock:  # type: ignore[union-attr]
            return setter(self.b.kernel(name), self._types[name]).launch(  # type: ignore[union-attr]
                queue, *flat_grid(total),
                (src.base_data, src.offset // src.dtype.itemsize + srcoff, dst.base_data, p, q,
                 total), wait_for or None)

    def run(self, queue: cl.CommandQueue, x: cla.Array, xoff: int, m: int, rows: int, k: int,
            largest: bool, values: cla.Array, indices: cla.Array,
            wait_for: list[cl.Event] | None = None) -> list[cl.Event]:
        """values, indices [rows x k] = the best k of each of x's `rows` contiguous rows of m
        elements from element xoff (best first; x contiguous 1-D of the spec's dtype, values
        of it, indices int64). Returns the launches' events, the last one last."""
        sp = self.spec
        self.built()
        if not 1 <= k <= m or not self.fits(k):
            raise ValueError(f"k={k} of rows of {m} is not for {self.cfg.short()} "
                             f"(k <= {sp.kp})")
        if m > MAX_ROW:
            raise ValueError(f"rows of {m} elements exceed the {MAX_ROW} a uint indexes")
        xb = x.offset // x.dtype.itemsize + xoff
        out = (values.base_data, indices.base_data)
        if values.offset // values.dtype.itemsize != indices.offset // indices.dtype.itemsize:
            raise ValueError("values and indices must start at the same element offset")
        ooff = values.offset // values.dtype.itemsize
        flip = sp.flip(largest)
        gpr, chunk = groups(self.cfg, self.info.compute_units, m, rows)
        evs: list[cl.Event] = []
        with self._lock, self.b.lock:  # type: ignore[union-attr]
            before = list(wait_for or [])
            plan = (sample_plan(sp, self.info.local_mem, m, k)
                    if self.cfg.strategy == "sample" and rows == 1 else None)
            if self.cfg.strategy == "rowsel":
                cached = self.row_cached(m)
                self._go(queue, "clt_tk_rowsel", (rows * self.cfg.wg,), (self.cfg.wg,),
                         (x.base_data, xb, m, flip, k, *out, ooff,
                          self._local(sp.kp * sp.key_bytes), self._local(sp.kp * 4),
                          self._local(bins_bytes(self.cfg.wg)),
                          self._local(4 * max(35, self.cfg.wg + 3)),
                          self._local(m * sp.key_bytes if cached else 4), int(cached)),
                         before, evs)
            elif self.cfg.strategy == "lists":
                self._lists(queue, x.base_data, xb, m, rows, k, flip, gpr, chunk, out, ooff,
                            before, evs)
            elif plan is not None:
                try:
                    self._sample(queue, x.base_data, xb, m, k, flip, gpr, chunk, out, ooff,
                                 plan, before, evs)
                except BaseException:  # the zeros of its counts are no longer known
                    self._scratch.pop((queue.int_ptr, "szeroed"), None)
                    raise
            else:
                try:
                    self._radix(queue, x.base_data, xb, m, rows, k, flip, gpr, chunk, out, ooff,
                                before, evs)
                except BaseException:  # the zeros of its kept buffer are no longer known
                    self._scratch.pop((queue.int_ptr, f"zeroed{rows}"), None)
                    raise
        return evs

    def _lists(self, queue, x, xb, m, rows, k, flip, gpr, chunk, out, ooff, before, evs):
        sp, wg, kp = self.spec, self.cfg.wg, self.spec.kp
        loc = (self._local(wg * kp * sp.key_bytes), self._local(wg * kp * 4))
        if gpr == 1:
            dummy = self._buffer(queue, "dummy", 64)
            self._go(queue, "clt_tk_lists", (rows * wg,), (wg,),
                     (x, xb, m, flip, dummy, dummy, 0, chunk, 1, k, 1, dummy, dummy, *out,
                      ooff, *loc), before, evs)
            return
        ck = self._buffer(queue, "keys", rows * gpr * kp * sp.key_bytes)
        ci = self._buffer(queue, "idx", rows * gpr * kp * 4)
        before = self._go(queue, "clt_tk_lists", (rows * gpr * wg,), (wg,),
                          (x, xb, m, flip, ck, ci, 0, chunk, gpr, k, 0, ck, ci, *out, ooff,
                           *loc), before, evs)
        cm = gpr * kp
        self._go(queue, "clt_tk_lists", (rows * wg,), (wg,),
                 (x, xb, m, flip, ck, ci, cm, cm, 1, k, 1, ck, ci, *out, ooff, *loc),
                 before, evs)

    def _sample(self, queue, x, xb, m, k, flip, gpr, chunk, out, ooff, plan, before, evs):
        sp, wg, fw = self.spec, self.cfg.wg, self.spec.fin_wg
        r, cap, s2, cap2, ns = plan
        # the candidates' counts (zero when a call starts, left so by clt_tk_sfinish), the
        # threshold, the groups' counts of keys equal to it, the candidates
        zb, fresh = self._fresh(queue, "szeroed", 16)
        state = self._buffer(queue, "sstate", 16)
        eqc = self._buffer(queue, "eqc", gpr * 4)
        ck = self._buffer(queue, "ckeys", cap * sp.key_bytes)
        ci = self._buffer(queue, "cidx", cap * 4)
        ck2 = self._buffer(queue, "ckeys2", max(1, cap2) * sp.key_bytes)
        ci2 = self._buffer(queue, "cidx2", max(1, cap2) * 4)
        if fresh:
            before = self._fill(queue, zb, np.zeros(1, np.uint32), zb.size, before, evs)
        bins = self._local(bins_bytes(wg, fw))
        before = self._go(queue, "clt_tk_sfilter", (gpr * wg,), (wg,),
                          (x, xb, m, flip, chunk, ns, r, cap, zb, eqc, state, ck, ci,
                           self._local(sp.sample * sp.key_bytes), bins,
                           self._local(4 * (wg + 4))), before, evs)
        self._go(queue, "clt_tk_sfinish", (fw,), (fw,),
                 (x, xb, m, flip, chunk, gpr, k, cap, zb, eqc, state, ck, ci, *out, ooff, s2,
                  cap2, ck2, ci2, self._local(sp.kp * sp.key_bytes), self._local(sp.kp * 4),
                  bins, self._local(4 * (2 * fw + 4)), self._local(max(1, s2) * sp.key_bytes)),
                 before, evs)

    def _radix(self, queue, x, xb, m, rows, k, flip, gpr, chunk, out, ooff, before, evs):
        sp, wg, bits = self.spec, self.cfg.wg, self.cfg.bits
        nb = 1 << bits
        kp = sp.kp
        # the bins and a ticket a row, zero when a call starts and left so by it, and
        # clt_tk_collect's count a row (zeroed by each digit's pass); one buffer per
        # number of rows, since the layout moves with it
        zb, fresh = self._fresh(queue, f"zeroed{rows}", rows * (nb + 2) * 4)
        # the digit chosen so far a row: read from one buffer, the next written to the other
        state, nxt = (self._buffer(queue, "state", rows * 16),
                      self._buffer(queue, "state2", rows * 16))
        # the groups' counts of the last digit kept where small, else counted again (a pass)
        keep = int(rows * gpr * nb * 4 <= KEEP_BYTES)
        own = self._buffer(queue, "own", rows * gpr * (nb if keep else 1) * 4)
        pk = self._buffer(queue, "keys", rows * kp * sp.key_bytes)
        pi = self._buffer(queue, "idx", rows * kp * 4)
        if fresh:
            before = self._fill(queue, zb, np.zeros(1, np.uint32), zb.size, before, evs)
        scan = self._local(wg * 4)
        top = sp.key_bits
        width = bits
        while top > 0:
            shift = max(0, top - bits)
            width = top - shift
            before = self._go(queue, "clt_tk_hist", (rows * gpr * wg,), (wg,),
                              (x, xb, m, flip, chunk, gpr, state, shift, width, k,
                               int(top == sp.key_bits), zb, own, keep, self._local(nb * 4),
                               scan, nxt), before, evs)
            state, nxt = nxt, state
            top = shift
        common = (x, xb, m, flip, chunk, gpr, state)
        if not keep:
            before = self._go(queue, "clt_tk_ties", (rows * gpr * wg,), (wg,),
                              (*common, own, scan), before, evs)
        if not sp.local_sort:  # the pads the global sort sorts last
            before = self._fill(queue, pk, np.zeros(1, sp.key_dtype), rows * kp * sp.key_bytes,
                                before, evs)
            before = self._fill(queue, pi, np.full(1, 0xFFFFFFFF, np.uint32), rows * kp * 4,
                                before, evs)
        before = self._go(queue, "clt_tk_collect", (rows * gpr * wg,), (wg,),
                          (*common, own, keep, width, k, kp, zb, pk, pi, scan), before, evs)
        if sp.local_sort:
            self._go(queue, "clt_tk_sort", (rows * wg,), (wg,),
                     (pk, pi, kp, k, x, xb, m, *out, ooff,
                      self._local(kp * sp.key_bytes), self._local(kp * 4)), before, evs)
            return
        size = 2
        while size <= kp:
            stride = size // 2
            while stride > 0:
                before = self._go(queue, "clt_tk_bitonic", (kp // 2, rows), None,
                                  (pk, pi, kp, size, stride), before, evs)
                stride //= 2
            size *= 2
        self._go(queue, "clt_tk_emit", (k, rows), None, (pi, kp, k, x, xb, m, *out, ooff),
                 before, evs)
