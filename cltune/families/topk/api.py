"""`cltune.topk`: torch.topk on the device (device arrays in and out; numpy arrays uploaded
to `queue`).

    >>> values, indices = cltune.topk(x, 10)                    # the 10 largest, best first
    >>> values, indices = cltune.topk(scores, 8, axis=1, largest=False)

torch's order: NaN above every number (the first of the largest, never among the smallest
while numbers remain), -0.0 equal to 0.0, equal values by the lower index first. The result
is always sorted (torch allows any order with sorted=False). The config is the database's
for the call's class, else the device's builtin one for k (`defaults.builtin_config`), else
the safest; what this process builds ran right once on this device and driver in the
device's worker first.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result
from cltune.device.select import info_for
from cltune.families.topk.family import TopkVariant
from cltune.families.topk.kernel import TYPE_CODES
from cltune.families.topk.launch import MAX_ROW
from cltune.families.topk.serve import TopkEngine, TopkExplanation
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import waits_on
from cltune.opencl.pools import pool_for

__all__ = ["Selector", "explain", "get_selector", "topk"]

_engines: ContextCache[TopkEngine] = ContextCache()
_I64 = np.dtype(np.int64)


def engine(q: cl.CommandQueue, variant: TopkVariant, db: str | None) -> TopkEngine:
    """The serving engine of a variant on q's device (one per context, device and database)."""
    return _engines.get(q.context, (q.device.int_ptr, variant, db),
                        lambda: TopkEngine(q.context, q.device, info_for(q.device), variant, db))


def explain(queue: cl.CommandQueue, dtype: Any, n: int, k: int, rows: int = 1, *,
            db: str | None = None) -> TopkExplanation:
    """Which config serves the top k of each of `rows` rows of n elements of dtype in all on
    the queue's device, and where it came from (database, builtin, safest)."""
    return engine(queue, TopkVariant("topk", np.dtype(dtype)), db).served(n, k, rows)[1]


def _device_array(x: Any, queue: cl.CommandQueue | None) -> tuple[cl.CommandQueue, cla.Array]:
    if isinstance(x, cla.Array):
        q = queue or x.queue
        if q is None:
            raise TypeError("topk: the array has no queue; pass queue=")
        if x.size and not x.flags.forc:
            raise ValueError("topk: non-contiguous arrays are not supported; pass a "
                             "contiguous copy")
        return q, x
    if isinstance(x, (np.ndarray, list, tuple)) or np.isscalar(x):
        if queue is None:
            raise TypeError("topk: a host array needs queue= (the device to select on)")
        return queue, cla.to_device(queue, np.require(x, requirements="C"))
    raise TypeError(f"topk takes a pyopencl Array or a numpy array, not {type(x).__name__}")


def _rows(q: cl.CommandQueue, x: cla.Array, axis: int) -> cla.Array:
    """x's slices along `axis` as contiguous rows, flattened: a view where the axis is the
    last of a C-ordered array (or the first of an F-ordered 2-D one); otherwise a copy made
    on the host."""
    if x.ndim == 1:
        return x  # (a reshape makes a new Array: its constructor is most of a small call)
    if x.ndim == 0:
        return x.reshape(1)
    if x.flags.c_contiguous and axis == x.ndim - 1:
        return x.reshape(x.size)
    if x.ndim == 2 and x.flags.f_contiguous and axis == 0:
        return x.T.reshape(x.size)  # the columns are x.T's rows, the same memory
    h = np.ascontiguousarray(np.moveaxis(x.get(queue=q), axis, -1))
    return cla.to_device(q, h.reshape(h.size))


