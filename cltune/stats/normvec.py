"""The L2 norm (`cltune.norm(x)`, ord None or 2, no axis) of a whole contiguous float32 array on
a CPU device, in vector registers (kernels/normvec.cl), for cltune.stats.api.

The expression path (cltune.stats.kernels' `norm2`: a double sum of squares per element) is
not vectorised by either CPU runtime (a floating-point reduction cannot be reassociated by the
compiler): 0.63x numpy.linalg.norm at 2^24 float32 on Debian's PoCL, 0.84x on Intel's runtime
(docs/logs/benchmarks-*.md). Here each of `items` work-items sums the squares of its own contiguous
chunk `lanes` floats at a time, converted to double vectors (`ACCUMULATORS` independent
ones), and a one-work-item kernel adds the chunks' sums and takes the root on the device, so a
call is as asynchronous as the expression path's (one chunk: one launch). The same numbers as
that path: squares of floats summed in double never overflow nor underflow, an infinity makes
+inf, a NaN NaN (numpy's); the float32 result as a 0-d (keepdims: all-ones) device array.

Served (`served`) on devices of type CPU (`DeviceInfo.type`) with fp64, for float32 only:
float64 keeps the expression path's scaled sum of squares (LAPACK's: its squares could overflow
or underflow a double), integers and float16 are not taken. Memory order does not matter to a
sum of squares: any C- or F-contiguous array is served. The program is built once per context
and device (`KERNELS`, a `cpuvec.Kernels`), after it ran right once on this fingerprint and
driver in the device's worker (`check`, through `cpuvec.vetted`; house rule 17); where it did
not, or does not build, the expression path serves, with a CltuneWarning.

The plan, from the device's info (`plan`, `lanes_for`): lanes = the device's native (or
preferred, whichever is wider) float vector width, a power of two in 4..16, within the health
check's cap for the double accumulators; items = compute units x ITEMS_PER_CU, fewer so that a
chunk holds MIN_CHUNK_BYTES (one chunk, one launch, below 256 KiB).

    >>> from cltune.stats import normvec
    >>> normvec.serves(x)             # True: cltune.norm(x) runs kernels/normvec.cl here
    >>> print(normvec.explain(queue, np.float32, 1 << 24))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.serving import Explanation
from cltune.core.shapes import empty_result
from cltune.device.info import DeviceInfo
from cltune.families.axis import short_rows
from cltune.opencl.build import BuildError
from cltune.opencl.events import in_order, pending
from cltune.opencl.kernel_args import setter
from cltune.opencl.pools import pool_for
from cltune.opencl.scalars import ScalarFactory, new_scalar
from cltune.stats import cpuvec
from cltune.stats.cpuvec import Built, Plan, partials, vector_width, warm_launch

#: the dtype served (float64 keeps the scaled sum of squares of cltune.stats.kernels)
DTYPE = np.dtype(np.float32)
#: work-items per compute unit (2^24 float32 on the 2-core EPYC host, kernel time: 2 to 8 per
#: CU within noise on both CPU runtimes, one work-item 1.2-1.7x slower)
ITEMS_PER_CU = 4
#: the least a chunk holds (2^20 float32 on that host, kernel time: one to eight chunks
#: within noise on PoCL, 1 chunk 1.5-3x slower than 2 on Intel's runtime)
MIN_CHUNK_BYTES = 1 << 18
#: CLT_NV_U: independent double-vector accumulators per work-item; one is bound by the fma
#: latency (2^20 float32 in one work-item, W=8: 2 accumulators 2x faster than 1 on PoCL, 4
#: 1.4x faster again; W=16: 4 within noise of 2 on PoCL, 1.1x faster on Intel's runtime)
ACCUMULATORS = 4

_F32 = np.dtype(np.float32)
_CHUNK_TYPES = (None, np.int64, np.int64, np.int64, None, np.int64, None, np.int64, np.int32)
_FINISH_TYPES = (None, np.int64, None, np.int64)


def lanes_for(dev: cl.Device, info: DeviceInfo) -> int:
    """Vector width: the device's native or preferred float width, whichever is wider, as a
    power of two in 4..16, within the health check's cap for its double accumulators."""
    return vector_width(dev, info, "float", 8)


