"""Result arrays for the warm call (0-d, or of any one shape and order): a template built by
pyopencl itself is copied with a fresh pool buffer and event list (~2 us cheaper than
pyopencl's constructor), used only while pyopencl's Array has exactly the attributes this was
written against."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result


def new_scalar(q: cl.CommandQueue, dtype: np.dtype, allocator: Any) -> cla.Array:
    """A 0-d result array from the pool through pyopencl's fast constructor (the general one
    spends ~20 us on shape checks), falling back to `cla.empty` if that path changes."""
    dtype = np.dtype(dtype)  # the fast constructor needs a dtype object (np.float32 fails it)
    try:
        return cla.Array(None, (), dtype, allocator=allocator, strides=(), _fast=True, _size=1,
                         _context=q.context, _queue=q)
    except TypeError:  # pragma: no cover - other pyopencl versions
        return cla.empty(q, (), dtype, allocator=allocator)


#: the attributes pyopencl's Array.__init__ sets (pyopencl 2024-2026); a version that sets others
#: makes ScalarFactory fall back to the constructor
ARRAY_ATTRS = frozenset({"queue", "context", "shape", "dtype", "strides", "events", "nbytes",
                          "size", "allocator", "base_data", "offset", "_flags"})


class ResultFactory:
    """Result arrays of one queue, dtype, shape and order, ~2 us cheaper than the constructor:
    a template built by pyopencl itself is copied, with a fresh pool buffer and event list.
    Used only when the template has exactly the attributes above; else the constructor path."""

    __slots__ = ("_q", "_dtype", "_alloc", "_shape", "_order", "_attrs", "_nbytes", "_more",
                 "fast")

    def __init__(self, q: cl.CommandQueue, dtype: np.dtype, allocator: Any,
                 shape: tuple[int, ...] = (), order: str = "C", alloc_bytes: int = 0) -> None:
        """`alloc_bytes`: each result's buffer holds at least this many bytes (a kernel that
        writes past the result's own elements, e.g. the kept indices past nonzero's size)."""
        self._q, self._dtype, self._alloc = q, np.dtype(dtype), allocator
        self._shape, self._order = shape, order
        t = self._made()
        self._attrs = {k: v for k, v in vars(t).items() if k not in ("base_data", "events")}
        self._nbytes = max(t.nbytes, alloc_bytes)
        self._more = alloc_bytes > t.nbytes
        self.fast = (set(vars(t)) == ARRAY_ATTRS and type(t) is cla.Array and t.shape == shape
                     and t.nbytes == self._dtype.itemsize * t.size and t.offset == 0
                     and t.nbytes > 0 and allocator is not None)

    def _made(self) -> cla.Array:
        if self._shape == ():
            return new_scalar(self._q, self._dtype, self._alloc)
        return empty_result(self._q, self._shape, self._dtype, self._order, self._alloc)

    def _bigger(self) -> cla.Array:
        a = self._made()
        buf = self._alloc(self._nbytes) if self._alloc is not None else \
            cl.Buffer(self._q.context, cl.mem_flags.READ_WRITE, self._nbytes)
        return cla.Array(self._q, a.shape, a.dtype, strides=a.strides, data=buf)

    def __call__(self) -> cla.Array:
        if not self.fast:
            return self._bigger() if self._more else self._made()
        return self.around(self._alloc(self._nbytes), [])

    def buffer(self) -> cl.Buffer:
        """A result's buffer from the pool (fast factories only), for `around`."""
        return self._alloc(self._nbytes)

    def around(self, buf: cl.Buffer, events: list[cl.Event]) -> cla.Array:
        """A result array on `buf` (from `buffer`) with these events (fast factories only)."""
        a = _new(cla.Array)
        d = self._attrs.copy()  # a copied dict assigned whole: ~0.2 us less than update()
        d["base_data"] = buf
        d["events"] = events
        a.__dict__ = d
        return a


#: 0-d results (the 1-D reducers' and the statistics' warm calls)
ScalarFactory = ResultFactory

_new = object.__new__