def topk(x: Any, k: int, axis: int = -1, largest: bool = True, sorted: bool = True,  # noqa: A002
         *, queue: cl.CommandQueue | None = None,
         db: str | None = None) -> tuple[cla.Array, cla.Array]:
    """torch.topk on the device: the k largest (largest=False: smallest) elements along
    `axis` and their indices along it, as (values in x's dtype, indices int64) of x's shape
    with that axis k long, best first. Integers and float16/32/64 (float16 compared by its
    bits: no cl_khr_fp16 needed); NaN count as the largest; equal values are taken by the
    lower index first. k larger than the axis is an error, as in torch."""
    q, xs = _device_array(x, queue)
    if xs.dtype not in TYPE_CODES:
        raise TypeError(f"topk: x of dtype {xs.dtype} is not supported (float16, float32, "
                        "float64, 8- to 64-bit integers)")
    if isinstance(k, bool):
        raise TypeError("topk: k must be an int, not bool")
    k = operator.index(k)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"topk: axis must be an int, not {type(axis).__name__}")
    nd = max(1, xs.ndim)
    if not -nd <= axis < nd:
        raise ValueError(f"topk: axis {axis} is out of bounds for a {xs.ndim}-D array")
    axis = int(axis) % nd
    shape = xs.shape if xs.ndim else (1,)
    m = shape[axis]
    if not 0 <= k <= m:
        raise ValueError(f"topk: k={k} is out of range for an axis of {m} elements "
                         "(0 <= k <= its length)")
    if m > MAX_ROW:
        raise ValueError(f"topk: an axis of {m} elements exceeds the {MAX_ROW} it indexes")
    out_shape = (*shape[:axis], *shape[axis + 1:], k)
    alloc = xs.allocator or pool_for(q)
    values = empty_result(q, out_shape, xs.dtype, "C", alloc)
    indices = empty_result(q, out_shape, _I64, "C", alloc)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    if values.size and inner > 1 and xs.flags.c_contiguous:
        # an axis that is not the last of a C-ordered array: made the rows' on the device
        # (a batched transpose), and the answer put back the same way
        return _along_inner(q, xs, k, bool(largest), outer, m, inner, shape, axis, alloc, db)
    if values.size:
        flat = inner == 1 and xs.flags.c_contiguous  # the axis' rows are x's memory
        # (a reshape makes a new pyopencl Array, ~10 us of host time: none where x is 1-D)
        rows_x = ((xs if xs.ndim == 1 else xs.reshape(xs.size)) if flat
                  else _rows(q, xs, axis))
        rows = rows_x.size // m
        la, _ = engine(q, TopkVariant("topk", xs.dtype), db).served(rows_x.size, k, rows)
        evs = la.run(q, rows_x, 0, m, rows, k, bool(largest), values, indices,
                     wait_for=waits_on(q, rows_x.events))
        values.events.append(evs[-1])
        indices.events.append(evs[-1])
        if flat:  # the axis is the last one longer than 1: the result in the same layout
            sh = list(shape)
            sh[axis] = k
            if tuple(sh) != values.shape:
                values, indices = values.reshape(tuple(sh)), indices.reshape(tuple(sh))
            axis = len(shape) - 1
    if axis != len(shape) - 1 and values.size:  # torch's layout: the k along `axis`
        v, i = values.get(queue=q), indices.get(queue=q)
        values = cla.to_device(q, np.ascontiguousarray(np.moveaxis(v, -1, axis)))
        indices = cla.to_device(q, np.ascontiguousarray(np.moveaxis(i, -1, axis)))
    elif axis != len(shape) - 1:
        sh = list(shape)
        sh[axis] = k
        values = cla.empty(q, tuple(sh), xs.dtype)
        indices = cla.empty(q, tuple(sh), np.int64)
    if xs.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return values, indices


def _along_inner(q: cl.CommandQueue, xs: cla.Array, k: int, largest: bool, outer: int, m: int,
                 inner: int, shape: tuple[int, ...], axis: int, alloc: Any,
                 db: str | None) -> tuple[cla.Array, cla.Array]:
    """topk along the middle axis of a C-ordered (outer, m, inner) array: transposed to
    (outer, inner, m) rows, selected, and the (outer, inner, k) answer transposed to
    (outer, k, inner) — torch's layout — all on the device."""
    rows = outer * inner
    la, _ = engine(q, TopkVariant("topk", xs.dtype), db).served(xs.size, k, rows)
    flat = xs.reshape(xs.size)
    xt = empty_result(q, (xs.size,), xs.dtype, "C", alloc)
    ev = la.transpose(q, flat, 0, xt, outer, m, inner, wait_for=waits_on(q, xs.events))
    vt = empty_result(q, (rows * k,), xs.dtype, "C", alloc)
    it = empty_result(q, (rows * k,), _I64, "C", alloc)
    evs = la.run(q, xt, 0, m, rows, k, largest, vt, it, wait_for=[ev])
    sh = (*shape[:axis], k, *shape[axis + 1:])
    values = empty_result(q, sh, xs.dtype, "C", alloc)
    indices = empty_result(q, sh, _I64, "C", alloc)
    values.add_event(la.transpose(q, vt, 0, values, outer, inner, k, wait_for=[evs[-1]]))
    indices.add_event(la.transpose(q, it, 0, indices, outer, inner, k, wait_for=[evs[-1]]))
    return values, indices


class Selector:
    """`topk` of one queue and dtype, with the served config of each call's class to show
    (`explain`), as `get_histogrammer`'s Histogrammer does.

        >>> s = cltune.get_selector(queue, np.float32)
        >>> values, indices = s(x, 10)
        >>> print(s.explain(x.size, 10))        # config, tuned class, fallback level
    """

    def __init__(self, queue: cl.CommandQueue, dtype: Any, db: str | None = None) -> None:
        self.queue, self.db = queue, db
        self.variant = TopkVariant("topk", np.dtype(dtype))

    def __call__(self, x: Any, k: int, axis: int = -1, largest: bool = True,
                 sorted: bool = True) -> tuple[cla.Array, cla.Array]:  # noqa: A002
        """topk(x, k, axis, largest, sorted) on this queue (x of this selector's dtype)."""
        dt = np.dtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)
        if dt != self.variant.dtype:
            raise TypeError(f"this selector takes {self.variant.dtype}, not {dt}")
        return topk(x, k, axis, largest, sorted, queue=self.queue, db=self.db)

    def explain(self, n: int, k: int, rows: int = 1) -> TopkExplanation:
        """Which config serves the top k of each of `rows` rows of n elements in all here,
        and where it came from."""
        return engine(self.queue, self.variant, self.db).served(n, k, rows)[1]


def get_selector(queue: cl.CommandQueue, dtype: Any = np.float32, *,
                 db: str | None = None) -> Selector:
    """A `Selector` (top-k) for dtype on the queue."""
    return Selector(queue, dtype, db)
