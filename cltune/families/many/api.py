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


def _engine(ctx: cl.Context, dev: cl.Device, info: Any, variant: ManyVariant,
            db: str | None) -> tuple[ManyEngine, Any]:
    """The engine of (context, device, variant, database) and its memory pool; `info` None:
    the device's, checked usable (once, when the engine is made)."""
    def make() -> tuple[ManyEngine, Any]:
        pool = cltools.MemoryPool(cltools.ImmediateAllocator(cl.CommandQueue(ctx, dev)))
        usable = info if info is not None else require_usable(dev, info_for(dev))
        return ManyEngine(ctx, dev, usable, variant, db), pool

    return _engines.get(ctx, (dev.int_ptr, str(variant), db), make)


def _arrays(xs: Any, dtype: np.dtype, ctx: cl.Context, queue: cl.CommandQueue) -> list[cla.Array]:
    if isinstance(xs, (np.ndarray, cla.Array)) or not isinstance(xs, Sequence):
        raise TypeError("many() takes a list (or tuple) of arrays, not "
                        f"{type(xs).__name__}")
    if not xs:
        raise ValueError("many() needs at least one array (got an empty list)")
    # a contiguous device array of our dtype and context passes as it is (checked by
    # identity, ~0.3 us); anything else is checked (and uploaded) by device_array, whose
    # messages name the argument (~5 us: the training loop's k arrays must not pay that)
    ptr = ctx.int_ptr
    out = []
    for i, x in enumerate(xs):
        if (type(x) is cla.Array and x.dtype is dtype and (x._flags or x.flags).forc
                and x.context.int_ptr == ptr):
            out.append(x)
        else:
            out.append(device_array(x, dtype, ctx, queue, f"xs[{i}]", flat=True))
    return out


def _run(eng: ManyEngine, pool: Any, xds: list[cla.Array], queue: cl.CommandQueue,
         out: cla.Array | None, wait_for: list[cl.Event] | None) -> cla.Array:
    v = eng.variant
    lengths = [x.size for x in xds]
    if v.op in ("min", "max") and 0 in lengths:
        i = lengths.index(0)
        raise ValueError(f"xs[{i}]: zero-size array to reduction operation "
                         f"{'minimum' if v.op == 'min' else 'maximum'} which has no identity")
    rdt = v.result_dtype
    k = len(xds)
    if out is None:
        out = cla.empty(queue, (k,), rdt, allocator=pool)
    elif not (isinstance(out, cla.Array) and out.dtype == rdt and out.size == k
              and out.flags.forc):
        raise TypeError(f"out must be a contiguous pyopencl Array of {k} {rdt}")
    if wait_for is not None and not all(isinstance(e, cl.Event) for e in wait_for):
        raise TypeError("wait_for must be a list of pyopencl Events")
    la, _ = eng.served(class_of(lengths))
    isz = v.spec.itemsize
    waits = list(wait_for or []) + (pending(*(x.events for x in xds), out.events,
                                            in_order=in_order(queue)) or [])
    evs = la.enqueue(queue, [(x.base_data, x.offset // isz, x.size) for x in xds],
                     out.base_data, out.offset // rdt.itemsize, waits or None)
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
    xds = _arrays(xs, spec.np_dtype, eng.ctx, queue)
    e, pool = _engine(eng.ctx, eng.dev, eng.info, ManyVariant(spec.op, spec.dtype), eng.db)
    return _run(e, pool, xds, queue, out, wait_for)


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
    variant = ManyVariant("norm", dtype.name)
    ctx = q.context
    xds = _arrays(xs, dtype, ctx, q)
    e, pool = _engine(ctx, q.device, None, variant, db)
    return _run(e, pool, xds, q, out, wait_for)


def explain_many(target: Any, op: str, dtype: Any, k: int, n: int, *,
                 db: str | None = None) -> ManyExplanation:
    """Which config serves `op` over k arrays of mean length n on the target (a Reducer, or
    a pyopencl CommandQueue), and why (its level of the fallback chain)."""
    variant = ManyVariant(op, np.dtype(dtype).name)
    if isinstance(target, cl.CommandQueue):
        ctx, dev, info = target.context, target.device, None
    else:
        eng = target._eng
        ctx, dev, info, db = eng.ctx, eng.dev, eng.info, eng.db
    e, _ = _engine(ctx, dev, info, variant, db)
    _, ex = e.served(class_of([max(0, int(n))] * max(1, int(k))))
    return dataclasses.replace(ex, shape=(int(k), int(n)))
