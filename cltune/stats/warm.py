"""The warm call of a statistic of a whole array (cltune.stats.api without `axis` and `keepdims`,
and its reducers), and along an axis (`along_calls`): the first call of a statistic on a
(queue, dtype, size) takes the general path, which keeps what served it here (the expression
kernel's prepared launch, `ReductionKernel.warm_call`, or kernels/argvec.cl's / normvec.cl's /
anyvec.cl's prepared `Call`); a later call checks the array by identity and launches, the
result from the fast constructor. The general path's checks, lookups, plan and result cost ~5-7
us a call on the CPU runtimes here (cltune.argmax 9.3 -> 4.0 us a call at 2^12 on Intel's, var
10.4 -> 6.5 where r(x) takes 5.6); the plain reducer's warm call is kept lean the same way
(cltune.families.reduce.api).

An entry is keyed by (kernel op, queue, dtype, size) and holds its queue (so the queue's
address, what it compares by, is not reused while the entry is kept); it serves a C-contiguous
pyopencl Array at any offset (the vector kernels: at a whole element's, else the general path
serves). An entry of the expression kernel checks on every call that its launch still serves
(the database read again after tuning, the scratch grown), else the general path serves and
keeps a new one. Both caches are `PreparedCalls` (cltune.opencl.prepared): at most MAX_CALLS
entries each, the least recently used dropped first, emptied by `cltune.clear_caches()`.

Along an axis an entry is keyed by (op, queue, dtype, shape, (C, F) contiguity, axis,
keepdims) and launches the family's prepared launch (`AxisReducer.warm`) into a result of the
kept layout; the general path of such a call (geometry, kernel and reducer lookups, the
pyopencl invoker converting every argument) cost ~25 us a call more than the 1-D `r(x)` on
this 2-core host (`scripts/experiments/stats_axis_host.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result, result_layout
from cltune.families.expr.api import ReductionKernel
from cltune.families.expr_axis.api import cached_geometry, reducer_of
from cltune.opencl.events import pending
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scalars import ResultFactory
from cltune.stats import anyvec, argvec, normvec

_new = object.__new__

#: entries kept per cache (the least recently used dropped first)
MAX_CALLS = 64

#: (kernel op, queue, dtype, size) -> `run(x, scalars)`: the result, or None where the
#: general path must serve. Read inline by cltune.stats.api and its reducers (a call less per
#: statistic): an entry serves a C-contiguous x, of any allocator
calls: PreparedCalls = PreparedCalls(MAX_CALLS)

#: (op, queue, dtype, shape, (C, F) contiguity, axis, keepdims) -> `run(x, scalars)`, as
#: `calls` (read inline by cltune.stats.api)
along_calls: PreparedCalls = PreparedCalls(MAX_CALLS)


def _keep(op: str, x: cla.Array, q: cl.CommandQueue,
          run: Callable[[cla.Array, tuple], cla.Array | None]) -> None:
    # the key holds the queue: its address (what a queue compares by) is not reused meanwhile
    calls.keep((op, q, x.dtype, x.size), run)


def _servable(x: cla.Array) -> bool:
    return x.size > 0 and bool(x.flags.c_contiguous) and not x.offset % x.dtype.itemsize


def keep_expr(op: str, x: cla.Array, q: cl.CommandQueue, knl: ReductionKernel) -> None:
    """After the general path served `op` of every element of x on q with knl (0-d result)."""
    if _servable(x):
        run = knl.warm_call(q, x.size)
        if run is not None:
            _keep(op, x, q, run)


def keep_vector(op: str, x: cla.Array, q: cl.CommandQueue,
                c: anyvec.Call | argvec.Call | normvec.Call) -> None:
    """After the general path served `op` of every element of x on q with the vector
    kernels' prepared call c (anyvec, argvec, normvec; 0-d result)."""
    if _servable(x) and c.pool is not None:  # out-of-order queues have no pool for results
        _keep(op, x, q, c.warm)


def along_key(op: str, x: cla.Array, q: cl.CommandQueue, axis: Any, keepdims: bool) -> tuple:
    """An entry's key (axis as given: an int or a tuple of ints; the caller checks)."""
    fl = x._flags or x.flags
    return (op, q, x.dtype, x.shape, (fl.c_contiguous, fl.f_contiguous), axis, keepdims)


def keep_along(op: str, given: cla.Array, q: cl.CommandQueue, knl: ReductionKernel,
               axis: Any, keepdims: bool) -> None:
    """After the general path served `op` of `given` along `axis` on q with knl's axis
    skeleton (a contiguous, non-empty view with several outputs; not the 1-D kernel)."""
    if not (type(axis) is int or (type(axis) is tuple
                                  and all(type(a) is int for a in axis))):
        return
    if given.size == 0 or not given.flags.forc:
        return
    g = cached_geometry(given, axis, keepdims)
    if g.r == 0 or g.outer * g.inner <= 1:
        return
    launch = reducer_of(knl, q).warm(q, g.outer, g.r, g.inner)
    if launch is None:
        return
    rdt = knl.spec.dtype_result
    layout = result_layout(g.kept, rdt.itemsize, g.order)
    shape, order, pool = g.kept, g.order, knl.result_allocator(None)

    results = ResultFactory(q, rdt, pool, shape, order)

    def run(x: cla.Array, scalars: tuple) -> cla.Array | None:
        if x.allocator is None and results.fast:
            # ResultFactory.__call__ inlined (a frame less): the template's copy, its offset 0
            buf = results._alloc(results._nbytes)
            ev = launch((x.base_data, x.offset, *scalars), buf, 0,
                        pending(x.events, in_order=q) if x.events else None)
            if ev is None:
                return None
            res = _new(cla.Array)
            d = results._attrs.copy()
            d["base_data"] = buf
            d["events"] = [ev]
            res.__dict__ = d
            return res
        res = results() if x.allocator is None else empty_result(
            q, shape, rdt, order, knl.result_allocator(x.allocator), layout)
        ev = launch((x.base_data, x.offset, *scalars), res.base_data, res.offset,
                    pending(x.events, in_order=q) if x.events else None)
        if ev is None:
            return None
        res.events.append(ev)
        return res

    along_calls.keep(along_key(op, given, q, axis, keepdims), run)
