"""`cltune.bincount` and `cltune.histogram`: numpy's semantics on the device (device arrays in
and out; numpy arrays uploaded to `queue`).

    >>> counts = cltune.bincount(x)                       # int64, max(x) + 1 bins
    >>> hist, edges = cltune.histogram(y, bins=256, range=(0.0, 1.0))

Each call reads the input once for its histogram (kernels/hist.cl: sub-histograms in __local
memory, or a work-item's own on CPUs, merged with atomics) after, where numpy needs them, a
min/max reduction (histogram's automatic range; bincount's length with weights or axis=)
whose two values are read back. A plain bincount finds its min and max in the launch that
counts (`_bincount_once`: the values below a guessed length counted, the rest counted again
only when the guess was short). The kernels a call launches ran right once on this device and
driver in the device's worker first (`kernel.check`); the config is the device's builtin one
for the bin count (`defaults.builtin_config`), else the safest.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from math import copysign
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.family import entry
from cltune.core.ops import DTYPES
from cltune.core.shapes import empty_result
from cltune.device.select import info_for
from cltune.families.hist.family import HistVariant
from cltune.families.hist.kernel import TYPE_CODES, sums_in_double
from cltune.families.hist.launch import UniformBins
from cltune.families.hist.serve import HistEngine, HistExplanation
from cltune.opencl.caches import ContextCache
from cltune.opencl.copies import copy_buffer
from cltune.opencl.events import pending, waits_on
from cltune.opencl.pools import pool_for
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scalars import ResultFactory

__all__ = ["Histogrammer", "bincount", "explain", "get_histogrammer", "histogram",
           "unique_counts"]

_engines: ContextCache[HistEngine] = ContextCache()
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def engine(q: cl.CommandQueue, variant: HistVariant, db: str | None) -> HistEngine:
    """The serving engine of a variant on q's device (one per context, device and database)."""
    return _engines.get(q.context, (q.device.int_ptr, variant, db),
                        lambda: HistEngine(q.context, q.device, info_for(q.device), variant, db))


def explain(queue: cl.CommandQueue, kind: str, dtype: Any, n: int, nbins: int,
            weights: Any = None, *, db: str | None = None) -> HistExplanation:
    """Which config serves `kind` (bincount, histogram) of n elements of dtype in nbins bins
    on the queue's device, and where it came from (database, builtin, safest)."""
    w = np.dtype(weights) if weights is not None else None
    return engine(queue, HistVariant(kind, np.dtype(dtype), w), db).served(n, nbins)[1]


def _device_array(x: Any, queue: cl.CommandQueue | None, what: str,
                  ) -> tuple[cl.CommandQueue, cla.Array]:
    if isinstance(x, cla.Array):
        q = queue or x.queue
        if q is None:
            raise TypeError(f"{what}: the array has no queue; pass queue=")
        if x.size and not x.flags.forc:
            raise ValueError(f"{what}: non-contiguous arrays are not supported; pass a "
                             "contiguous copy")
        return q, x
    if isinstance(x, (np.ndarray, list, tuple)):
        if queue is None:
            raise TypeError(f"{what}: a host array needs queue= (the device to count on)")
        return queue, cla.to_device(queue, np.ascontiguousarray(x))
    raise TypeError(f"{what} takes a pyopencl Array or a numpy array, not {type(x).__name__}")


def _flat(x: cla.Array) -> cla.Array:
    """x's elements in memory order, 1-D (a histogram does not depend on their order; x's
    weights are flattened in the same order: `_same_order`)."""
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    if x.ndim == 1:
        return x  # (a reshape makes a new Array: ~30 us on the H200's host)
    if not x.flags.c_contiguous:
        x = x.T  # F order: the transpose is C order, the same memory
    return x.reshape(x.size)


def _same_order(x: cla.Array, w: cla.Array, q: cl.CommandQueue) -> cla.Array:
    """w laid out as x (weights pair with the elements of the same index)."""
    if x.ndim < 2 or x.flags.c_contiguous == w.flags.c_contiguous:
        return w
    h = w.get(queue=q)
    order = "C" if x.flags.c_contiguous else "F"
    return cla.to_device(q, np.asarray(h, order=order).copy(order=order))


