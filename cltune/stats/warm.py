"""The warm call of a statistic of a whole array (cltune.stats.api without `axis` and
`keepdims`, and its reducers): the first call of a statistic on a (queue, dtype, size) takes
the general path, which keeps what served it here (the expression kernel's prepared launch,
`ReductionKernel.warm_call`, or kernels/argvec.cl's / normvec.cl's / anyvec.cl's prepared
`Call`); a later call checks the array by identity and launches, the result from the fast
constructor. The general path's checks, lookups, plan and result cost ~5-7 us a call on the
CPU runtimes here (cltune.argmax 9.3 -> 4.0 us a call at 2^12 on Intel's, var 10.4 -> 6.5
where r(x) takes 5.6); the plain reducer's warm call is kept lean the same way
(cltune.families.reduce.api).

An entry is keyed by (kernel op, queue, dtype, size) and holds its queue (so the queue's
address, what it compares by, is not reused while the entry is kept); it serves a C-contiguous
pyopencl Array at any offset (the vector kernels: at a whole element's, else the general path
serves). An entry of the expression kernel checks on every call that its launch still serves
(the database read again after tuning, the scratch grown), else the general path serves and
keeps a new one. Entries go with `cltune.clear_caches()`; at most MAX_CALLS are kept.
"""

from __future__ import annotations

from collections.abc import Callable

import pyopencl as cl
import pyopencl.array as cla

from cltune.families.expr.api import ReductionKernel
from cltune.opencl import caches
from cltune.stats import anyvec, argvec, normvec

#: entries kept (then all are dropped: sizes seen once do not pile up)
MAX_CALLS = 64

#: (kernel op, queue, dtype, size) -> `run(x, scalars)`: the result, or None where the
#: general path must serve. Read inline by cltune.stats.api and its reducers (a call less per
#: statistic): an entry serves a C-contiguous x, of any allocator
calls: dict[tuple, Callable[[cla.Array, tuple], cla.Array | None]] = {}


@caches.register
def forget() -> None:
    """Drop every entry (part of `cltune.clear_caches()`)."""
    calls.clear()


def _keep(op: str, x: cla.Array, q: cl.CommandQueue,
          run: Callable[[cla.Array, tuple], cla.Array | None]) -> None:
    if len(calls) >= MAX_CALLS:
        calls.clear()
    # the key holds the queue: its address (what a queue compares by) is not reused meanwhile
    calls[(op, q, x.dtype, x.size)] = run


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
