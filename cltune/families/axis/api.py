"""Reductions along axes at run time: `r(x, axis=k)` (segments: cltune.families.axis.segments).

An n-D C- or F-contiguous array is viewed as (outer, reduced, inner) in memory order; a
contiguous reduced axis (inner == 1) runs the `rows` layout, any other the `cols` layout.
Configs come from the database per variant (`op/dtype/rows|cols|segs`) and size class (see
axis_family), the nearest tuned class serving a shape; shapes never tuned get the builtin
config for their shape. Like the 1-D runtime this never writes the database and never loads
the tuner.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import Geometry, empty_result, geometry
from cltune.families.axis import short_rows
from cltune.families.axis.segments import reduce_segments  # noqa: F401 - the family's api
from cltune.families.axis.serve import AxisExplanation, axis_engine, device_array, explain
from cltune.opencl.events import in_order, pending
from cltune.opencl.scalars import ResultFactory


def _out_array(reducer: Any, q: cl.CommandQueue, g: Geometry, out: Any,
               allocator: Any) -> cla.Array:
    rdt = reducer.spec.result_dtype
    shape, order = g.kept, g.order
    if out is None:
        return empty_result(q, shape, rdt, order, allocator)
    if not isinstance(out, cla.Array) or out.dtype != rdt or tuple(out.shape) != shape:
        raise TypeError(f"out must be a pyopencl Array of shape {shape} and dtype {rdt}")
    ok = out.flags.c_contiguous if order == "C" else out.flags.f_contiguous
    if not ok or out.offset:
        raise ValueError(f"out must be {order}-contiguous (like the input) and start at "
                         "offset 0 of its buffer")
    return out


class AxisCall:
    """What a call along an axis seen before runs: a fresh result from its template, the
    prepared launch (buffers set per call), and whether the queue is in order (pending events
    of the queue itself are not waited for)."""

    __slots__ = ("results", "launch", "in_order")

    def __init__(self, results: ResultFactory, launch: Any, in_order: Any) -> None:
        self.results, self.launch, self.in_order = results, launch, in_order


def reduce_axis(reducer: Any, x: Any, y: Any, axis: Any, keepdims: bool,
                q: cl.CommandQueue, out: Any, wait_for: Any) -> cla.Array:
    """`r(x, axis=..., keepdims=...)`: numpy's shape and result dtype, on the device."""
    spec = reducer.spec
    eng = axis_engine(reducer)
    # the warm path: a call seen before (same shape, strides, offset, axis and queue) of our
    # dtype and context, into a fresh result: its launch was prepared by that call
    if (y is None and out is None and wait_for is None and type(x) is cla.Array
            and x.dtype is spec.np_dtype and (x.context is reducer._ctx or x.context == eng.ctx)
            and (type(axis) is int or type(axis) is tuple and all(type(a) is int for a in axis))):
        k = (x.shape, x.strides, x.offset, axis, bool(keepdims), q.int_ptr)
        w = eng.warm.get(k)
        if w is not None:
            eng.warm.touch(k)
            res = w.results()
            waits = pending(x.events, in_order=w.in_order) if x.events else None
            res.events.append(w.launch(x.base_data, res.base_data, None, waits)[-1])
            return res
    if (y is None) != (spec.op != "dot"):
        raise TypeError("dot takes two arrays (x, y)" if spec.op == "dot"
                        else f"{spec.op} takes one array")
    if wait_for is not None and not all(isinstance(e, cl.Event) for e in wait_for):
        raise TypeError("wait_for must be a list of pyopencl Events")
    xd = device_array(reducer, x, q, "x")
    yd = device_array(reducer, y, q, "y") if y is not None else None
    if yd is not None and (yd.shape != xd.shape or yd.strides != xd.strides):
        raise ValueError(f"x and y differ in shape or layout ({xd.shape} vs {yd.shape})")
    # cached for plain ints only: 1.0 == 1 and True == 1 as dict keys, and geometry() must
    # see those to reject them
    plain = type(axis) is int or (type(axis) is tuple and all(type(a) is int for a in axis))
    key = (xd.shape, xd.strides, axis, bool(keepdims))
    g = eng.geometries.get(key) if plain else None
    if g is None:
        g = geometry(tuple(xd.shape), bool(xd.flags.c_contiguous), axis, keepdims)
        if plain:
            if len(eng.geometries) > 256:
                eng.geometries.clear()
            eng.geometries[key] = g
    res = _out_array(reducer, q, g, out, eng.allocator)
    waits = [*(wait_for or ()), *xd.events, *res.events]
    if yd is not None:
        waits += yd.events
    outer, r, inner = g.outer, g.r, g.inner
    if outer * inner == 0:
        return res
    if r == 0:
        if spec.op in ("min", "max"):
            raise ValueError("zero-size array to reduction operation "
                             f"{'minimum' if spec.op == 'min' else 'maximum'} which has no "
                             "identity")
        res.fill(spec.result_dtype.type(1 if spec.op == "prod" else 0), queue=q,
                 wait_for=waits or None)
        return res
    if not g.mem:  # axis=(): nothing reduced, numpy returns the elements in the result dtype
        v = (xd if yd is None else xd * yd).get(queue=q)  # a copy: rare, not worth a kernel
        res.set(np.asarray(v.astype(res.dtype).reshape(g.kept), order=g.order), queue=q)
        return res
    isz = spec.itemsize
    yb, yoff = (yd.base_data, yd.offset // isz) if yd is not None else (None, 0)
    if r == 1 and eng.info.type == "cpu":  # a copy: the strided layout streams it (1 x n)
        outer, inner = 1, outer * inner
    if inner == 1:
        launch = short_rows.launch_for(eng, q, xd.offset // isz, outer, r) \
            if yd is None and r in short_rows.LENGTHS else None
        if launch is None:
            la = eng.launcher(eng.choose("rows", outer, r)[0], "rows")
            launch = la.prepare_rows(q, xd.offset // isz, yoff, outer, r)
    else:
        la = eng.launcher(eng.choose("cols", r, inner)[0], "cols")
        launch = la.prepare_cols(q, xd.offset // isz, yoff, outer, r, inner)
    # completed events and those of q itself (in order) are not waited for: NVIDIA's driver
    # pays a host round trip for each event in a wait list
    ordered = in_order(q)
    res.add_event(launch(xd.base_data, res.base_data, yb, pending(waits, in_order=ordered))[-1])
    if yd is None and plain and xd is x:
        call = AxisCall(ResultFactory(q, spec.result_dtype, eng.allocator, g.kept, g.order),
                        launch, ordered)
        eng.warm.keep((x.shape, x.strides, x.offset, axis, bool(keepdims), q.int_ptr), call)
        if type(axis) is int and q is reducer.queue and out is None and wait_for is None:
            # the reducer's own (Reducer.__call__ reads it)
            reducer._axis_hot.keep((x.shape, x.strides, x.offset, axis, bool(keepdims)), call)
    return res


def explain_axis(reducer: Any, shape: tuple[int, ...], axis: Any,
                 order: str = "C") -> AxisExplanation:
    """Which config `r(x, axis=axis)` runs for an array of this shape and order."""
    g = geometry(tuple(shape), order == "C" or len(shape) < 2, axis, False)
    if g.r == 1 and axis_engine(reducer).info.type == "cpu":
        return explain(reducer, "cols", 1, g.outer * g.inner)
    if g.inner == 1:
        e = explain(reducer, "rows", g.outer, g.r)
        why = short_rows.explain_why(axis_engine(reducer), reducer.queue, g.outer, g.r) \
            if g.r in short_rows.LENGTHS and order == "C" else None
        return dataclasses.replace(e, why=f"{why}; {e.why}") if why else e
    return explain(reducer, "cols", g.r, g.inner)