def _extremes(q: cl.CommandQueue, x: cla.Array) -> tuple[Any, Any]:
    """(min, max) of x as numpy scalars of its dtype (NaN propagates), read back together."""
    if x.dtype.name in DTYPES:
        reduce_api = entry("reduce", "api")  # another family: through its descriptor
        lo = reduce_api.get_reducer(q, "min", x.dtype)(x)
        hi = reduce_api.get_reducer(q, "max", x.dtype)(x)
    else:  # 8- and 16-bit integers: pyopencl's reductions (no NaN to see)
        lo, hi = cla.min(x, queue=q), cla.max(x, queue=q)
    # both read back behind one wait (each get() would wait for the queue on its own)
    host = np.empty(2, lo.dtype)
    evs = [cl.enqueue_copy(q, host[i:i + 1], a.base_data, src_offset=a.offset,
                           is_blocking=False, wait_for=waits_on(q, a.events))
           for i, a in enumerate((lo, hi))]
    cl.wait_for_events(evs)
    return host[0], host[1]


#: the bin count whose served launcher finds bincount's min and max (any build of the variant
#: has the kernel; this one is the class most calls have)
EXTREMES_BINS = 256


def _int_extremes(q: cl.CommandQueue, x: cla.Array, db: str | None) -> tuple[Any, Any]:
    """(min, max) of a non-empty 1-D integer array in one pass of the histogram program's
    `clt_hist_extremes` (vetted with it), the groups' pairs read back together."""
    la = engine(q, HistVariant("bincount", x.dtype), db).served(x.size, EXTREMES_BINS)[0]
    return la.extremes(q, x, 0, x.size, wait_for=waits_on(q, x.events))


def _check_bincount_range(lo: Any, hi: Any) -> None:
    """numpy's refusals of bincount's values: negative ones, and (uint64) ones past int64."""
    if lo < 0:
        raise ValueError(f"bincount: x must have no negative elements (its minimum is {int(lo)})")
    if int(hi) > np.iinfo(np.int64).max:
        raise ValueError(f"bincount: x's values must fit int64 (numpy casts them; its maximum "
                         f"is {int(hi)})")


#: bincount's first guess of its length (bins counted before the largest value is known)
ONCE_BINS = 256
#: the longest guess: a call whose last length was longer (8 MB of counts) finds its min and
#: max first (a guess is a buffer allocated before the data is seen)
MAX_ONCE_BINS = 1 << 20
#: the bins bincount counted last, per (context, dtype): the next call's guess (`_bincount_once`)
_once_bins: ContextCache[dict] = ContextCache()


def _bincount_once(q: cl.CommandQueue, x: cla.Array, minlength: int, db: str | None,
                   ) -> cla.Array | tuple[Any, Any] | None:
    """bincount in one read of x (counts, 1-D): the values below a guessed length counted and,
    in the same launch, x's extremes found (`HistLauncher.count_once`); the result is the
    first max(x) + 1 (or minlength) of them. Returns that Array; or x's (min, max) when the
    guess was too short (then counted again with the length they give) or x has negative
    values; None where the served config cannot count in one launch or the guess would pass
    MAX_ONCE_BINS. The guess is the last length a call of this context and dtype needed
    (rounded up to a power of two), at least ONCE_BINS and minlength."""
    guesses = _once_bins.get(q.context, "bincount", dict)
    key = x.dtype.str
    cap = max(ONCE_BINS, minlength, guesses.get(key, 0))
    cap = 1 << (cap - 1).bit_length()
    if cap > MAX_ONCE_BINS:
        guesses.pop(key, None)  # the next call guesses afresh
        return None
    la = engine(q, HistVariant("bincount", x.dtype), db).served(x.size, cap)[0]
    if not la.one_pass(cap, x.size):
        guesses.pop(key, None)  # not kept: the next call guesses afresh
        return None
    pool = x.allocator or pool_for(q)  # None on an out-of-order queue
    buf = pool(cap * 8) if pool is not None else \
        cl.Buffer(q.context, cl.mem_flags.READ_WRITE, cap * 8)
    ev, lo, hi = la.count_once(q, x, x.size, cap, buf, wait_for=waits_on(q, x.events))
    need = max(minlength, int(hi) + 1) if lo >= 0 else 0
    if lo >= 0:
        guesses[key] = need
    if lo < 0 or need > cap:
        return lo, hi
    out = empty_result(q, (need,), _I64, "C", pool, data=buf)
    out.events.append(ev)
    return out


