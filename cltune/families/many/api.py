"""Many small reductions in one launch, as applications call them:

    >>> r = cltune.get_reducer(queue, "sum", np.float32)
    >>> sums = r.many([x1, x2, x3])                  # one device array: sums[i] == r(xi)
    >>> norms = cltune.norm_many([g1, g2, g3])       # L2 norms, like torch._foreach_norm

The arrays are pyopencl Arrays (any offsets, 1-D or n-D contiguous: every element is
reduced) or numpy arrays (uploaded), all of the reducer's dtype and context, of any lengths.
k arrays take one launch per `slots` of them (kernels/many.cl), and a finishing launch where
an array spans more than one work-group; the config is the tuned one nearest to the call's
class (log2 k, log2 mean length) or the builtin one of its class (`explain_many`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cltools

from cltune.device.select import info_for, require_usable
from cltune.families.many.family import ManyVariant, class_of
from cltune.families.many.serve import ManyEngine, ManyExplanation
from cltune.opencl.arrays import device_array
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order, pending

__all__ = ["explain_many", "norm_many", "reduce_many"]

_engines: ContextCache[tuple[ManyEngine, Any]] = ContextCache()
_COMPLETE = cl.command_execution_status.COMPLETE


def _engine(ctx: cl.Context, dev: cl.Device, info: Any, op: str, dtype: np.dtype,
            db: str | None) -> tuple[ManyEngine, Any]:
    """The engine of (context, device, op/dtype, database) and its memory pool; `info` None:
    the device's, checked usable (once, when the engine is made). Keyed by the dtype object
    (its name costs ~1.5 us a call); an op/dtype that is no variant raises OpError."""
    def make() -> tuple[ManyEngine, Any]:
        variant = ManyVariant(op, dtype.name)
        pool = cltools.MemoryPool(cltools.ImmediateAllocator(cl.CommandQueue(ctx, dev)))
        usable = info if info is not None else require_usable(dev, info_for(dev))
        return ManyEngine(ctx, dev, usable, variant, db), pool

    return _engines.get(ctx, (dev.int_ptr, op, dtype, db), make)


def _gather(xs: Any, dtype: np.dtype, ctx: cl.Context, queue: cl.CommandQueue,
            ) -> tuple[list[cl.Buffer | None], list[int], list[int], list[list[cl.Event]]]:
    """The call's arrays as (buffers, lengths, byte offsets, the event lists not empty)."""
    if type(xs) not in (list, tuple) and (isinstance(xs, (np.ndarray, cla.Array))
                                          or not isinstance(xs, Sequence)):
        raise TypeError("many() takes a list (or tuple) of arrays, not "
                        f"{type(xs).__name__}")
    if not xs:
        raise ValueError("many() needs at least one array (got an empty list)")
    # a contiguous device array of our dtype and context passes as it is (checked by
    # identity, ~0.1 us); anything else is checked (and uploaded) by device_array, whose
    # messages name the argument (~5 us: the training loop's k arrays must not pay that)
    ptr = ctx.int_ptr
    bufs, lengths, offsets, events = [], [], [], []
    for i, x in enumerate(xs):
        if not (type(x) is cla.Array and x.dtype is dtype and (x._flags or x.flags).forc
                and x.context.int_ptr == ptr):
            x = device_array(x, dtype, ctx, queue, f"xs[{i}]", flat=True)
        bufs.append(x.base_data)
        lengths.append(x.size)
        offsets.append(x.offset)
        if x.events:
            events.append(x.events)
    return bufs, lengths, offsets, events


def _drop_complete(lists: list[list[cl.Event]]) -> None:
    """Completed events leave the arrays' lists (as pyopencl's `Array.finish()` does): the
    upload of an array on the call's in-order queue, which `pending` skips but keeps, is
    then not looked at again by every later call (~0.5 us an array)."""
    for evs in lists:
        for e in list(evs):
            if e.command_execution_status == _COMPLETE:
                try:
                    evs.remove(e)
                except ValueError:  # another thread removed it
                    pass


def _result(queue: cl.CommandQueue, dtype: np.dtype, k: int, pool: Any) -> cla.Array:
    """k results from the pool through pyopencl's fast constructor (cla.empty spends ~8 us on
    shape checks), falling back to cla.empty if that path changes."""
    try:
        return cla.Array(None, (k,), dtype, allocator=pool, strides=(dtype.itemsize,),
                         _fast=True, _size=k, _context=queue.context, _queue=queue)
    except TypeError:  # pragma: no cover - other pyopencl versions
        return cla.empty(queue, (k,), dtype, allocator=pool)


