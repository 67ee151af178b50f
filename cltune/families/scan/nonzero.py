"""numpy.nonzero on the device (`cltune.nonzero`), on the scan family's compaction
(`compact.select` in index mode: the positions of the nonzero elements of the flattened array,
vetted as every compaction program is), then one `clt_unravel` launch per dimension of a
multi-dimensional array. numpy's result size is the count, read back; with `size=`
(jax.numpy.nonzero's meaning) nothing is read back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result
from cltune.families.scan.compact import INDEX_DTYPES, select
from cltune.opencl.events import in_order, pending
from cltune.opencl.kernel_args import flat_grid
from cltune.opencl.pools import pool_for

__all__ = ["nonzero"]

_L = np.int64
_I64 = np.dtype(np.int64)
#: (index_dtype, n, fill_value, ndim) -> (mode, index dtype, fills): what a call checked
_checked: dict = {}


def _read_count(count: cla.Array, q: cl.CommandQueue) -> int:
    """The device scalar's value, read straight (pyopencl's `get` spends its host time on
    checks: nonzero pays this read on every call)."""
    h = np.empty(1, np.int64)
    cl.enqueue_copy(q, h, count.base_data, src_offset=count.offset,
                    wait_for=count.events or None, is_blocking=True)
    return int(h[0])


def _head(a: cla.Array, c: int, q: cl.CommandQueue) -> cla.Array:
    """a[:c] of a fresh 1-D result by pyopencl's fast constructor (slicing costs ~10 us)."""
    try:
        return cla.Array(None, (c,), a.dtype, data=a.base_data, strides=(a.dtype.itemsize,),
                         events=list(a.events), _fast=True, _size=c, _context=q.context,
                         _queue=q)
    except TypeError:  # pragma: no cover - other pyopencl versions
        return a[:c]


def _index_mode(index_dtype: Any, n: int) -> int:
    """CLT_SEL_INDEX for numpy.nonzero's indices of n elements as `index_dtype`."""
    try:
        dt = np.dtype(index_dtype)
    except TypeError:
        raise TypeError(f"index_dtype must be np.int64 or np.int32, not {index_dtype!r}") \
            from None
    if dt == _I64:
        return 1
    if dt == np.int32:
        if n > np.iinfo(np.int32).max:
            raise ValueError(f"index_dtype=np.int32 holds indices below 2^31; this array has "
                             f"{n} elements: use np.int64")
        return 2
    raise TypeError(f"index_dtype must be np.int64 or np.int32, not {dt}")


def _fills(fill_value: Any, ndim: int, dt: np.dtype) -> list[int]:
    """fill_value (one integer, or one per dimension as jax.numpy.nonzero takes it) as ints
    that `dt` holds."""
    vals = list(fill_value) if isinstance(fill_value, (tuple, list)) else [fill_value] * ndim
    if len(vals) != ndim:
        raise ValueError(f"fill_value has {len(vals)} entries for an array of {ndim} "
                         "dimensions: give one integer or one per dimension")
    info = np.iinfo(dt)
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"fill_value must be integers, not {type(v).__name__}")
        if not info.min <= int(v) <= info.max:
            raise ValueError(f"fill_value {int(v)} does not fit the indices' dtype {dt}")
        out.append(int(v))
    return out


def nonzero(x: Any, queue: cl.CommandQueue | None = None, *, size: int | None = None,
            fill_value: Any = 0, index_dtype: Any = np.int64) -> tuple[cla.Array, ...]:
    """numpy.nonzero on the device: one index device array per dimension of `x` (C order).

    numpy's result is as long as the count of nonzero elements, so the count is read back
    (one host round trip a call). With `size=` (jax.numpy.nonzero's meaning) the result has
    exactly `size` entries — the first `size` nonzero positions, then `fill_value` (one
    integer, or one per dimension) — and nothing is read back: the call only enqueues.
    `index_dtype=np.int32` writes 4-byte indices (half the bytes; arrays below 2^31 elements).
    """
    if type(x) is not cla.Array:
        if isinstance(x, np.ndarray):
            if queue is None:
                raise TypeError("a numpy input needs queue= (the device to run on)")
            x = cla.to_device(queue, np.ascontiguousarray(x))
        if not isinstance(x, cla.Array):
            raise TypeError(f"x must be a pyopencl.array.Array or numpy array, not "
                            f"{type(x).__name__}")
    shape = x.shape
    ndim, n = len(shape), x.size
    if ndim == 0:
        raise ValueError("nonzero of a 0-d array: use atleast_1d first (as numpy asks)")
    if n and not (x._flags or x.flags).c_contiguous:
        raise ValueError("nonzero takes a C-contiguous array")
    if size is not None and type(size) is not int:
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
            raise ValueError(f"size must be a non-negative integer, not {size!r}")
        size = int(size)
    if size is not None and size < 0:
        raise ValueError(f"size must be a non-negative integer, not {size!r}")
    # the index dtype's mode and the fills, checked once per (dtype, n, fill, ndim) seen
    mk = (index_dtype, n, fill_value, ndim) if type(fill_value) is int else None
    known = _checked.get(mk) if mk is not None else None
    if known is None:
        mode = _index_mode(index_dtype, n)
        idt = INDEX_DTYPES[mode]
        fills = _fills(fill_value, ndim, idt)
        if mk is not None and len(_checked) < 256:
            _checked[mk] = (mode, idt, fills)
    else:
        mode, idt, fills = known
    flat = x if ndim == 1 else x.reshape(n)
    if flat.dtype.kind == "b":
        flat = flat.view(np.uint8)
    if size is not None and not n:  # nothing to launch: every entry is the fill
        q = queue if queue is not None else x.queue
        return tuple(cla.empty(q, (size,), idt).fill(f) if size else cla.empty(q, (0,), idt)
                     for f in fills)
    if ndim == 1 and size is not None:  # the result is the first `size` indices: no slice
        idx = select(flat, "ary[i] != 0", None, "", queue, None, index=mode, fill_to=size,
                     fill=fills[0], length=size)[0]
        return (idx,)
    idx, _, count, _, q, prg = select(flat, "ary[i] != 0", None, "", queue, None, index=mode)
    c = (_read_count(count, q) if n else 0) if size is None else size
    if ndim == 1:  # the indices are the answer
        return (idx if c == idx.size else _head(idx, c, q),)
    ordered = in_order(q)
    out = []
    narrow = np.uint32(x.size <= 1 << 32)
    stride = x.size
    for d, f in zip(shape, fills, strict=True):
        stride //= max(1, d)
        o = empty_result(q, (c,), idt, "C", pool_for(q)) if c else cla.empty(q, (0,), idt)
        if c:
            with prg.lock:
                k = prg.clt_unravel
                k.set_args(idx.data, count.data, _L(c), _L(stride), _L(d), _L(f), narrow,
                           o.data)
                ev = cl.enqueue_nd_range_kernel(
                    q, k, *flat_grid(c),
                    wait_for=pending(idx.events, count.events, in_order=ordered))
            o.add_event(ev)
        out.append(o)
    return tuple(out)