def plan(n: int, lanes: int, compute_units: int) -> Plan:
    """The cut of n float32 elements (a `cpuvec.Plan` named normvec): compute_units x
    ITEMS_PER_CU chunks, fewer where a chunk would hold less than MIN_CHUNK_BYTES."""
    return cpuvec.cut("normvec", n, lanes, ACCUMULATORS, compute_units, _F32.itemsize,
                      per_cu=ITEMS_PER_CU, min_chunk_bytes=MIN_CHUNK_BYTES)


def served(x: cla.Array, q: cl.CommandQueue) -> Built | None:
    """The kernels that serve the L2 norm of every element of x on q, or None where the
    expression path serves (not a CPU, a dtype this does not take, vetting failed). x is C- or
    F-contiguous (cltune.stats.api checks)."""
    if x.dtype != DTYPE or x.offset % DTYPE.itemsize:
        return None
    return KERNELS.built(q, DTYPE)


def serves(x: cla.Array, queue: cl.CommandQueue | None = None) -> bool:
    """Whether `cltune.norm(x)` (ord None or 2, no axis) runs kernels/normvec.cl."""
    q = queue if queue is not None else x.queue
    return x.flags.forc and served(x, q) is not None


class Call:
    """The L2 norm of n float32 elements on q with kernels b, prepared: the plan, the queue's
    pool and order, what `norm` derives per call; cltune.stats.warm keeps one per (queue,
    size) for the warm call (`warm`: the result from a factory)."""

    __slots__ = ("b", "q", "n", "pl", "pool", "inq", "results")

    def __init__(self, b: Built, q: cl.CommandQueue, n: int, cut: Plan | None = None) -> None:
        self.b, self.q, self.n = b, q, n
        self.pl = cut or plan(n, b.lanes, b.compute_units)
        self.pool = pool_for(q)
        self.inq = in_order(q)
        self.results: ScalarFactory | None = None  # the warm call's, made at its first

    def launch(self, x: cla.Array, res: cla.Array) -> cla.Array:
        """Enqueue the norm of x into res (float32)."""
        b, q, pl, n, pool = self.b, self.q, self.pl, self.n, self.pool
        xoff = x.offset // 4
        roff = res.offset // 4
        wait = pending(x.events, in_order=self.inq) if x.events else None
        with b.lock:
            chunks = setter(b.chunks, _CHUNK_TYPES)
            # keyed launches: the scalars are this call's and the offsets' (a repeated call
            # sets only the buffers)
            if pl.items == 1:  # the chunk's sum is the whole: one launch takes the root
                ev = chunks.launch_keyed(q, (1,), (1,), (x.base_data, xoff, n, pl.chunk,
                                                         res.base_data, 0, res.base_data, roff,
                                                         1), (0, 4, 6), (self, xoff, roff), wait)
            else:
                part = partials(q, pool, 8 * pl.items)
                ev1 = chunks.launch_keyed(q, (pl.items,), (1,), (x.base_data, xoff, n,
                                                                pl.chunk, part, 0,
                                                                res.base_data, roff, 0),
                                          (0, 4, 6), (self, xoff, roff), wait)
                # an in-order queue runs the finish after the chunks (and hands the pooled
                # partials to nothing before it); an out-of-order one waits for them
                ev = setter(b.finish, _FINISH_TYPES).launch_keyed(
                    q, (1,), (1,), (part, pl.items, res.base_data, roff), (0, 2), (self, roff),
                    None if pool is not None else [ev1])
        res.events.append(ev)
        return res

    def warm(self, x: cla.Array, extra: tuple = ()) -> cla.Array | None:
        """`launch` into a fresh 0-d result (from x's allocator, else from the queue's pool: an
        in-order queue's); None where x's offset is not a whole element's (the expression path
        serves that). `extra`: the statistic's scalars (none)."""
        if x.offset % 4:
            return None
        if x.allocator is not None:
            return self.launch(x, new_scalar(self.q, _F32, x.allocator))
        f = self.results
        if f is None:
            f = self.results = ScalarFactory(self.q, _F32, self.pool)
        if self.pl.items == 1 and f.fast:
            # one launch whose kernel still holds this call's scalars (launch_keyed's warm
            # branch, the result made inline; ~0.3 us a call on PoCL)
            res, ev = warm_launch(self, self.b, f, self.q, self.inq, x, x.offset // 4,
                                  (4, 6))
            return res if ev is not None else self.launch(x, res)
        return self.launch(x, f())


def norm(b: Built, x: cla.Array, q: cl.CommandQueue, keepdims: bool, *,
         cut: Plan | None = None) -> cla.Array:
    """numpy.linalg.norm of every element of x (float32, as `served` took it; empty: 0),
    enqueued on q: a float32 array of shape () (keepdims: all ones) whose event is the last
    launch. `cut` overrides the plan (the vetting check's inputs)."""
    return call(b, x, q, keepdims, cut=cut)[0]


