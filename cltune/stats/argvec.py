"""`argmax`/`argmin` of a whole contiguous array on a CPU device, in vector registers
(kernels/argvec.cl), for cltune.stats.api.

The expression path (cltune.stats.kernels: a struct fold per element) is not vectorised by
either CPU runtime: 0.14x numpy.argmax at 2^20 float32 and 0.35x at 2^24 on Debian's PoCL
(docs/logs/benchmarks-*.md). Here each of `items` work-items scans its own contiguous chunk `lanes`
elements at a time (a vector of the best values and one of their block numbers, a compare and
two selects per block, `ACCUMULATORS` independent pairs), and a one-work-item kernel combines
the chunks' winners on the device, so a call is as asynchronous as the expression path's (one
chunk: one launch). numpy's semantics: the first occurrence wins, a NaN wins (the first NaN),
the int64 index as a 0-d (keepdims: all-ones) device array; argmin is argmax of the
order-reversed values (see the kernel).

Served (`served`) on devices of type CPU (`DeviceInfo.type`), for the dtypes of
cltune.stats.kernels.DTYPES (float64 where the device has fp64; bool arrives as uint8), when
memory order is C order (C-contiguous, or one axis longer than 1: an F-ordered n-D array keeps
cltune.stats.whole's C-order kernel). The program is built once per context, device and dtype
(`KERNELS`, a `cpuvec.Kernels`), after it ran right once on this fingerprint and driver in the
device's worker (`check`, through `isolation.vetting.checked`; house rule 17); where it did
not, or does not build, the expression path serves, with a CltuneWarning.

The plan, from the device's info (`plan`, `lanes_for`): lanes = the device's native (or
preferred, whichever is wider) vector width of the compared lane type, a power of two in
4..16, within the health check's vector cap; items = compute units x ITEMS_PER_CU, fewer so
that a chunk holds MIN_CHUNK_BYTES (one chunk, one launch, below 256 KiB).

    >>> from cltune.stats import argvec
    >>> argvec.serves(x)              # True: cltune.argmax(x) runs kernels/argvec.cl here
    >>> print(argvec.explain(queue, np.float32, 1 << 24))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.serving import Explanation
from cltune.core.shapes import empty_result
from cltune.device.info import DeviceInfo
from cltune.opencl.build import BuildError
from cltune.opencl.events import in_order, pending
from cltune.opencl.kernel_args import setter
from cltune.opencl.pools import pool_for
from cltune.opencl.scalars import ScalarFactory, new_scalar
from cltune.stats import cpuvec
from cltune.stats.cpuvec import Built, Plan, partials, vector_width, warm_launch
from cltune.stats.whole import needs_c_order

#: CLT_AV_TYPE of each dtype served (kernels/argvec.cl)
TYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
     np.int64, np.uint64))}
#: work-items per compute unit (2^24 float32 on the 2-core EPYC host: 2-8 per CU within noise
#: on both CPU runtimes, 1 per CU 1.1-1.4x slower, one work-item 1.3-2x slower)
ITEMS_PER_CU = 4
#: the least a chunk holds (2^20 float32 on that host: chunks of 256 KiB to 1 MiB within
#: noise on both runtimes, 0.9-1.0x of one chunk; 2^22: 4 chunks 1.7-2.4x faster than 1)
MIN_CHUNK_BYTES = 1 << 18
#: CLT_AV_U: independent (values, block numbers) pairs per work-item; one pair is bound by
#: the compare -> select latency (2^20 float32 on one work-item: 2 pairs 2.4x faster than
#: one with the NaN test in the chain)
ACCUMULATORS = 2
#: block numbers live in 32-bit lanes for 32-bit values: a chunk holds fewer blocks
MAX_BLOCKS = 1 << 30

_INT64 = np.dtype(np.int64)
_CHUNK_TYPES = {4: (None, np.int64, np.int64, np.int64, np.int32, None, np.int64),
                8: (None, np.int64, np.int64, np.int64, np.int64, None, np.int64)}
_FINISH_TYPES = {4: (None, np.int64, np.int64, np.int32, None, None, np.int64),
                 8: (None, np.int64, np.int64, np.int64, None, None, np.int64)}


def lane_bytes(dt: np.dtype) -> int:
    """Bytes of a lane values are compared in: small integers are widened to int."""
    return max(4, dt.itemsize)


def flip_argmin(dt: np.dtype) -> int:
    """kernels/argvec.cl's `flip` of argmin: a float's sign bit, every bit of an integer."""
    if dt.kind == "f":
        return -(1 << (8 * lane_bytes(dt) - 1))
    return -1


def lanes_for(dev: cl.Device, info: DeviceInfo, dt: np.dtype) -> int:
    """Vector width: the device's native or preferred width of the compared lane type,
    whichever is wider (Intel's CPU runtime prefers 1 but is natively 16 wide), as a power of
    two in 4..16, within the health check's cap (`DeviceInfo.vector_cap`)."""
    kind = {(4, "f"): "float", (8, "f"): "double", (4, "i"): "int", (8, "i"): "long"}[
        (lane_bytes(dt), "f" if dt.kind == "f" else "i")]
    return vector_width(dev, info, kind, lane_bytes(dt))


def plan(n: int, lanes: int, compute_units: int, itemsize: int) -> Plan:
    """The cut of n elements (n >= 1; a `cpuvec.Plan` named argvec): compute_units x
    ITEMS_PER_CU chunks, fewer where a chunk would hold less than MIN_CHUNK_BYTES."""
    return cpuvec.cut("argvec", n, lanes, ACCUMULATORS, compute_units, itemsize,
                      per_cu=ITEMS_PER_CU, min_chunk_bytes=MIN_CHUNK_BYTES,
                      max_blocks=MAX_BLOCKS)


def served(x: cla.Array, q: cl.CommandQueue) -> Built | None:
    """The kernels that serve argmax/argmin of every element of x on q, or None where the
    expression path serves (not a CPU, a dtype or layout this does not take, vetting failed).
    x is contiguous (cltune.stats.api checks) and not bool (viewed as uint8 there)."""
    dt = x.dtype
    if dt not in TYPE_CODES or x.offset % dt.itemsize or needs_c_order(x):
        return None
    return KERNELS.built(q, dt)


def serves(x: cla.Array, queue: cl.CommandQueue | None = None) -> bool:
    """Whether `cltune.argmax(x)` / `cltune.argmin(x)` (no axis) run kernels/argvec.cl."""
    q = queue if queue is not None else x.queue
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    return x.flags.forc and served(x, q) is not None


class Call:
    """argmax (largest) / argmin of n elements on q with kernels b, prepared: the plan, the
    queue's pool and order, what `arg` derives per call; cltune.stats.warm keeps one per
    (queue, dtype, size) for the warm call (`warm`: the result from a factory)."""

    __slots__ = ("b", "q", "n", "pl", "pool", "inq", "flip", "types", "results")

    def __init__(self, b: Built, q: cl.CommandQueue, n: int, largest: bool,
                 cut: Plan | None = None) -> None:
        self.b, self.q, self.n = b, q, n
        self.pl = cut or plan(n, b.lanes, b.compute_units, b.dtype.itemsize)
        self.pool = pool_for(q)
        self.inq = in_order(q)
        self.flip = 0 if largest else flip_argmin(b.dtype)
        lane = lane_bytes(b.dtype)
        self.types = (_CHUNK_TYPES[lane], _FINISH_TYPES[lane])
        self.results: ScalarFactory | None = None  # the warm call's, made at its first

    def launch(self, x: cla.Array, res: cla.Array) -> cla.Array:
        """Enqueue the index of x's extreme into res (int64, offset a multiple of 8)."""
        b, q, pl, n = self.b, self.q, self.pl, self.n
        flip, pool = self.flip, self.pool
        xoff = x.offset // b.dtype.itemsize
        wait = pending(x.events, in_order=self.inq) if x.events else None
        with b.lock:
            chunks = setter(b.chunks, self.types[0])
            # keyed launches: the scalars are this call's and the offsets' (n, chunk, flip
            # and items fixed per Call), so a repeated call sets only the buffers
            roff = res.offset // 8
            if pl.items == 1:  # the chunk's winner is the answer: one launch
                ev = chunks.launch_keyed(q, (1,), (1,), (x.base_data, xoff, n, pl.chunk, flip,
                                                         res.base_data, roff), (0, 5),
                                         (self, xoff, roff), wait)
            else:
                part = partials(q, pool, 8 * pl.items)
                ev1 = chunks.launch_keyed(q, (pl.items,), (1,), (x.base_data, xoff, n,
                                                                pl.chunk, flip, part, 0),
                                          (0, 5), (self, xoff), wait)
                # an in-order queue runs the finish after the chunks (and hands the pooled
                # partials to nothing before it); an out-of-order one waits for them
                ev = setter(b.finish, self.types[1]).launch_keyed(
                    q, (1,), (1,), (x.base_data, xoff, pl.items, flip, part, res.base_data,
                                    roff), (0, 4, 5), (self, xoff, roff),
                    None if pool is not None else [ev1])
        res.events.append(ev)
        return res

    def warm(self, x: cla.Array, extra: tuple = ()) -> cla.Array | None:
        """`launch` into a fresh 0-d result (from x's allocator, else from the queue's pool: an
        in-order queue's); None where x's offset is not a whole element's (the expression path
        serves that). `extra`: the statistic's scalars (none)."""
        isz = self.b.dtype.itemsize
        if x.offset % isz:
            return None
        if x.allocator is not None:
            return self.launch(x, new_scalar(self.q, _INT64, x.allocator))
        f = self.results
        if f is None:
            f = self.results = ScalarFactory(self.q, _INT64, self.pool)
        if self.pl.items == 1 and f.fast:
            # one launch whose kernel still holds this call's scalars (launch_keyed's warm
            # branch, the result made inline; ~0.3 us a call on PoCL)
            res, ev = warm_launch(self, self.b, f, self.q, self.inq, x, x.offset // isz,
                                  (5,))
            return res if ev is not None else self.launch(x, res)
        return self.launch(x, f())


#: along rows (cltune.argmax(x, axis=-1) of C-ordered rows): at most this many rows, each of
#: at least ROW_MIN elements, go through the vector kernel, a chunks launch a row and one
#: launch for every row's winner (8 x 2^20 float32 on PoCL: 5.0 ms through the expression
#: path, a struct fold per element, against numpy's 1.0; docs/logs/benchmarks-*.md)
ROWS_MAX = 64
ROW_MIN = 1 << 16
_ROWS_TYPES = {4: (None, np.int64, np.int64, np.int64, np.int32, None, None, np.int64),
               8: (None, np.int64, np.int64, np.int64, np.int64, None, None, np.int64)}


def takes_rows(b: Built | None, outer: int, r: int) -> bool:
    """Whether `rows` serves `outer` contiguous rows of `r` elements with build b."""
    return b is not None and b.rows is not None and 1 <= outer <= ROWS_MAX and r >= ROW_MIN


def rows(b: Built, x: cla.Array, q: cl.CommandQueue, largest: bool, outer: int, r: int,
         res: cla.Array) -> cla.Array:
    """argmax (largest) / argmin of each of x's `outer` rows of `r` elements (C order, r >= 1)
    into res (int64, `outer` elements, contiguous): each row cut as the 1-D call cuts r
    elements (its chunks' winners in scratch), then one launch picks every row's winner."""
    c = Call(b, q, r, largest)
    pl = c.pl
    xoff = x.offset // b.dtype.itemsize
    wait = pending(x.events, in_order=c.inq) if x.events else None
    lane = lane_bytes(b.dtype)
    with b.lock:
        chunks = setter(b.chunks, c.types[0])
        part = partials(q, c.pool, 8 * pl.items * outer)
        evs = [chunks.launch(q, (pl.items,), (1,), (x.base_data, xoff + i * r, r, pl.chunk,
                                                    c.flip, part, i * pl.items), wait)
               for i in range(outer)]
        # an in-order queue runs the winners' launch after the chunks; else it waits for them
        ev = setter(b.rows, _ROWS_TYPES[lane]).launch(
            q, (outer,), (1,), (x.base_data, xoff, r, pl.items, c.flip, part, res.base_data,
                                res.offset // 8), None if c.inq else evs)
    res.events.append(ev)
    return res


#: along axis 0 of a C-ordered (rows, cols) block whose `cols` divides the lanes (2..16): at
#: least this many elements a block go through the vector kernel, its lane l always holding
#: column l % cols (clt_argvec_cols); at most ROWS_MAX blocks (outer) a call. The expression
#: path walked a work-item's rows a value and an index at a time: 2000003x4 float32 along 0
#: on Debian's PoCL 4.9-7.0 ms against 1.7-2.2 for the 1-D sum of the same array (#40)
COLS_MIN = 1 << 16
_COLS_TYPES = {4: (None, np.int64, np.int64, np.int64, np.int32, np.int32, None, np.int64),
               8: (None, np.int64, np.int64, np.int64, np.int64, np.int32, None, np.int64)}
_COLS_FINISH_TYPES = {4: (None, np.int64, np.int64, np.int32, np.int32, None, np.int64, None,
                          np.int64),
                      8: (None, np.int64, np.int64, np.int64, np.int32, None, np.int64, None,
                          np.int64)}


def takes_cols(b: Built | None, outer: int, r: int, inner: int) -> bool:
    """Whether `cols` serves `outer` C-ordered blocks of r rows of `inner` columns with b."""
    return (b is not None and b.cols is not None and 2 <= inner <= b.lanes
            and b.lanes % inner == 0 and 1 <= outer <= ROWS_MAX and r * inner >= COLS_MIN)


def cols(b: Built, x: cla.Array, q: cl.CommandQueue, largest: bool, outer: int, r: int,
         inner: int, res: cla.Array) -> cla.Array:
    """argmax (largest) / argmin along axis 0 of each of x's `outer` C-ordered blocks of r
    rows of `inner` columns into res (int64, outer x inner, contiguous): each block cut as the
    1-D call cuts its r x inner elements (each chunk's winner per column in scratch), then one
    work-item a column picks its winner's row."""
    c = Call(b, q, r * inner, largest)
    pl = c.pl
    n = r * inner
    xoff = x.offset // b.dtype.itemsize
    wait = pending(x.events, in_order=c.inq) if x.events else None
    lane = lane_bytes(b.dtype)
    evs = []
    with b.lock:
        part = partials(q, c.pool, 8 * pl.items * inner * outer)
        chunks = setter(b.cols, _COLS_TYPES[lane])
        fin = setter(b.cols_finish, _COLS_FINISH_TYPES[lane])
        roff = res.offset // 8
        for i in range(outer):
            poff = i * pl.items * inner
            ev1 = chunks.launch(q, (pl.items,), (1,), (x.base_data, xoff + i * n, n, pl.chunk,
                                                        c.flip, inner, part, poff), wait)
            # an in-order queue runs the finish after the chunks; else it waits for them
            evs.append(fin.launch(q, (inner,), (1,), (x.base_data, xoff + i * n, pl.items,
                                                      c.flip, inner, part, poff,
                                                      res.base_data, roff + i * inner),
                                  None if c.inq else [ev1]))
    res.events.extend(evs[-1:] if c.inq else evs)
    return res


def arg(b: Built, x: cla.Array, q: cl.CommandQueue, largest: bool, keepdims: bool, *,
        cut: Plan | None = None) -> cla.Array:
    """numpy.argmax (largest) / numpy.argmin of every element of x (non-empty, as `served`
    took it) in memory order, enqueued on q: an int64 array of shape () (keepdims: all ones)
    whose event is the last launch. `cut` overrides the plan (the vetting check's inputs)."""
    return call(b, x, q, largest, keepdims, cut=cut)[0]


def call(b: Built, x: cla.Array, q: cl.CommandQueue, largest: bool, keepdims: bool, *,
         cut: Plan | None = None) -> tuple[cla.Array, Call]:
    """`arg`'s result and the prepared call that made it (for cltune.stats.warm)."""
    c = Call(b, q, x.size, largest, cut)
    alloc = x.allocator if x.allocator is not None else c.pool
    shape = (1,) * x.ndim if keepdims else ()
    res = empty_result(q, shape, _INT64, "C", alloc) if shape else new_scalar(q, _INT64, alloc)
    return c.launch(x, res), c


def explain(queue: cl.CommandQueue, dtype: Any, n: int) -> Explanation | None:
    """What serves argmax/argmin of n elements of dtype on the queue's device when
    kernels/argvec.cl does (its plan, level `builtin`: from the device's info), else None."""
    dt = np.dtype(dtype)
    dt = np.dtype(np.uint8) if dt == np.bool_ else dt
    if dt not in TYPE_CODES:
        return None
    b = KERNELS.built(queue, dt)
    if b is None:
        return None
    pl = plan(max(1, n), b.lanes, b.compute_units, dt.itemsize)
    return Explanation(n, pl, "builtin", "kernels/argvec.cl: the CPU arg-reduction in vector "
                       "registers, its plan from the device's info (vetted on this driver)",
                       None, "", "", None)


# ---- vetting -----------------------------------------------------------------------------
def _sample(rng: np.random.Generator, dt: np.dtype, n: int, case: int) -> np.ndarray:
    """Check inputs: ties of both extremes (the first must win), the type's limits, and for
    floats infinities and NaNs (case 2: two NaNs, the first must win)."""
    if dt.kind == "f":
        h = rng.standard_normal(n).astype(dt)
        if n > 8:
            h[[n // 5, n - 2]] = np.inf if case == 1 else h.max() + 1
            h[[n // 3, n - 1]] = -np.inf if case == 1 else h.min() - 1
        if case == 2:
            h[[n // 2, n - 1]] = np.nan
        return h
    info = np.iinfo(dt)
    h = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if n > 8:
        h[[n // 5, n - 2]] = info.max
        h[[n // 3, n - 1]] = info.min
    return h


def check(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
          dtype: str, lanes: int) -> str:
    """The vetting check (run in the device's worker by `isolation.vetting.checked`): build
    kernels/argvec.cl for dtype and lanes, run argmax and argmin on one and several chunks,
    tails, ties, limits, infinities and NaNs, an offset view; '' when every index is numpy's."""
    dt = np.dtype(dtype)
    try:
        b = KERNELS.compile(ctx, dev, info, dt, lanes)
    except BuildError as e:
        return str(e)
    rng = np.random.default_rng(7)
    step = lanes * ACCUMULATORS
    cases = [(1, 1, 0), (2, 1, 0), (lanes - 1, 1, 0), (lanes + 1, 1, 2), (4 * step + 3, 1, 1),
             (1031, 1, 2), (1031, 3, 0), (20011, 7, 1), (20011, 5, 2)]
    for n, items, case in cases:
        h = _sample(rng, dt, n + 3, case)
        x = cla.to_device(queue, h)[3:]  # an offset view
        h = h[3:]
        chunk = -(-n // items)
        chunk = -(-chunk // lanes) * lanes
        pl = Plan("argvec", lanes, ACCUMULATORS, -(-n // chunk), chunk)
        for largest in (True, False):
            got = int(arg(b, x, queue, largest, False, cut=pl).get())
            want = int(np.argmax(h) if largest else np.argmin(h))
            if got != want:
                what = "argmax" if largest else "argmin"
                return (f"wrong answer: {what} of {n} {dt.name} in {pl.items} chunk(s) gave "
                        f"{got}, numpy {want}")
    for k, n, case in ((3, 1031, 2), (2, 20011, 1)):  # along rows (clt_argvec_rows)
        h = _sample(rng, dt, k * n + 1, case)
        x = cla.to_device(queue, h)[1:].reshape(k, n)  # rows at an offset
        h = h[1:].reshape(k, n)
        for largest in (True, False):
            out = cla.empty(queue, (k,), _INT64)
            got = rows(b, x, queue, largest, k, n, out).get()
            want = np.argmax(h, axis=1) if largest else np.argmin(h, axis=1)
            if not np.array_equal(got, want):
                what = "argmax" if largest else "argmin"
                return f"wrong answer: {what} along {k} rows of {n} {dt.name}: {got}, numpy {want}"
    for k, r, inner, case in ((1, 1031, 4, 2), (2, 3001, 2, 1), (1, 5003, min(lanes, 8), 2),
                              (1, 5, lanes, 0)):  # along axis 0 (clt_argvec_cols)
        h = _sample(rng, dt, k * r * inner + 1, case)
        x = cla.to_device(queue, h)[1:].reshape(k, r, inner)  # blocks at an offset
        h = h[1:].reshape(k, r, inner)
        for largest in (True, False):
            out = cla.empty(queue, (k, inner), _INT64)
            got = cols(b, x, queue, largest, k, r, inner, out).get()
            want = np.argmax(h, axis=1) if largest else np.argmin(h, axis=1)
            if not np.array_equal(got, want):
                what = "argmax" if largest else "argmin"
                return (f"wrong answer: {what} along axis 0 of {k} x {r} x {inner} {dt.name}: "
                        f"{got.tolist()}, numpy {want.tolist()}")
    return ""


#: the kernel file, its builds and their vetting (cltune.stats.cpuvec.Kernels)
KERNELS = cpuvec.Kernels("argvec", "AV", TYPE_CODES, ACCUMULATORS,
                         "the CPU argmax/argmin kernel", check, lanes_for)