def _run(eng: ManyEngine, pool: Any, xs: Any, dtype: np.dtype, queue: cl.CommandQueue,
         out: cla.Array | None, wait_for: list[cl.Event] | None) -> cla.Array:
    bufs, lengths, offsets, events = _gather(xs, dtype, eng.ctx, queue)
    la, lay = eng.plan(tuple(lengths), tuple(offsets))
    rdt = eng.result_dtype
    k = len(bufs)
    if out is None:
        out = _result(queue, rdt, k, pool)
    elif not (isinstance(out, cla.Array) and out.dtype == rdt and out.size == k
              and out.flags.forc):
        raise TypeError(f"out must be a contiguous pyopencl Array of {k} {rdt}")
    waits = None
    if wait_for is not None:
        if not all(isinstance(e, cl.Event) for e in wait_for):
            raise TypeError("wait_for must be a list of pyopencl Events")
        waits = list(wait_for)
    if events or out.events:
        _drop_complete(events)
        more = pending(*events, out.events, in_order=in_order(queue))
        if more:
            waits = [*(waits or ()), *more]
    evs = la.launch(queue, lay, bufs, out.base_data, out.offset // rdt.itemsize, waits)
    out.events = [evs[-1]]  # it waited for all of out's
    return out


def reduce_many(reducer: Any, xs: Sequence[Any], queue: cl.CommandQueue,
                out: cla.Array | None = None, wait_for: list[cl.Event] | None = None,
                ) -> cla.Array:
    """`Reducer.many`: the reducer's op over each array of `xs`, k results in one device
    array (the i-th is `reducer(xs[i])`, in numpy's result dtype)."""
    spec = reducer.spec
    if spec.op == "dot":
        raise TypeError("many() takes sum, prod, min or max reducers (dot is not offered)")
    eng = reducer._eng
    e, pool = _engine(eng.ctx, eng.dev, eng.info, spec.op, spec.np_dtype, eng.db)
    return _run(e, pool, xs, spec.np_dtype, queue, out, wait_for)


def _queue_of(xs: Sequence[Any], queue: cl.CommandQueue | None) -> cl.CommandQueue:
    if queue is not None:
        return queue
    for x in xs if isinstance(xs, Sequence) else ():
        if isinstance(x, cla.Array) and x.queue is not None:
            return x.queue
    raise TypeError("norm_many needs queue= when no array is a pyopencl Array with a queue")


def norm_many(xs: Sequence[Any], queue: cl.CommandQueue | None = None, *,
              out: cla.Array | None = None, wait_for: list[cl.Event] | None = None,
              db: str | None = None) -> cla.Array:
    """The L2 norm of each array of `xs` (float32 or float64, all of one dtype and context), k
    results in one device array of that dtype: `norm_many(xs)[i]` is `np.linalg.norm(xs[i])`
    (float32 accumulates in double where the device has it). `queue`: where to run (default:
    the first pyopencl Array's).

        >>> norms = norm_many([cla.to_device(q, g) for g in grads]).get()
    """
    q = _queue_of(xs, queue)
    first = xs[0] if isinstance(xs, Sequence) and xs else None
    dtype = np.dtype(getattr(first, "dtype", np.float32))
    e, pool = _engine(q.context, q.device, None, "norm", dtype, db)
    return _run(e, pool, xs, dtype, q, out, wait_for)


def explain_many(target: Any, op: str, dtype: Any, k: int, n: int, *,
                 db: str | None = None) -> ManyExplanation:
    """Which config serves `op` over k arrays of mean length n on the target (a Reducer, or
    a pyopencl CommandQueue), and why (its level of the fallback chain)."""
    if isinstance(target, cl.CommandQueue):
        ctx, dev, info = target.context, target.device, None
    else:
        eng = target._eng
        ctx, dev, info, db = eng.ctx, eng.dev, eng.info, eng.db
    e, _ = _engine(ctx, dev, info, op, np.dtype(dtype), db)
    _, ex = e.served(class_of([max(0, int(n))] * max(1, int(k))))
    return dataclasses.replace(ex, shape=(int(k), int(n)))
