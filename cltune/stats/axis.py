"""cltune.stats.api along an axis: numpy's `axis=` / `keepdims=` rules for a statistic's
ReductionKernel, run by the axis skeleton (cltune.families.expr_axis.api).

An n-D C- or F-contiguous array is viewed as (outer, r, inner) in memory order (the axis
family's geometry: the reduced axes must be adjacent in memory); the result has numpy's shape
and the input's memory order. A reduction that covers every element runs the statistic's own
(tuned) 1-D kernel.

Configs along an axis are tuned like everything else (family `expr_axis`, see
cltune.families.expr_axis.target):
`cltune.stats.api.kernel("var", ctx, np.float32).tune(x, 0.0, axis=0)`
stores the best for the shape class of x's view; calls are served by the nearest tuned
class, else by the heuristic for the shape (`explain` says which).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result, geometry, view_key
from cltune.families.expr.api import ReductionKernel
from cltune.families.expr_axis.api import axis_reducer, cached_geometry, flat, reduce_along
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.family import variant
from cltune.families.expr_axis.launch import AxisPlan
from cltune.opencl.pools import pool_for
from cltune.stats import argvec, normvec
from cltune.stats.kernels import kernel


def check_int_axis(op: str, axis: Any) -> None:
    """argmin/argmax take one axis, as numpy's do."""
    if axis is not None and (isinstance(axis, bool)
                             or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"{op}: axis must be an int or None (numpy.{op} reduces one axis), "
                        f"not {type(axis).__name__}")


def whole(knl: ReductionKernel, x: cla.Array, q: cl.CommandQueue, extra: tuple,
          shape: tuple[int, ...]) -> cla.Array:
    """The statistic of every element, as an array of `shape` (one element)."""
    out = None
    if shape != ():
        out = empty_result(q, shape, knl.spec.dtype_result, "C",
                           knl.result_allocator(x.allocator))
    return knl(flat(x), *extra, queue=q, out=out)


def along(op: str, knl: ReductionKernel, x: cla.Array, q: cl.CommandQueue, extra: tuple,
          axis: Any, keepdims: bool) -> cla.Array:
    """`knl`'s statistic of `x` (a contiguous array of its dtype) along `axis`, numpy's
    result shape (`keepdims`); argmin/argmax give positions along the axis."""
    if op in ("argmin", "argmax") and cached_geometry(x, axis, keepdims).r == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")
    return reduce_along(knl, (x, *extra), x, q, axis, keepdims, x.events)


def arg_rows(op: str, x: cla.Array, q: cl.CommandQueue, axis: Any,
             keepdims: bool) -> cla.Array | None:
    """argmin/argmax on a CPU through the vector kernel, along the contiguous axis of a few
    long C-ordered rows (cltune.stats.argvec.rows) or along the axis before it where a few
    columns follow (argvec.cols); None where the expression path serves."""
    check_int_axis(op, axis)
    g = cached_geometry(x, axis, keepdims)
    if g.r == 0 or not x.flags.c_contiguous:
        return None
    b = argvec.served(x, q)
    if g.inner == 1:
        if not argvec.takes_rows(b, g.outer, g.r):
            return None
    elif not argvec.takes_cols(b, g.outer, g.r, g.inner):  # a few columns along axis 0
        return None
    alloc = x.allocator if x.allocator is not None else pool_for(q)
    res = empty_result(q, g.kept, np.dtype(np.int64), g.order, alloc)
    if g.inner == 1:
        return argvec.rows(b, x, q, op == "argmax", g.outer, g.r, res)
    return argvec.cols(b, x, q, op == "argmax", g.outer, g.r, g.inner, res)


def sum_cols(op: str, x: cla.Array, q: cl.CommandQueue, axis: Any, keepdims: bool,
             extra: tuple = ()) -> cla.Array | None:
    """The float32 mean / L2 norm (`norm2`) / var / std (`extra`: (ddof,)) along the axis
    before a last axis of a few columns, along a last axis of 2..16 elements (many short
    rows), and var / std along the last axis of a few long rows, of a C-ordered array on a
    CPU, through the vector kernels (cltune.stats.normvec.cols, rows, var_cols); None where
    the expression path serves."""
    if type(axis) is not int or x.dtype != np.float32 or not x.flags.c_contiguous:
        return None
    g = cached_geometry(x, axis, keepdims)
    if (g.inner == 1 and 2 <= g.r <= normvec.ROWS_MAX and g.outer * g.r >= normvec.ROWS_MIN
            and x.offset % 4 == 0):
        b = normvec.served(x, q)  # short rows along the last axis: a work-item a row
        if normvec.takes_rows(b, op, g.outer, g.r):
            alloc = x.allocator if x.allocator is not None else pool_for(q)
            res = empty_result(q, g.kept, np.dtype(np.float32), g.order, alloc)
            return normvec.rows(b, x, q, op, float(extra[0]) if extra else 0.0, g.outer,
                                g.r, res)
    if g.r == 0 or g.inner == 1 and op not in ("var", "std"):
        # few long rows: var's (1.0-3.0x the expression kernel on both CPU runtimes); the mean
        # and the norm ran 0.8-1.5x there, within noise of the tuned rows config they keep
        # (docs/logs/cpu-var-cols-2026-12-07.txt)
        return None
    b = normvec.served(x, q)
    if not normvec.takes_cols(b, g.outer, g.r, g.inner):
        return None
    alloc = x.allocator if x.allocator is not None else pool_for(q)
    res = empty_result(q, g.kept, np.dtype(np.float32), g.order, alloc)
    if op in ("var", "std"):
        return normvec.var_cols(b, x, q, op == "std", float(extra[0]), g.outer, g.r, g.inner,
                                res)
    return normvec.cols(b, x, q, op == "norm2", g.outer, g.r, g.inner, res)