def call(b: Built, x: cla.Array, q: cl.CommandQueue, keepdims: bool, *,
         cut: Plan | None = None) -> tuple[cla.Array, Call]:
    """`norm`'s result and the prepared call that made it (for cltune.stats.warm)."""
    c = Call(b, q, x.size, cut)
    alloc = x.allocator if x.allocator is not None else c.pool
    shape = (1,) * x.ndim if keepdims else ()
    res = empty_result(q, shape, _F32, "C", alloc) if shape else new_scalar(q, _F32, alloc)
    return c.launch(x, res), c


#: along axis 0 of a C-ordered (rows, cols) block whose `cols` divides the lanes (1..16; 1: a
#: long row): at least this many elements a block go through the vector kernel, lane l always
#: holding column l % cols (clt_normvec_cols: the mean's sums, or the squares' for the L2
#: norm; clt_normvec_vcols: var's); at most COLS_BLOCKS blocks (outer) a call. The expression
#: path walked a work-item's rows a value at a time: mean of 2000003x4 float32 along 0 at
#: 0.41-0.59 of the 1-D sum's speed on both CPU runtimes (#40)
COLS_MIN = 1 << 16
COLS_BLOCKS = 64
_COLS_TYPES = (None, np.int64, np.int64, np.int64, np.int32, np.int32, None, np.int64)
_COLS_FINISH_TYPES = (None, np.int64, np.int64, np.int32, np.int32, np.int64, None, np.int64)


def takes_cols(b: Built | None, outer: int, r: int, inner: int) -> bool:
    """Whether `cols` (`var_cols`) serves `outer` C-ordered blocks of r rows of `inner` columns
    with b; inner 1: a few long rows along the last axis, each row a block of one column."""
    return (b is not None and b.cols is not None and 1 <= inner <= b.lanes
            and b.lanes % inner == 0 and 1 <= outer <= COLS_BLOCKS and r * inner >= COLS_MIN)


def _blocks(b: Built, x: cla.Array, q: cl.CommandQueue, outer: int, r: int, inner: int,
            res: cla.Array, part_bytes: int, kernels: tuple, types: tuple,
            chunk_args: Callable[..., tuple], fin_args: Callable[..., tuple]) -> cla.Array:
    """Each of x's `outer` blocks of r x inner elements cut as the 1-D call cuts them: the
    chunks' launch (`chunk_args(x, xoff, n, chunk, part, partoff)`), then the finish a
    work-item a column (`fin_args(part, partoff, parts, res, resoff)`) into res."""
    n = r * inner
    pl = plan(n, b.lanes, b.compute_units)
    xoff = x.offset // 4
    inq = in_order(q)
    wait = pending(x.events, in_order=inq) if x.events else None
    evs = []
    with b.lock:
        part = partials(q, pool_for(q), part_bytes * pl.items * inner * outer)
        chunks, fin = setter(kernels[0], types[0]), setter(kernels[1], types[1])
        roff = res.offset // 4
        for i in range(outer):
            poff = i * pl.items * inner
            ev1 = chunks.launch(q, (pl.items,), (1,), chunk_args(x.base_data, xoff + i * n, n,
                                                                  pl.chunk, part, poff), wait)
            # an in-order queue runs the finish after the chunks; else it waits for them
            evs.append(fin.launch(q, (inner,), (1,), fin_args(part, poff, pl.items,
                                                             res.base_data, roff + i * inner),
                                  None if inq else [ev1]))
    res.events.extend(evs[-1:] if inq else evs)
    return res


def cols(b: Built, x: cla.Array, q: cl.CommandQueue, square: bool, outer: int, r: int,
         inner: int, res: cla.Array) -> cla.Array:
    """The L2 norm (`square`) or the mean along axis 0 of each of x's `outer` C-ordered blocks
    of r rows (r >= 1) of `inner` columns into res (float32, outer x inner, contiguous): each
    chunk's column sums in double in scratch, then one work-item a column adds its chunks'
    sums in order."""
    sq = int(square)
    return _blocks(b, x, q, outer, r, inner, res, 8, (b.cols, b.cols_finish),
                   (_COLS_TYPES, _COLS_FINISH_TYPES),
                   lambda xb, xo, n, ch, part, po: (xb, xo, n, ch, inner, sq, part, po),
                   lambda part, po, items, rb, ro: (part, po, items, inner, sq, r, rb, ro))