def _run(q: cl.CommandQueue, variant: HistVariant, db: str | None, x: cla.Array,
         w: cla.Array | None, nbins: int, bins: UniformBins | None,
         kept: tuple[int, ...] = (), shift: int = 0) -> cla.Array:
    """The histogram of x's elements (one), or of each of its prod(kept) rows (shape kept +
    (nbins,)); bincount's bin of value v is v - shift."""
    rows = int(np.prod(kept)) if kept else 1
    la, _ = engine(q, variant, db).served(x.size, nbins)
    out = empty_result(q, (*kept, nbins), la.spec.out_dtype, "C", x.allocator or pool_for(q))
    if out.size == 0:
        return out
    evs = la.run(q, x, 0, x.size, w, 0, nbins, bins, out,
                 wait_for=waits_on(q, x.events, w.events if w is not None else None),
                 rows=rows, shift=shift)
    out.events.append(evs[-1])
    return out


def _along(q: cl.CommandQueue, x: cla.Array, axis: Any, what: str,
           ) -> tuple[cla.Array, tuple[int, ...]]:
    """x's slices along `axis` as contiguous rows, flattened, and the kept shape (numpy's
    order): the axis contiguous in memory is a view; otherwise a copy made on the host."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{what}: axis must be an int, not {type(axis).__name__}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{what}: axis {axis} is out of bounds for a {x.ndim}-D array")
    axis = int(axis) % x.ndim
    kept = tuple(d for i, d in enumerate(x.shape) if i != axis)
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    if x.flags.c_contiguous and axis == x.ndim - 1:
        return x.reshape(x.size), kept
    if x.ndim == 2 and x.flags.f_contiguous and axis == 0:
        return x.T.reshape(x.size), kept  # the columns are x.T's rows, the same memory
    h = np.ascontiguousarray(np.moveaxis(x.get(queue=q), axis, -1))
    return cla.to_device(q, h.reshape(h.size)), kept


#: edges arrays kept on the device per context (the latest ones; `_edges_array`)
_EDGES_KEPT = 16
_edges_kept: ContextCache[dict] = ContextCache()


def _kept_edges(q: cl.CommandQueue, edges: np.ndarray) -> cla.Array:
    """The edges on the device, kept per context (the latest _EDGES_KEPT): never handed out,
    only copied from."""
    kept = _edges_kept.get(q.context, "edges", dict)
    key = (edges.dtype.str, edges.tobytes())
    src = kept.get(key)
    if src is None:
        if len(kept) >= _EDGES_KEPT:
            kept.clear()
        src = kept[key] = cla.to_device(q, edges, allocator=pool_for(q))
    return src


def _edges_array(q: cl.CommandQueue, edges: np.ndarray) -> cla.Array:
    """The edges as a new device array, copied on the device from the same edges kept there
    (`_kept_edges`): an upload from the host each call cost ~190 us on NVIDIA's driver (its
    copy from pageable memory waits for the queue)."""
    src = _kept_edges(q, edges)
    out = empty_result(q, src.shape, src.dtype, "C", src.allocator)
    out.add_event(copy_buffer(q, src.base_data, out.base_data, src.nbytes))
    return out


#: warm `histogram(x, bins, range)` calls (an int of bins, a range, no weights, density or
#: axis): per (queue, dtype, size, bins, range as given, db) the launches prepared
#: (HistLauncher.prepared), the result's type and the kept edges. The key (made inline in
#: `histogram`; TypeError/ValueError for a range that is not two numbers) holds the range's
#: types and signs: they decide the bins' dtype and the edges' bits
_warm: PreparedCalls = PreparedCalls()
_new = object.__new__


def _prepare(q: cl.CommandQueue, variant: HistVariant, db: str | None, n: int, nb: int,
             bins: UniformBins, edges: np.ndarray) -> Callable[..., Any] | None:
    """The warm call of a histogram of n elements (a contiguous array of the bins' dtype) in
    nb uniform bins on q: `call(x) -> (hist, edges)` as `histogram` returns them, or None
    (for `histogram` to serve) when x is not laid out as the first call's was or the
    launcher's scratch went; None here where the launcher prepares nothing."""
    la, _ = engine(q, variant, db).served(n, nb)
    if edges.dtype != la.spec.dtype or edges.tobytes() != bins.edges.tobytes():
        return None  # the launch writes bins.edges, in the data's type, as the returned ones
    launch = la.prepared(q, n, nb, bins)
    if launch is None:
        return None
    out_dtype, pool = la.spec.out_dtype, pool_for(q)
    isz, osz = variant.dtype.itemsize, out_dtype.itemsize
    # the results from templates (~1.2 us each less than the constructor's path)
    outs, edges_out = ResultFactory(q, out_dtype, pool, (nb,)), \
        ResultFactory(q, edges.dtype, pool, edges.shape)

    fast = outs.fast and edges_out.fast
    o_alloc, o_bytes, o_attrs = outs._alloc, outs._nbytes, outs._attrs
    e_alloc, e_bytes, e_attrs = edges_out._alloc, edges_out._nbytes, edges_out._attrs

    def call(x: cla.Array) -> tuple[cla.Array, cla.Array] | None:
        if not (x._flags or x.flags).forc or x.offset % isz:
            return None
        a = x.allocator
        if fast and (a is None or a is pool):
            # both ResultFactory calls inlined (two frames less): the templates' copies, each
            # at offset 0 of a fresh pool buffer
            obuf, ebuf = o_alloc(o_bytes), e_alloc(e_bytes)
            ev = launch(x.base_data, x.offset // isz, obuf, 0, ebuf, 0,
                        pending(x.events, in_order=q) if x.events else None)
            if ev is None:
                return None
            out, e = _new(cla.Array), _new(cla.Array)
            d = o_attrs.copy()
            d["base_data"], d["events"] = obuf, [ev]
            out.__dict__ = d
            d = e_attrs.copy()
            d["base_data"], d["events"] = ebuf, [ev]
            e.__dict__ = d
            return out, e
        out = outs() if a is None or a is pool else \
            empty_result(q, (nb,), out_dtype, "C", a)  # the input's allocator, as pyopencl
        e = edges_out()
        # q runs in order (la.prepared serves no other): its own events are not waited for
        ev = launch(x.base_data, x.offset // isz, out.base_data, out.offset // osz,
                    e.base_data, e.offset // isz,
                    pending(x.events, in_order=q) if x.events else None)
        if ev is None:
            return None
        out.events.append(ev)  # fresh results: an empty event list each
        e.events.append(ev)
        return out, e
    return call


def _weights(q: cl.CommandQueue, weights: Any, x: cla.Array, what: str,
             axis: Any = None) -> cla.Array:
    """The weights laid out as x's elements are (`_flat`, or `_along` the axis)."""
    _, w = _device_array(weights, q, what)
    if w.shape != x.shape:
        raise ValueError(f"{what}: the weights should have the same shape as the input "
                         f"({w.shape} and {x.shape})")
    w = _same_order(x, w, q)
    w = _along(q, w, axis, what)[0] if axis is not None else _flat(w)
    if w.dtype.kind not in "fiub" or w.dtype == np.float16:
        raise TypeError(f"{what}: weights of dtype {w.dtype} are not supported (float32, "
                        "float64 or integers)")
    return w


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, axis: Any = None,
             queue: cl.CommandQueue | None = None, db: str | None = None) -> cla.Array:
    """numpy.bincount on the device: the count of each value 0 .. max(x) (at least minlength
    bins) of a 1-D array of non-negative integers, int64; with weights, the sum of the weights
    of each value, float64. `axis=k` (any n-D x): one histogram per slice along axis k, all of
    max(x) + 1 bins, shape x.shape without k + (bins,)."""
    q, xs = _device_array(x, queue, "bincount")
    kept: tuple[int, ...] = ()
    if axis is not None:
        xd, kept = _along(q, xs, axis, "bincount")
    elif xs.ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, not {xs.ndim}-D (or give axis=)")
    else:
        xd = _flat(xs)
    if xd.dtype.kind not in "iu":
        raise TypeError(f"bincount: x must hold integers (or bool), not {xd.dtype}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("bincount: 'minlength' must not be negative")
    info = info_for(q.device)
    w = None
    if weights is not None:
        w = _weights(q, weights, xs, "bincount", axis)
        if not sums_in_double(info, True):
            raise ValueError("bincount: weights need a device with cl_khr_fp64 and 64-bit "
                             "atomics (numpy sums them in double)")
        if w.dtype != _F64:
            w = w.astype(_F64)
    nbins = minlength
    if xd.size:
        got = _bincount_once(q, xd, minlength, db) if w is None and not kept else None
        if type(got) is cla.Array:
            return got
        # counted with too few bins (its extremes size the count), or not counted yet
        lo, hi = got if got is not None else _int_extremes(q, xd, db)
        _check_bincount_range(lo, hi)
        nbins = max(nbins, int(hi) + 1)
    variant = HistVariant("bincount", xd.dtype, w.dtype if w is not None else None)
    if nbins == 0:
        return cla.zeros(q, (*kept, 0), _F64 if w is not None else np.dtype(np.int64))
    return _run(q, variant, db, xd, w, nbins, None, kept)


def histogram(x: Any, bins: int = 10, range: Any = None, weights: Any = None,  # noqa: A002
              density: bool = False, *, axis: Any = None,
              queue: cl.CommandQueue | None = None,
              db: str | None = None) -> tuple[cla.Array, cla.Array]:
    """numpy.histogram on the device with `bins` uniform bins over `range` (else x's min and
    max), or between the increasing edges `bins` gives as an array (numpy's rules: equal edges
    allowed, `range` then unused): (hist, bin_edges) as device arrays; hist int64 counts, the
    weights' dtype with
    weights, float64 with density=True. x is flattened (any shape); values outside the range
    and NaN are not counted; the last bin includes its right edge. `axis=k`: one histogram per
    slice along axis k over the same edges (the range given, else x's min and max), shape
    x.shape without k + (bins,); density per histogram."""
    key = None
    if (range is not None and weights is None and not density and axis is None
            and queue is None and type(x) is cla.Array and type(bins) is int):
        try:  # _warm_key inlined (a frame less)
            r0, r1 = range
            key = (x.queue, x.dtype, x.size, bins, type(r0), r0, copysign(1.0, r0), type(r1),
                   r1, copysign(1.0, r1), db)
            call = _warm.get(key)
        except (TypeError, ValueError):
            key = call = None
        if call is not None:
            got = call(x)
            if got is not None:
                return got
    if isinstance(bins, str):
        raise TypeError("histogram: bins must be a number of uniform bins or an array of "
                        "edges (estimators by name are not supported)")
    given = None  # an array of edges
    if isinstance(bins, (np.ndarray, list, tuple, cla.Array)):
        given = bins.get() if isinstance(bins, cla.Array) else np.asarray(bins)
        if given.ndim != 1:
            raise ValueError("histogram: `bins` must be 1d, when an array")
        if given.size < 2 or given.dtype.kind not in "fiub" or given.dtype == np.float16:
            raise ValueError("histogram: `bins` as an array takes 2 or more float32/float64 "
                             "or integer edges")
        if np.any(given[:-1] > given[1:]):
            raise ValueError("histogram: `bins` must increase monotonically, when an array")
        if not np.all(np.isfinite(given)):
            raise ValueError("histogram: the edges in `bins` must be finite")
        nb = given.size - 1
    else:
        nb = operator.index(bins)
        if nb < 1:
            raise ValueError("histogram: `bins` must be positive, when an integer")
    q, xs = _device_array(x, queue, "histogram")
    kept: tuple[int, ...] = ()
    if axis is not None:
        xd, kept = _along(q, xs, axis, "histogram")
    else:
        xd = _flat(xs)
    if xd.dtype == np.float16 or xd.dtype.kind not in "fiub":
        raise TypeError(f"histogram: x of dtype {xd.dtype} is not supported")
    info = info_for(q.device)
    if given is not None:
        # numpy compares the values with the edges in their common type (searchsorted)
        bin_type = np.result_type(xd.dtype, given.dtype)
        if np.issubdtype(bin_type, np.integer) or bin_type == np.bool_:
            bin_type = np.result_type(bin_type, float)
        edges, first, last = given, given[0], given[-1]
    else:
        first, last = _outer_edges(q, xd, range)
        bin_type, edges = _uniform_edges(first, last, xd.dtype, nb)
    if bin_type not in TYPE_CODES or bin_type == _F64 and not info.fp64:
        raise ValueError(f"histogram: {xd.dtype} data bins in {bin_type}, which this device "
                         "cannot compute (no cl_khr_fp64)")
    w = None
    ntype = np.dtype(np.int64)
    if weights is not None:
        w = _weights(q, weights, xs, "histogram", axis)
        ntype = w.dtype
        if w.dtype.kind != "f" or not sums_in_double(info, True):
            w = w.astype(_F64 if info.fp64 else np.float32)
    if xd.dtype != bin_type:
        xd = xd.astype(bin_type)  # numpy: tmp_a.astype(bin_edges.dtype)
    kind = "histogram" if given is None else "histogram_edges"
    variant = HistVariant(kind, np.dtype(bin_type), w.dtype if w is not None else None)
    denom = np.subtract(last, first)  # numpy's norm_denom (_unsigned_subtract of floats)
    bins_d = UniformBins(np.asarray(edges, bin_type), float(denom) or 1.0)
    hist = _run(q, variant, db, xd, w, nb, bins_d, kept)
    if w is not None and hist.dtype != ntype:
        hist = hist.astype(ntype)
    edges_d = _edges_array(q, edges)
    if key is not None and given is None and xd.dtype == xs.dtype and hist.size:
        # the next call of this key: the launches prepared, nothing worked out again
        call = _prepare(q, variant, db, xd.size, nb, bins_d, edges)
        if call is not None:
            _warm.keep(key, call)
    if density:
        n = hist.get()
        db = np.array(np.diff(edges), float)
        hist = cla.to_device(q, n / db / n.sum(axis=-1, keepdims=True))
    return hist, edges_d


#: _uniform_edges' answers kept (the latest ones: a call with the same bins works none out)
_UNIFORM_KEPT = 64
_uniform_kept: dict[tuple, tuple[np.dtype, np.ndarray]] = {}


def _uniform_edges(first: Any, last: Any, dtype: np.dtype, nb: int,
                   ) -> tuple[np.dtype, np.ndarray]:
    """(the type values are binned in, numpy's nb + 1 uniform edges from first to last in it);
    numpy's error for bins too many for the range."""
    key = (nb, dtype, first, last, type(first), type(last), np.signbit(first),
           np.signbit(last))
    hit = _uniform_kept.get(key)
    if hit is not None:
        return hit
    bin_type = np.result_type(first, last, dtype)
    if np.issubdtype(bin_type, np.integer) or bin_type == np.bool_:
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, nb + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"histogram: too many bins for data range. Cannot create {nb} "
                         "finite-sized bins.")
    edges.flags.writeable = False  # kept: shared by the calls with these bins
    if len(_uniform_kept) >= _UNIFORM_KEPT:
        _uniform_kept.clear()
    _uniform_kept[key] = (bin_type, edges)
    return bin_type, edges


