"""Arg-reductions and one-pass statistics with numpy semantics, built on
`cltune.ReductionKernel` (so each is tuned like any custom expression).

Every function takes a C- or F-contiguous pyopencl Array of any shape and reduces the whole
array into a 0-d device array, like `get_reducer`'s reducers, or, with `axis=` (an int,
negative from the end, or a tuple of axes adjacent in memory; argmin/argmax take an int) and
`keepdims=`, reduces along those axes into numpy's result shape (cltune.stats.axis):

    >>> import cltune
    >>> int(cltune.argmax(x).get()), float(cltune.var(x, ddof=1).get())
    >>> cltune.argmax(x, axis=1).get()            # positions along axis 1, as numpy

Semantics: `argmin`/`argmax` give the int64 index of the first occurrence (in C order, also
for F-ordered inputs: cltune.stats.whole); a NaN wins (the first NaN), as in numpy; an empty
input (or reduced axis) is a ValueError. Without `axis`, on a CPU device, they run in vector
registers (cltune.stats.argvec). `norm` (vector ord None/2, 1, inf; without axis a 2-D
array's ord is a matrix norm, as numpy's) returns the input's float type (float64 for
integers); L2 never overflows or
underflows for finite inputs: float32 sums squares in double, float64 (and devices without
fp64) use LAPACK's scaled sum of squares; the L2 norm of a whole float32 array runs in vector
registers on a CPU device (cltune.stats.normvec). `mean`/`var`/`std` accumulate in double
where the device has fp64 (float32 results for float32 inputs, float64 otherwise); `var` is
one pass: each accumulator sums d and d^2 for d = x - c, c its own first element (no division per
element), and accumulators are merged with Chan et al.'s pairwise formula, so its relative
error is about (L * (1 + (c - m)^2 / v) + log2 P) * u (L elements per accumulator with mean m
and variance v, P accumulators, u the unit roundoff of the accumulator: 1.1e-16 with double);
since c is one of the L elements, (c - m)^2 / v <= L. `count_nonzero` is int64 (NaN counts as
nonzero); `any`/`all` are bool (without `axis`, on a CPU device, in vector registers, each
chunk stopping at its first deciding element: cltune.stats.anyvec).

`kernel(op, ctx, dtype)` is the ReductionKernel behind a function, e.g. to tune it:
`cltune.stats.api.kernel("argmax", ctx, np.float32).tune(x)`, or along an axis:
`.tune(x, axis=1)`; `explain(op, queue, dtype, shape, axis)` says what a call runs.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.families.reduce.api import get_reducer
from cltune.stats import anyvec, argvec, normvec, warm
from cltune.stats import axis as stats_axis
from cltune.stats import whole as stats_whole
from cltune.stats.kernels import OPS, kernel

__all__ = ["OPS", "all", "any", "argmax", "argmin", "count_nonzero", "explain", "kernel", "mean",
           "norm", "std", "var"]


def explain(op: str, queue: cl.CommandQueue, dtype: Any, shape: tuple[int, ...],
            axis: Any = None, order: str = "C", ord: Any = None) -> Any:  # noqa: A002
    """What `cltune.<op>(x, axis=axis)` runs for an array of this shape, order (`C`/`F`) and
    dtype: the config, the tuned size class serving it and its fallback level (`exact`, ...,
    `builtin`; `whole` for a reduction of every element). See cltune.stats.axis.explain."""
    if op in ("argmin", "argmax") and axis is None and not (
            order == "F" and sum(d > 1 for d in shape) >= 2):
        n = int(np.prod(shape, dtype=np.int64))
        vec = argvec.explain(queue, dtype, n)
        if vec is not None:
            return stats_axis.AxisStatExplanation(op, tuple(shape), (1, n, 1), "whole", None,
                                                  None, str(vec))
    if op == "norm" and axis is None and _l2(ord) and (ord is None or len(shape) < 2):
        n = int(np.prod(shape, dtype=np.int64))
        vec = normvec.explain(queue, dtype, n)
        if vec is not None:
            return stats_axis.AxisStatExplanation(op, tuple(shape), (1, n, 1), "whole", None,
                                                  None, str(vec))
    if op in ("any", "all") and axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        vec = anyvec.explain(queue, dtype, n)
        if vec is not None:
            return stats_axis.AxisStatExplanation(op, tuple(shape), (1, n, 1), "whole", None,
                                                  None, str(vec))
    return stats_axis.explain(op, queue, dtype, shape, axis, order, ord)


_calls, _along_calls = warm.calls, warm.along_calls  # read on every warm call


def _l2(ord: Any) -> bool:  # noqa: A002
    return ord is None or (isinstance(ord, (int, float)) and ord == 2)


def _run(op: str, x: Any, queue: cl.CommandQueue | None, *extra: Any,
         empty_error: bool = False, axis: Any = None, keepdims: bool = False) -> cla.Array:
    if type(x) is cla.Array:  # a kept call (stats.warm)
        if axis is None:
            if not keepdims:
                key = (op, queue if queue is not None else x.queue, x.dtype, x.size)
                run = _calls.get(key)  # PreparedCalls.hit inlined (one frame less)
                if run is not None:
                    try:
                        _calls.move_to_end(key)
                    except KeyError:  # another thread dropped it meanwhile
                        pass
                if (run is not None and (x._flags or x.flags).c_contiguous
                        and (res := run(x, extra)) is not None):
                    return res
        elif type(axis) is int or (type(axis) is tuple
                                   and builtins.all(type(a) is int for a in axis)):
            fl = x._flags or x.flags  # warm.along_key inlined (one frame less)
            key = (op, queue if queue is not None else x.queue, x.dtype, x.shape,
                   (fl.c_contiguous, fl.f_contiguous), axis, keepdims)
            run = _along_calls.get(key)
            if run is not None:
                try:
                    _along_calls.move_to_end(key)
                except KeyError:
                    pass
                if (res := run(x, extra)) is not None:
                    return res
    keep = True  # a device array's call is kept for the next (stats.warm); an upload's not
    if isinstance(x, np.ndarray):  # uploaded first, as the reducers and scans do
        if queue is None:
            raise TypeError(f"{op}: a numpy array needs queue= (the queue to upload it with); "
                            "or pass a pyopencl Array")
        x = cla.to_device(queue, x if x.flags.forc else np.ascontiguousarray(x))
        keep = False
    elif not isinstance(x, cla.Array):
        raise TypeError(f"{op} takes a pyopencl Array or a numpy array (with queue=), not "
                        f"{type(x).__name__}")
    if not x.flags.forc:
        raise ValueError(f"{op}: non-contiguous arrays are not supported; reduce a "
                         "contiguous copy (x.copy())")
    q = queue if queue is not None else x.queue
    if q is None:
        raise TypeError(f"{op}: the array has no queue; pass queue=")
    given = x  # the warm call's key: bool arrays are reduced as their uint8 view
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    if axis is None and op in ("argmin", "argmax"):
        vec = argvec.served(x, q)  # CPU devices: the vector kernel (cltune.stats.argvec)
        if vec is not None:
            if x.size == 0:
                raise ValueError(f"attempt to get {op} of an empty sequence")
            res, c = argvec.call(vec, x, q, op == "argmax", keepdims)
            if keep and not keepdims:
                warm.keep_vector(op, given, q, c)
            return res
    if axis is None and op == "norm2":
        vec = normvec.served(x, q)  # CPU devices: the vector kernel (cltune.stats.normvec)
        if vec is not None:
            res, c = normvec.call(vec, x, q, keepdims)
            if keep and not keepdims:
                warm.keep_vector(op, given, q, c)
            return res
    if axis is None and op in ("any", "all"):
        vec = anyvec.served(x, q)  # CPU devices: the vector kernel (cltune.stats.anyvec)
        if vec is not None:
            res, c = anyvec.call(vec, x, q, op == "all", keepdims)
            if keep and not keepdims:
                warm.keep_vector(op, given, q, c)
            return res
    if axis is not None and op in ("argmin", "argmax"):
        res = stats_axis.arg_rows(op, x, q, axis, keepdims)  # CPUs, few long rows
        if res is not None:
            return res
    if axis is not None and op in ("mean", "norm2", "var", "std"):
        res = stats_axis.sum_cols(op, x, q, axis, keepdims, extra)  # CPUs, float32, few cols
        if res is not None:
            return res
    knl = kernel(op, q.context, x.dtype)
    if axis is not None:
        res = stats_axis.along(op, knl, x, q, extra, axis, keepdims)
        if keep:
            warm.keep_along(op, given, q, knl, axis, keepdims)
        return res
    if empty_error and x.size == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")
    if op in ("argmin", "argmax") and stats_whole.needs_c_order(x):
        return stats_whole.arg_c_order(x, q, op == "argmax", keepdims)
    res = stats_axis.whole(knl, x, q, extra, stats_axis.keep_shape(x.ndim, keepdims))
    if keep and not keepdims:
        warm.keep_expr(op, given, q, knl)
    return res


def argmax(x: cla.Array, queue: cl.CommandQueue | None = None, *, axis: int | None = None,
           keepdims: bool = False) -> cla.Array:
    """Index (int64) of the first maximum; a NaN wins. Along `axis`: the position along it,
    as numpy.argmax. `cltune.argmax(x).get()`, `cltune.argmax(x, axis=1).get()`"""
    if axis is not None:
        stats_axis.check_int_axis("argmax", axis)
    return _run("argmax", x, queue, empty_error=True, axis=axis, keepdims=keepdims)


def argmin(x: cla.Array, queue: cl.CommandQueue | None = None, *, axis: int | None = None,
           keepdims: bool = False) -> cla.Array:
    """Index (int64) of the first minimum; a NaN wins. Along `axis`: the position along it,
    as numpy.argmin. `cltune.argmin(x).get()`, `cltune.argmin(x, axis=0).get()`"""
    if axis is not None:
        stats_axis.check_int_axis("argmin", axis)
    return _run("argmin", x, queue, empty_error=True, axis=axis, keepdims=keepdims)


def norm(x: cla.Array, ord: Any = None, queue: cl.CommandQueue | None = None, *,  # noqa: A002
         axis: Any = None, keepdims: bool = False) -> cla.Array:
    """As `numpy.linalg.norm`. Vector norms: ord None or 2 (Euclidean, overflow-free), 1, or
    inf (max |x|) of a 1-D array or along `axis` (an int; a 2-tuple of adjacent axes with ord
    None is the Frobenius norm). Without `axis`: any array with ord None (the Frobenius norm of
    the flattened array); a 2-D array with ord 'fro', 1, -1, inf or -inf is a matrix norm
    (max/min column or row sum of |x|; 2, -2 and 'nuc' need singular values and are a
    ValueError); more dimensions with an ord are numpy's ValueError.
    `cltune.norm(x, 1, axis=0).get()`"""
    if ord is None and axis is None:  # the common call first: the L2 norm of every element
        return _run("norm2", x, queue, keepdims=keepdims)
    if axis is None and ord is not None and isinstance(x, cla.Array) and x.ndim >= 2:
        return _matrix_norm(x, ord, queue, keepdims)
    axis = stats_axis.norm_axes(axis, ord)
    if _l2(ord):
        return _run("norm2", x, queue, axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and ord == 1:
        return _run("norm1", x, queue, axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and ord == np.inf:  # empty: 0, as numpy 2
        return _run("norm_inf", x, queue, axis=axis, keepdims=keepdims)
    raise ValueError(f"norm: ord={ord!r} is not supported (None, 1, 2 or inf)")


def mean(x: cla.Array, queue: cl.CommandQueue | None = None, *, axis: Any = None,
         keepdims: bool = False) -> cla.Array:
    """Arithmetic mean (NaN for an empty input). `cltune.mean(x, axis=0).get()`"""
    return _run("mean", x, queue, axis=axis, keepdims=keepdims)


def _ddof(ddof: Any) -> float:
    if type(ddof) is int and ddof >= 0:  # the common case first (the warm call's cost)
        return float(ddof)
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise ValueError(f"ddof must be a non-negative integer, got {ddof!r}")
    return float(ddof)


def var(x: cla.Array, ddof: int = 0, queue: cl.CommandQueue | None = None, *,
        axis: Any = None, keepdims: bool = False) -> cla.Array:
    """Variance in one pass (shifted sums, the partials merged by Chan's formula); divides by
    max(n - ddof, 0) as numpy does.
    `cltune.var(x, ddof=1).get()`, `cltune.var(x, axis=0, ddof=1).get()`"""
    return _run("var", x, queue, _ddof(ddof), axis=axis, keepdims=keepdims)


def std(x: cla.Array, ddof: int = 0, queue: cl.CommandQueue | None = None, *,
        axis: Any = None, keepdims: bool = False) -> cla.Array:
    """Standard deviation: sqrt of `var`. `cltune.std(x, axis=-1).get()`"""
    return _run("std", x, queue, _ddof(ddof), axis=axis, keepdims=keepdims)


def count_nonzero(x: cla.Array, queue: cl.CommandQueue | None = None, *, axis: Any = None,
                  keepdims: bool = False) -> cla.Array:
    """Number of elements != 0 (int64). `cltune.count_nonzero(x, axis=1).get()`"""
    return _run("count_nonzero", x, queue, axis=axis, keepdims=keepdims)


def any(x: cla.Array, queue: cl.CommandQueue | None = None, *,  # noqa: A001
        axis: Any = None, keepdims: bool = False) -> cla.Array:
    """Whether any element is nonzero (bool; False when empty). `cltune.any(x).get()`"""
    return _run("any", x, queue, axis=axis, keepdims=keepdims)


def all(x: cla.Array, queue: cl.CommandQueue | None = None, *,  # noqa: A001
        axis: Any = None, keepdims: bool = False) -> cla.Array:
    """Whether every element is nonzero (bool; True when empty). `cltune.all(x).get()`"""
    return _run("all", x, queue, axis=axis, keepdims=keepdims)


def _matrix_norm(x: cla.Array, ord: Any, queue: cl.CommandQueue | None,  # noqa: A002
                keepdims: bool) -> cla.Array:
    """numpy.linalg.norm(x, ord) of an array of two or more dimensions without `axis`."""
    if x.ndim != 2:
        raise ValueError("Improper number of dimensions to norm.")
    if isinstance(ord, str):
        if ord != "fro":
            raise ValueError(f"norm: ord={ord!r} of a matrix is not supported ('fro', 1, -1, "
                             "inf, -inf; 'nuc' needs singular values)")
        return norm(x, None, queue, axis=(0, 1), keepdims=keepdims)
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, (int, float, np.integer,
                                                                 np.floating)):
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if ord in (1, -1):
        sums = norm(x, 1, queue, axis=0)  # column sums of |x|
    elif ord in (np.inf, -np.inf):
        sums = norm(x, 1, queue, axis=1)  # row sums of |x|
    elif ord in (2, -2):
        raise ValueError(f"norm: ord={ord} of a matrix (its {'largest' if ord > 0 else 'smallest'}"
                         " singular value) is not supported; ord=None is the Frobenius norm")
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    q = queue if queue is not None else x.queue
    shape = (1, 1) if keepdims else ()
    if sums.size == 0:  # numpy 2: the extreme of no sums is 0
        return cla.zeros(q, shape, sums.dtype)
    op = "max" if ord > 0 else "min"
    res = get_reducer(q, op, sums.dtype)(sums, queue=q)
    return res.reshape(shape) if keepdims else res
