"""2-D size classes and the geometry of a reduction along axes, shared by the families that
reduce along axes (`axis`, `expr_axis`) and the statistics: a class `2^ax2^b` is a shape of
(log2 outer, log2 inner) sizes; a call's (outer, r, inner) view follows numpy's `axis=` and
`keepdims=` rules.

    >>> size_class((20, 4)), shape_key_of("2^20x2^4"), parse_shapes("65536x256")
    ('2^20x2^4', (20, 4), ((16, 8),))
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

MAX_LOG2 = 40
_CLASS = re.compile(r"^2\^(\d{1,2})x2\^(\d{1,2})$")
_SHAPE = re.compile(r"^\s*(\d+|2\^\d+)\s*[xX×]\s*(\d+|2\^\d+)\s*$")


def size_class(key: tuple[int, int]) -> str:
    return f"2^{key[0]}x2^{key[1]}"


def shape_key_of(text: str) -> tuple[int, int]:
    """(a, b) of a size class `2^ax2^b`; ValueError when the text is not one."""
    m = _CLASS.match(text)
    if not m or max(int(m.group(1)), int(m.group(2))) > MAX_LOG2:
        raise ValueError(f"size class {text!r:.60} is not 2^ax2^b with a, b in 0..{MAX_LOG2}")
    return int(m.group(1)), int(m.group(2))


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """'65536x256,16x1048576' or '2^16x2^8' -> (log2 rows, log2 cols) pairs (powers of two)."""
    out = []
    for part in text.split(","):
        m = _SHAPE.match(part)
        if not m:
            raise ValueError(f"not a shape: {part.strip()!r:.40} (use ROWSxCOLS, e.g. 65536x256)")
        key = []
        for g in m.groups():
            v = 2 ** int(g[2:]) if g.startswith("2^") else int(g)
            if v <= 0 or v & (v - 1) or v > 2**MAX_LOG2:
                raise ValueError(f"shape {part.strip()!r:.40}: {g} is not a power of two "
                                 f"in 1..2^{MAX_LOG2}")
            key.append(v.bit_length() - 1)
        out.append((key[0], key[1]))
    return tuple(dict.fromkeys(out))


def log2_key(a: int, b: int) -> tuple[float, float]:
    return math.log2(max(1, a)), math.log2(max(1, b))


#: a tuned class serves shapes up to this many powers of two away in each dimension; beyond,
#: the heuristic (on the H200 the argmax tuned for rows of 2^20x16 ran 7x slower than the
#: heuristic on 16x2^20, where it split each row over 1049 groups)
MAX_CLASS_STEPS = 3


def nearest(key: tuple[float, float], tuned: list[tuple[int, int]],
            steps: float = MAX_CLASS_STEPS) -> tuple[int, int] | None:
    """The tuned class nearest to a shape (log2 space; ties to the larger); None when none is
    within `steps` powers of two in both dimensions."""
    near = [t for t in tuned if abs(t[0] - key[0]) <= steps and abs(t[1] - key[1]) <= steps]
    if not near:
        return None
    return min(near, key=lambda t: ((t[0] - key[0]) ** 2 + (t[1] - key[1]) ** 2,
                                    -t[0] - t[1]))


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """numpy's rules: an int or a tuple of ints, negative from the end, no duplicates."""
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be an int or a tuple of ints, not {type(a).__name__}")
        if not -ndim <= a < ndim:
            raise AxisError(int(a), ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


@dataclass(frozen=True)
class Geometry:
    """What a call's array layout and axes mean: numpy's result shape and the memory order
    of the result, and the (outer, r, inner) view reduced over r (`mem`: the reduced axes in
    memory order, empty for axis=())."""

    kept: tuple[int, ...]
    order: str
    outer: int
    r: int
    inner: int
    mem: tuple[int, ...]


def geometry(shape: tuple[int, ...], c_contiguous: bool, axis: Any,
             keepdims: bool) -> Geometry:
    nd = len(shape)
    axes = tuple(range(nd)) if axis is None else normalize_axes(axis, nd)
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keepdims else \
        tuple(s for i, s in enumerate(shape) if i not in axes)
    fortran = nd > 1 and not c_contiguous
    order = "F" if fortran else "C"
    mem = tuple(nd - 1 - a for a in axes) if fortran else tuple(axes)
    mem_shape = shape[::-1] if fortran else shape
    if mem and max(mem) - min(mem) + 1 != len(mem):
        raise ValueError(f"cltune reduces adjacent axes only, got axis={axis} for a "
                         f"{order}-ordered array of shape {shape}; reduce in two calls")
    lo, hi = (min(mem), max(mem) + 1) if mem else (nd, nd)
    return Geometry(kept, order, math.prod(mem_shape[:lo]), math.prod(mem_shape[lo:hi]),
                    math.prod(mem_shape[hi:]), mem)


def result_layout(shape: tuple[int, ...], itemsize: int,
                  order: str = "C") -> tuple[tuple[int, ...], int]:
    """The strides and size of a fresh `order`-contiguous array of `shape` (kept by callers
    that make results of one shape call after call)."""
    strides = []
    acc = itemsize
    for n in (shape if order == "F" else shape[::-1]):
        strides.append(acc)
        acc *= n
    return (tuple(strides) if order == "F" else tuple(strides[::-1])), math.prod(shape)


def empty_result(q: cl.CommandQueue, shape: tuple[int, ...], dtype: np.dtype, order: str,
           allocator: Any, layout: tuple[tuple[int, ...], int] | None = None,
           data: cl.Buffer | None = None) -> cla.Array:
    """A result array through pyopencl's fast constructor (its general one spends ~15 us on
    checks here), `cla.empty` where that path is not there; `layout`: result_layout's answer
    for (shape, dtype's itemsize, order), kept from an earlier call; `data`: a buffer of at
    least the result's bytes to lay it on (else one from `allocator`)."""
    strides, size = layout or result_layout(shape, dtype.itemsize, order)
    try:
        return cla.Array(None, shape, dtype, allocator=allocator, strides=strides, data=data,
                         _fast=True, _size=size, _context=q.context, _queue=q)
    except TypeError:  # pragma: no cover - other pyopencl versions
        return cla.Array(q, shape, dtype, order=order, allocator=allocator, data=data)


def view_key(outer: int, r: int, inner: int) -> tuple[str, tuple[float, float]]:
    """The layout that reduces the (outer, r, inner) view, and its position among the size
    classes (log2 pairs, not rounded)."""
    if inner == 1:
        return "rows", log2_key(outer, r)
    return "cols", log2_key(r, outer * inner)


def class_of_view(outer: int, r: int, inner: int) -> tuple[str, tuple[int, int]]:
    """The layout and the size class (log2 pair, rounded) a view is tuned as."""
    layout, (a, b) = view_key(outer, r, inner)
    return layout, (min(MAX_LOG2, round(a)), min(MAX_LOG2, round(b)))