_VCOLS_TYPES = (None, np.int64, np.int64, np.int64, np.int32, None, np.int64)
_VCOLS_FINISH_TYPES = (None, np.int64, np.int64, np.int32, np.float64, np.int32, None, np.int64)


def var_cols(b: Built, x: cla.Array, q: cl.CommandQueue, root: bool, ddof: float, outer: int,
             r: int, inner: int, res: cla.Array) -> cla.Array:
    """numpy.var (numpy.std with `root`) with `ddof` along axis 0 of each of x's `outer`
    C-ordered blocks of r rows (r >= 1) of `inner` columns into res (float32, outer x inner,
    contiguous): each chunk's (n, shift, sums) per column in scratch (clt_normvec_vcols),
    merged by Chan's formula a work-item a column."""
    rt, dd = int(root), float(ddof)
    return _blocks(b, x, q, outer, r, inner, res, 32, (b.vcols, b.vcols_finish),
                   (_VCOLS_TYPES, _VCOLS_FINISH_TYPES),
                   lambda xb, xo, n, ch, part, po: (xb, xo, n, ch, inner, part, po),
                   lambda part, po, items, rb, ro: (part, po, items, inner, dd, rt, rb, ro))


#: along the last axis of C-ordered rows of 2..ROWS_MAX elements, at least ROWS_MIN elements
#: in all (clt_normvec_rows: a work-item a row, the row in registers, reduced in double). The
#: expression path ran var along rows of 2..16 float32 4.1-8.4x slower on Intel's runtime and
#: 2.3-4.5x on PoCL, the mean of rows of 2..8 1.5-2.7x and 0.84-1.14x, the norm 1.13-1.83x and
#: 0.81-1.18x (#40; docs/logs/cpu-stat-rows-2026-12-07.txt, its back-to-back rerun)
ROWS_MAX = 16
ROWS_MIN = 1 << 16
#: the mean of rows of 9..16 kept the expression path: within noise of it on Intel's runtime,
#: 1.02-1.07x slower on PoCL (docs/logs/cpu-stat-rows-2026-12-07.txt)
MEAN_ROWS_MAX = 8
#: work-items a group (CLT_NV_RG): CPU compilers run neighbouring ones in vector lanes
ROWS_GROUP = 256
#: what clt_normvec_rows<kind><L> computes, by statistic: (kind, what)
ROWS_WHAT = {"mean": ("s", 0), "norm2": ("n", 1), "var": ("v", 2), "std": ("v", 3),
             "sum": ("s", 4)}
_ROWS_TYPES = (None, np.int64, np.int64, np.int32, np.float32, None, np.int64)


def takes_rows(b: Built | None, op: str, rows: int, length: int) -> bool:
    """Whether `rows` serves the statistic `op` of `rows` C-ordered rows of `length` elements
    along the last axis (the mean up to MEAN_ROWS_MAX)."""
    return (b is not None and (ROWS_WHAT[op][0], length) in b.rows_of
            and rows * length >= ROWS_MIN and (op != "mean" or length <= MEAN_ROWS_MAX))