def norm_axes(axis: Any, ord_: Any) -> Any:
    """numpy.linalg.norm's axis rules: one axis (or a 1-tuple) is a vector norm; a 2-tuple is
    a matrix norm, of which only the Frobenius norm (ord None) is an L2 over both axes."""
    if not isinstance(axis, tuple):
        return axis
    if len(axis) == 1:
        return axis[0]
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    if ord_ is not None:
        raise ValueError(f"norm: matrix norms (ord={ord_!r} over the axes {axis}) are not "
                         "supported; ord=None over two axes is the Frobenius norm")
    return axis


def keep_shape(ndim: int, keepdims: bool) -> tuple[int, ...]:
    """The result shape of a reduction of everything (axis=None)."""
    return (1,) * ndim if keepdims else ()


@dataclass(frozen=True)
class AxisStatExplanation:
    """Which config a statistic along an axis runs, for which (outer, r, inner) view, and
    where it came from: `level` is a lookup level (`exact`, `driver-changed`, `same-device`,
    `shipped`, `vendor-default`) with `size_class` the tuned class (family `expr_axis`,
    variant `variant`) nearest to the view, or `builtin` (the heuristic for the shape, chosen
    from the device's kind), or `whole` (the statistic's 1-D kernel, see its own explain)."""

    op: str
    shape: tuple[int, ...]
    view: tuple[int, int, int]
    level: str
    config: AxisExprConfig | None
    plan: AxisPlan | None
    why: str = ""
    size_class: str | None = None
    variant: str = ""

    def __str__(self) -> str:
        o, r, i = self.view
        head = f"{self.op} of {self.shape}: (outer {o}, r {r}, inner {i})"
        if self.config is None or self.plan is None:
            return f"{head}, {self.level}: the statistic's 1-D kernel, {self.why}"
        cls = f"class {self.size_class}" if self.size_class else "no tuned class"
        return (f"{head}, {self.level}: {self.config.short()}, {self.plan.groups} group(s) x "
                f"{self.plan.split} along the axis [{self.why}; {cls}]")


def _kernel_op(op: str, ord_: Any) -> str:
    if op != "norm":
        return op
    for name, ords in (("norm2", (None, 2)), ("norm1", (1,)), ("norm_inf", (np.inf,))):
        if builtins.any(ord_ is o or (o is not None and ord_ == o) for o in ords):
            return name
    raise ValueError(f"norm: ord={ord_!r} is not supported (None, 1, 2 or inf)")


def explain(op: str, q: cl.CommandQueue, dtype: Any, shape: tuple[int, ...], axis: Any,
            order: str = "C", ord: Any = None) -> AxisStatExplanation:  # noqa: A002
    """What `cltune.<op>(x, axis=axis)` runs for an array of this shape, order and dtype."""
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    dt = np.dtype(dtype)
    knl = kernel(_kernel_op(op, ord), q.context, np.uint8 if dt == np.bool_ else dt)
    if op == "norm":
        axis = norm_axes(axis, ord)
    g = geometry(tuple(shape), order == "C" or len(shape) < 2, axis, False)
    view = (g.outer, g.r, g.inner)
    if g.outer * g.inner == 1 and g.mem:
        return AxisStatExplanation(op, tuple(shape), view, "whole", None, None,
                                   str(knl.explain(max(1, g.r), q.device)))
    red = axis_reducer(q.context, q.device, knl.spec, knl.db, knl)
    built, plan = red.plan(*view)
    pick = red.pick(*view)
    return AxisStatExplanation(op, tuple(shape), view, pick.level, built.config, plan,
                               pick.why, pick.tuned.size_class if pick.tuned else None,
                               variant(knl.fingerprint, view_key(*view)[0]))