def _outer_edges(q: cl.CommandQueue, xd: cla.Array, range: Any) -> tuple[Any, Any]:  # noqa: A002
    """numpy's outer edges (`_get_outer_edges`): the range given, else x's min and max (as
    numpy scalars of its dtype), widened by 0.5 each way when they are equal."""
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("histogram: max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram: supplied range of [{first}, {last}] is not finite")
    elif xd.size == 0:
        first, last = 0, 1
    else:
        first, last = _extremes(q, xd)
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram: autodetected range of [{first}, {last}] is not "
                             "finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


#: unique_counts: the most bins (max - min + 1) a histogram takes before the host's
#: numpy.unique serves instead (a histogram that size is its own memory pass)
UNIQUE_SPAN = 1 << 24


def unique_counts(x: Any, *, queue: cl.CommandQueue | None = None,
                  db: str | None = None) -> tuple[cla.Array, cla.Array]:
    """`torch.unique(x, sorted=True, return_counts=True)` of an integer array (any shape,
    flattened) on the device: (the distinct values ascending, in x's dtype; their counts,
    int64), as a histogram over min(x)..max(x) and a compaction of its non-empty bins. Values
    spanning more than UNIQUE_SPAN are counted by numpy on the host (said by a warning)."""
    q, xs = _device_array(x, queue, "unique_counts")
    xd = _flat(xs)
    if xd.dtype.kind not in "iu":
        raise TypeError(f"unique_counts: x must hold integers (or bool), not {xd.dtype}")
    if xd.size == 0:
        return cla.empty(q, (0,), xd.dtype), cla.empty(q, (0,), np.dtype(np.int64))
    lo, hi = _int_extremes(q, xd, db)
    span = int(hi) - int(lo) + 1
    if span > UNIQUE_SPAN:
        warnings.warn(f"cltune: unique_counts of values spanning {span} counted by numpy on "
                      "the host", RuntimeWarning, stacklevel=2)
        vals, counts = np.unique(xd.get(queue=q), return_counts=True)
        return cla.to_device(q, vals), cla.to_device(q, counts.astype(np.int64))
    counts = _run(q, HistVariant("bincount", xd.dtype), db, xd, None, span, None, (),
                  int(lo))
    idx = entry("scan", "api").nonzero(counts)[0]  # the non-empty bins, ascending
    values = (idx + int(lo)).astype(xd.dtype)
    return values, cla.take(counts, idx, queue=q)