def _launch_rows(b: Built, q: cl.CommandQueue, op: str, div: float, x: cl.Buffer, xoff: int,
                 nrows: int, length: int, out: cl.Buffer, outoff: int,
                 wait: Any) -> cl.Event:  # noqa: ANN401
    """clt_normvec_rows<kind><length> of `op` over nrows rows: a work-item a row."""
    kind, what = ROWS_WHAT[op]
    g = -(-max(nrows, 1) // ROWS_GROUP) * ROWS_GROUP
    with b.lock:
        return setter(b.rows_of[kind, length], _ROWS_TYPES).launch(
            q, (g,), (ROWS_GROUP,), (x, xoff, nrows, what, div, out, outoff), wait)


def rows(b: Built, x: cla.Array, q: cl.CommandQueue, op: str, ddof: float, nrows: int,
         length: int, res: cla.Array) -> cla.Array:
    """numpy's mean / L2 norm (`norm2`) / var / std (with `ddof`) of each of x's `nrows`
    C-ordered rows of `length` (2..ROWS_MAX) float32 elements into res (float32, nrows,
    contiguous)."""
    wait = pending(x.events, in_order=in_order(q)) if x.events else None
    res.events.append(_launch_rows(b, q, op, float(max(length - ddof, 0)), x.base_data,
                                   x.offset // 4, nrows, length, res.base_data,
                                   res.offset // 4, wait))
    return res


class _SumRows:
    """The axis family's float32 sums along short rows (cltune/families/axis/short_rows.py)
    with everything but the buffers decided: a prepared launch `(x, out, y, wait_for)`."""

    __slots__ = ("b", "q", "xoff", "rows", "length")

    def __init__(self, b: Built, q: cl.CommandQueue, xoff: int, rows: int, length: int) -> None:
        self.b, self.q, self.xoff, self.rows, self.length = b, q, xoff, rows, length

    def __call__(self, x: cl.Buffer, out: cl.Buffer, y: cl.Buffer | None = None,
                 wait_for: Any = None) -> list[cl.Event]:  # noqa: ANN401
        return [_launch_rows(self.b, self.q, "sum", float(self.length), x, self.xoff,
                             self.rows, self.length, out, 0, wait_for)]


def sum_rows(q: cl.CommandQueue, xoff: int, rows: int, length: int) -> _SumRows | None:
    """The prepared float32 sums of `rows` rows of `length` on q (short_rows' maker), or None
    below ROWS_MIN elements or where the kernels are not served on this driver."""
    if rows * length < ROWS_MIN:
        return None
    b = KERNELS.built(q, DTYPE)
    return _SumRows(b, q, xoff, rows, length) if takes_rows(b, "sum", rows, length) else None


def explain(queue: cl.CommandQueue, dtype: Any, n: int) -> Explanation | None:
    """What serves the L2 norm of n elements of dtype on the queue's device when
    kernels/normvec.cl does (its plan, level `builtin`: from the device's info), else None."""
    if np.dtype(dtype) != DTYPE:
        return None
    b = KERNELS.built(queue, DTYPE)
    if b is None:
        return None
    pl = plan(n, b.lanes, b.compute_units)
    return Explanation(n, pl, "builtin", "kernels/normvec.cl: the CPU L2 norm in vector "
                       "registers (squares summed in double), its plan from the device's info "
                       "(vetted on this driver)", None, "", "", None)


# ---- vetting -----------------------------------------------------------------------------
def _sample(rng: np.random.Generator, n: int, case: int) -> np.ndarray:
    """Check inputs: values whose squares overflow (case 1) or underflow (case 2) a float,
    an infinity (case 3), an infinity and a NaN (case 4), else plain normal values."""
    h = rng.standard_normal(n).astype(np.float32)
    if case == 1:
        h *= np.float32(1e30)
    elif case == 2:
        h *= np.float32(1e-30)
    elif case == 3:
        h[n // 2] = -np.inf
    elif case == 4:
        h[[n // 3, n - 1]] = (np.inf, np.nan)
    return h


def check(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
          lanes: int) -> str:
    """The vetting check (run in the device's worker by `isolation.vetting.checked`): build
    kernels/normvec.cl for lanes, run it on one and several chunks, tails, huge and tiny
    values, an infinity and a NaN, an offset view; '' when every result is the float64
    reference's, rounded (within 2 float32 ulps)."""
    try:
        b = KERNELS.compile(ctx, dev, info, DTYPE, lanes)
    except BuildError as e:
        return str(e)
    rng = np.random.default_rng(7)
    step = lanes * ACCUMULATORS
    cases = [(0, 1, 0), (1, 1, 0), (2, 1, 1), (lanes - 1, 1, 0), (lanes + 1, 1, 2),
             (4 * step + 3, 1, 0), (1031, 1, 3), (1031, 3, 1), (20011, 7, 2), (20011, 5, 4),
             (20011, 4, 0)]
    for n, items, case in cases:
        h = _sample(rng, n + 3, case)
        x = cla.to_device(queue, h)[3:]  # an offset view
        h = h[3:]
        chunk = -(-max(1, n) // items)
        chunk = -(-chunk // lanes) * lanes
        pl = Plan("normvec", lanes, ACCUMULATORS, -(-max(1, n) // chunk), chunk)
        got = float(norm(b, x, queue, False, cut=pl).get())
        with np.errstate(all="ignore"):
            want = float(np.float32(np.sqrt(np.sum(np.square(h.astype(np.float64))))))
        same = got == want if not np.isfinite(want) or want == 0 else \
            abs(got - want) <= 2 * float(np.spacing(np.float32(want)))
        if not same and not (np.isnan(got) and np.isnan(want)):
            return (f"wrong answer: the L2 norm of {n} float32 in {pl.items} chunk(s) gave "
                    f"{got!r}, the float64 reference {want!r}")
    for k, r, inner, case in ((1, 1031, 4, 3), (2, 3001, 2, 1), (1, 5003, min(lanes, 8), 4),
                              (1, 5, lanes, 2), (2, 4099, 1, 0)):  # along axis 0 (cols)
        h = _sample(rng, k * r * inner + 1, case)
        x = cla.to_device(queue, h)[1:].reshape(k, r, inner)  # blocks at an offset
        h = h[1:].reshape(k, r, inner).astype(np.float64)
        for square in (True, False):
            out = cla.empty(queue, (k, inner), _F32)
            got = cols(b, x, queue, square, k, r, inner, out).get().astype(np.float64)
            with np.errstate(all="ignore"):
                want = (np.sqrt(np.sum(h * h, axis=1)) if square else np.mean(h, axis=1))
                want = want.astype(np.float32).astype(np.float64)
                close = (got == want) | (np.isnan(got) & np.isnan(want)) | (
                    np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(np.float32)))
            if not close.all():
                what = "L2 norm" if square else "mean"
                return (f"wrong answer: the {what} along axis 0 of {k} x {r} x {inner} float32 "
                        f"gave {got.tolist()}, the float64 reference {want.tolist()}")
        for root, ddof in ((False, 0), (True, 1)):
            out = cla.empty(queue, (k, inner), _F32)
            got = var_cols(b, x, queue, root, ddof, k, r, inner, out).get().astype(np.float64)
            with np.errstate(all="ignore"):
                want = (np.std if root else np.var)(h, axis=1, ddof=ddof)
                want = want.astype(np.float32).astype(np.float64)
                close = (got == want) | (np.isnan(got) & np.isnan(want)) | (
                    np.abs(got - want) <= 4 * np.spacing(np.abs(want).astype(np.float32)))
            if not close.all():
                return (f"wrong answer: the {'std' if root else 'var'} along axis 0 of {k} x {r}"
                        f" x {inner} float32 gave {got.tolist()}, the float64 reference "
                        f"{want.tolist()}")
    for length in sorted({n for _, n in b.rows_of}):  # short rows: every length and kind
        nrows = ROWS_GROUP + 3
        h = _sample(rng, nrows * length + 1, 0)
        h[length * 5 + 1] = np.inf  # row 5 holds an infinity, row 7 a NaN
        h[length * 7 + 2] = np.nan
        x = cla.to_device(queue, h)[1:].reshape(nrows, length)
        h64 = h[1:].reshape(nrows, length).astype(np.float64)
        for op, ddof in (("mean", 0), ("norm2", 0), ("var", 0), ("std", 1), ("sum", 0)):
            out = cla.empty(queue, nrows, _F32)
            got = rows(b, x, queue, op, ddof, nrows, length, out).get().astype(np.float64)
            with np.errstate(all="ignore"):
                want = (np.mean(h64, axis=1) if op == "mean" else
                        np.sum(h64, axis=1) if op == "sum" else
                        np.sqrt(np.sum(h64 * h64, axis=1)) if op == "norm2" else
                        (np.var if op == "var" else np.std)(h64, axis=1, ddof=ddof))
                want = want.astype(np.float32).astype(np.float64)
                # a float sum's rounding (numpy's too): len ulps of the row's magnitude
                slack = 2 * length * float(np.finfo(np.float32).eps) * np.mean(
                    np.abs(h64), axis=1) if op in ("mean", "sum") else 0.0
                close = (got == want) | (np.isnan(got) & np.isnan(want)) | (
                    np.abs(got - want) <= 8 * np.spacing(np.abs(want).astype(np.float32))
                    + slack)
            if not close.all():
                bad = int(np.flatnonzero(~close)[0])
                return (f"wrong answer: the {op} along rows of {length} float32 gave "
                        f"{got[bad]!r} for row {bad}, the float64 reference {want[bad]!r}")
    return ""


#: the kernel file, its builds and their vetting (cltune.stats.cpuvec.Kernels)
KERNELS = cpuvec.Kernels("normvec", "NV", {DTYPE: 0}, ACCUMULATORS,
                         "the CPU L2 norm kernel", check,
                         lambda dev, info, _dt: lanes_for(dev, info),
                         typed=False, needs_fp64=True)

short_rows.register(sum_rows)  # the axis family's float32 sums along odd short rows
