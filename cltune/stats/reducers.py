"""`cltune.get_reducer` for every op: the tuned reductions of cltune.families.reduce.api (`sum`,
`prod`,
`min`, `max`, `dot`) and the arg-reductions and statistics of cltune.stats.api (`argmin`,
`argmax`, `mean`, `var`, `std`, `norm`, `count_nonzero`, `any`, `all`), behind one call.

    >>> r = get_reducer(queue, "argmax", np.float32)
    >>> int(r(x).get())                       # like numpy.argmax(x)
    >>> get_reducer(queue, "var")(x, axis=1, ddof=1).get()   # like numpy.var(x, 1, ddof=1)

cltune.families.reduce.api stays free of the expression family (it never loads the tuner); this
module is
what the package exports as `get_reducer`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core import family
from cltune.core.ops import OPS as PLAIN_OPS
from cltune.core.ops import OpError
from cltune.families.reduce.api import Reducer
from cltune.families.reduce.api import get_reducer as _reduce
from cltune.opencl import caches
from cltune.stats import anyvec, argvec, normvec, warm  # normvec: also axis short rows' sums
from cltune.stats import api as stats
from cltune.stats import axis as stats_axis

#: ops served by cltune.stats.api (each a tuned cltune.ReductionKernel)
STATS_OPS = ("argmin", "argmax", "mean", "var", "std", "norm", "count_nonzero", "any", "all")


class StatsReducer:
    """A statistic or arg-reduction over the whole array or along axes (numpy semantics, see
    cltune.stats.api), with the reducer's call convention: `r(x, *, queue=None, **options)` where
    options are the statistic's own (`axis`, `keepdims`; `ddof` for var/std, `ord` for norm);
    numpy arrays are uploaded (C- or F-ordered as they are)."""

    def __init__(self, queue: cl.CommandQueue, op: str, dtype: np.dtype) -> None:
        self.queue, self.op, self.dtype = queue, op, dtype
        # the warm call's key (cltune.stats.warm): the kernel op and scalars of the defaults
        self._warm_op = "norm2" if op == "norm" else op
        self._warm_scalars = (0.0,) if op in ("var", "std") else ()

    def __call__(self, x: Any, *, queue: cl.CommandQueue | None = None,
                 **options: Any) -> cla.Array:
        if not options and queue is None and type(x) is cla.Array and x.dtype is self.dtype:
            # a kept call (cltune.stats.warm): a statistic of every element, served before
            run = warm.calls.hit((self._warm_op, self.queue, x.dtype, x.size))
            if (run is not None and (x._flags or x.flags).c_contiguous
                    and (res := run(x, self._warm_scalars)) is not None):
                return res
        q = queue or self.queue
        if isinstance(x, np.ndarray):
            if x.dtype != self.dtype:
                raise TypeError(f"x has dtype {x.dtype}, this reducer is for {self.dtype}")
            if not (x.flags.c_contiguous or x.flags.f_contiguous):
                x = np.ascontiguousarray(x)
            x = cla.to_device(q, x)
        elif isinstance(x, cla.Array) and x.dtype != self.dtype:
            raise TypeError(f"x has dtype {x.dtype}, this reducer is for {self.dtype} "
                            f"(use get_reducer(..., dtype={x.dtype}))")
        return getattr(stats, self.op)(x, queue=q, **options)

    def many(self, xs: Any, *, queue: cl.CommandQueue | None = None) -> cla.Array:
        """`norm` only: the L2 norm of each array of `xs` in one launch (cltune.norm_many)."""
        if self.op != "norm":
            raise TypeError(f"many() is offered for norm among the statistics, not {self.op}")
        return family.entry("many", "api").norm_many(xs, queue or self.queue)

    def explain(self, n: int) -> Any:
        """Which config of the statistic's ReductionKernel serves n elements, and why (for
        argmin/argmax on a CPU: kernels/argvec.cl's plan, cltune.stats.argvec; for norm, its
        default ord, on a CPU: kernels/normvec.cl's, cltune.stats.normvec; any/all on a CPU:
        kernels/anyvec.cl's, cltune.stats.anyvec)."""
        if self.op in ("argmin", "argmax"):
            vec = argvec.explain(self.queue, self.dtype, n)
            if vec is not None:
                return vec
        if self.op in ("any", "all"):
            vec = anyvec.explain(self.queue, self.dtype, n)
            if vec is not None:
                return vec
        if self.op == "norm":
            vec = normvec.explain(self.queue, self.dtype, n)
            if vec is not None:
                return vec
        op = "norm2" if self.op == "norm" else self.op  # the kernel of norm's default ord
        return stats.kernel(op, self.queue.context, self.dtype).explain(n)

    def explain_axis(self, shape: tuple[int, ...], axis: Any, order: str = "C",
                     **options: Any) -> Any:
        """The config `r(x, axis=axis)` runs for an array of this shape and order (`C` or
        `F`): the nearest tuned shape class of the statistic (`knl.tune(x, axis=k)`), else the
        heuristic for the device's kind.
        `options` pick the statistic's kernel (`ord` for norm)."""
        return stats_axis.explain(self.op, self.queue, self.dtype, shape, axis, order,
                                  **options)


def get_reducer(target: Any, op: str = "sum", dtype: Any = np.float32, *,
                db: str | None = None) -> Reducer | StatsReducer:
    """A tuned reducer for `op` over `dtype` on the target's device (a pyopencl Device,
    Context or CommandQueue). `sum`/`prod`/`min`/`max`/`dot` are cltune.families.reduce.api's
    reducers
    (also along axes and over segments); the arg-reductions and statistics in `STATS_OPS`
    are cltune.stats.api' functions as reducers. See cltune.families.reduce.api.get_reducer."""
    if op in STATS_OPS:
        if db is not None:
            raise ValueError(f"get_reducer(op={op!r}) reads cltune's default database; db= "
                             "is for sum/prod/min/max/dot (tune a statistic with "
                             f"cltune.stats.api.kernel({op!r}, ctx, dtype).tune(x, db=...))")
        # the plain reducer resolves the target (its cached context for a Device, the usable
        # check) and lends its queue; the StatsReducer of that queue, op and dtype is kept
        q = _reduce(target, "sum", np.float32).queue
        dt = np.dtype(dtype)
        key = (q.int_ptr, op, dt)
        hit = _stats_reducers.get(key)
        if hit is None or hit.queue is not q:
            hit = StatsReducer(q, op, dt)
            _stats_reducers[key] = hit
            while len(_stats_reducers) > 64:
                _stats_reducers.pop(next(iter(_stats_reducers)))
        return hit
    if not isinstance(op, str) or op not in PLAIN_OPS:
        raise OpError(f"unknown op {op!r:.40}; choose one of {', '.join(PLAIN_OPS)}, or a "
                      f"statistic: {', '.join(STATS_OPS)}")
    return _reduce(target, op, dtype, db=db)


#: (queue, op, dtype) -> the StatsReducer get_reducer handed out (each holds its queue)
_stats_reducers: dict[tuple, StatsReducer] = {}


@caches.register
def _forget_stats_reducers() -> None:
    _stats_reducers.clear()