class Histogrammer:
    """`bincount` or `histogram` of one queue, input dtype and weights dtype, with the served
    config of each call's class to show (`explain`), as `get_scanner`'s Scanner does.

        >>> h = cltune.get_histogrammer(queue, "histogram", np.float32)
        >>> counts, edges = h(y, bins=256, range=(0.0, 1.0))
        >>> print(h.explain(y.size, 256))        # config, tuned class, fallback level
    """

    def __init__(self, queue: cl.CommandQueue, kind: str, dtype: Any, weights: Any = None,
                 db: str | None = None) -> None:
        self.queue, self.db = queue, db
        self.variant = HistVariant(kind, np.dtype(dtype),
                                   np.dtype(weights) if weights is not None else None)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        """bincount(x, weights=None, minlength=0) or histogram(x, bins=10, range=None,
        weights=None, density=False) on this queue (its dtype: checked, as numpy's)."""
        dt = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
        want = self.variant.dtype
        if np.dtype(dt) != want and not (self.variant.kind == "histogram"
                                         and np.dtype(dt).kind in "iub"):
            raise TypeError(f"this {self.variant.kind} takes {want}, not {np.dtype(dt)}")
        fn = bincount if self.variant.kind == "bincount" else histogram
        return fn(x, *args, queue=kwargs.pop("queue", self.queue), db=self.db, **kwargs)

    def explain(self, n: int, nbins: int) -> HistExplanation:
        """Which config serves n elements in nbins bins here, and where it came from."""
        return engine(self.queue, self.variant, self.db).served(n, nbins)[1]


def get_histogrammer(queue: cl.CommandQueue, kind: str = "bincount", dtype: Any = np.int32,
                     weights: Any = None, *, db: str | None = None) -> Histogrammer:
    """A `Histogrammer` for `kind` (bincount of integers, histogram of float32/float64) on the
    queue; `weights` names the weights' dtype its explanations are for (calls take any)."""
    return Histogrammer(queue, kind, dtype, weights, db)
