"""An expression reduction (`ExprSpec`, the prelude of `cltune.ReductionKernel`) along an axis:
the builds of kernels/expr_axis.cl (cached per context) and their launches.

The input is viewed as (outer, r, inner) in memory order (see `cltune.core.shapes.geometry`)
and every one of the outer * inner outputs is reduced over r. The config of a shape comes
from the fallback chain of `expr_axis/serve.py` (this expression's tuned size class nearest to
the shape, else `expr_axis/defaults.choose`'s heuristic); the application's expressions are
compiled as given, the config reaches the compiler only as integer `-D` values of a
validated `AxisExprConfig`.

    >>> knl = cltune.ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
    ...                              map_expr="x[i]*x[i]", arguments="__global const float *x")
    >>> red = axis_reducer(ctx, dev, knl.spec)
    >>> x = cla.to_device(queue, np.ones((64, 100), np.float32))  # (outer, r, inner): 64, 100, 1
    >>> out = cla.empty(queue, (64,), np.float32)
    >>> events = red.enqueue(queue, [x.base_data, x.offset], 64, 100, 1, out.base_data, 0)
    >>> out.get()[:3], red.pick(64, 100, 1).level   # level: 'exact', ..., or 'builtin'
    (array([100., 100., 100.], dtype=float32), 'builtin')
"""

from __future__ import annotations

import builtins
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import copysign
from operator import itemgetter
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg

from cltune.core.serving import CltuneWarning
from cltune.core.shapes import (
    MAX_CLASS_STEPS,
    Geometry,
    class_of_view,
    empty_result,
    geometry,
    view_key,
)
from cltune.device.select import info_for
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import choose, heuristic_build, short_rows
from cltune.families.expr_axis.family import NAME
from cltune.families.expr_axis.kernel import AxisBuilt, build, streams, template_hash
from cltune.families.expr_axis.launch import AxisPlan, AxisScratch, device_plan, enqueue
from cltune.families.expr_axis.serve import AxisChoices, AxisTuned, resolve
from cltune.isolation.vetting import NoConfigRuns, verdict
from cltune.opencl.build import BuildError
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order, pending
from cltune.opencl.expression import ExprSpec
from cltune.opencl.kernel_args import set_scalar

_reducers: ContextCache[AxisReducer] = ContextCache()


@dataclass(frozen=True)
class AxisPick:
    """The config serving a shape and where it came from: `level` is a lookup level with
    `tuned` the stored class that serves it, or `builtin` (the heuristic for the shape)."""

    config: AxisExprConfig
    level: str
    why: str
    tuned: AxisTuned | None = None


class AxisReducer:
    """One spec on one device (and tuning database): the fallback chain's answer per layout,
    a config and plan per shape (cached), builds, scratch per queue. Thread-safe: launches
    are serialised (kernel arguments are shared state)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, spec: ExprSpec,
                 db: str | None = None, kernel: Any = None) -> None:
        self.ctx, self.dev, self.spec, self.db = ctx, dev, spec, db
        #: the application's ReductionKernel: with it, what serves is vetted first (vetting);
        #: a tuning target's own reducer (in the worker) has none
        self.kernel = kernel
        self.info = info_for(dev)
        self._item = spec.dtype_out.itemsize
        self._stream = streams(spec)  # (columns may then be streamed on CPUs)
        self._choices: dict[str, AxisChoices] = {}
        self._plans: dict[tuple[int, int, int], tuple[AxisBuilt, AxisPlan]] = {}
        self._picks: dict[tuple[int, int, int], AxisPick] = {}
        self._scratch: dict[int, AxisScratch] = {}
        self._lock = threading.Lock()

    def choices(self, layout: str) -> AxisChoices:
        """What the fallback chain knows for this expression and layout (read once)."""
        ch = self._choices.get(layout)
        if ch is None:
            ch = resolve(self.info, self.spec.fingerprint, layout, self.db)
            with self._lock:
                ch = self._choices.setdefault(layout, ch)
        return ch

    def reload(self) -> None:
        """Read the database again (after tuning): choices and plans are recomputed."""
        with self._lock:
            self._choices.clear()
            self._plans.clear()
            self._picks.clear()

    def config(self, outer: int, r: int, inner: int) -> AxisExprConfig:
        """The config that serves this shape (after any fallback for the kernel's limits)."""
        return self.plan(outer, r, inner)[0].config

    def pick(self, outer: int, r: int, inner: int) -> AxisPick:
        """The config that serves this shape, and where it came from."""
        key = (outer, r, inner)
        hit = self._picks.get(key)
        if hit is None:
            self.plan(outer, r, inner)
            hit = self._picks[key]
        return hit

    def plan(self, outer: int, r: int, inner: int) -> tuple[AxisBuilt, AxisPlan]:
        key = (outer, r, inner)
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        built, pick = self._serve(outer, r, inner)
        p = device_plan(built.config, self.info, outer, r, inner)
        whole = short_rows(self.info, built.config, p, outer, r, inner, self._item)
        if whole:  # the same config built for rows of exactly this length (CPUs)
            try:
                built = build(self.ctx, self.dev, self.info, self.spec, built.config, whole)
            except BuildError:  # the general build serves
                pass
        hit = (built, p)
        with self._lock:
            if len(self._plans) > 256:
                self._plans.clear()
                self._picks.clear()
            self._plans[key] = hit
            self._picks[key] = pick
        return hit

    def _serve(self, outer: int, r: int, inner: int) -> tuple[AxisBuilt, AxisPick]:
        layout, pos = view_key(outer, r, inner)
        ch = self.choices(layout)
        t = ch.nearest(pos)
        why_not = ch.why
        if t is None and ch.tuned:
            why_not = (f"the tuned classes ({', '.join(x.size_class for x in ch.tuned)[:200]}; "
                       f"{ch.level}) are more than 2^{MAX_CLASS_STEPS} away from this shape: "
                       "the heuristic config for the shape")
        if t is not None and self.kernel is not None and ch.level != "exact":
            why = self._vet(t.config, ch.level, outer, r, inner)
            if why:
                t, why_not = None, why
        if t is not None:
            try:
                return (build(self.ctx, self.dev, self.info, self.spec, t.config),
                        AxisPick(t.config, ch.level, ch.why, t))
            except BuildError as e:
                why_not = (f"the tuned config {t.config.short()} ({t.size_class}) does not "
                           f"build here: {str(e)[:200]}")
                warnings.warn(f"cltune: {why_not}; using the heuristic config",
                              CltuneWarning, stacklevel=6)
        if self.kernel is not None:
            cfg = choose(self.info, outer, r, inner, self.spec.dtype_out.itemsize,
                         *self._stream)
            why = self._vet(cfg, "builtin", outer, r, inner)
            if why:
                raise NoConfigRuns(f"no config of this expression runs along this axis on "
                                   f"{self.info.name}: {why_not}; {why}")
        built = heuristic_build(self.ctx, self.dev, self.info, self.spec, outer, r, inner)
        return built, AxisPick(built.config, "builtin", why_not)

    def _vet(self, cfg: AxisExprConfig, level: str, outer: int, r: int, inner: int) -> str:
        """'' when `cfg` may be built here for this view (vetting), else why not."""
        layout, key = class_of_view(outer, r, inner)
        v = verdict(self.info, NAME, f"{self.spec.fingerprint}/{layout}", cfg, key,
                    source_hash=template_hash(), options={"kernel": self.kernel})
        if v.buildable:
            return ""
        return f"{level} config {cfg.short()} passed over: {v.reason}"

    def enqueue(self, queue: cl.CommandQueue, user_args: Sequence[object], outer: int, r: int,
                inner: int, res: cl.Buffer, res_off: int,
                wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """Reduce (outer, r, inner) along r into outer * inner results at `res` + `res_off`
        bytes; `user_args` are the kernel values of the application's arguments (each vector
        as its base buffer and byte offset). Returns the kernel events."""
        b, p = self.plan(outer, r, inner)
        return self.launch(queue, b, p, user_args, outer, r, inner, res, res_off, wait_for)

    def launch(self, queue: cl.CommandQueue, b: AxisBuilt, p: AxisPlan,
               user_args: Sequence[object], outer: int, r: int, inner: int, res: cl.Buffer,
               res_off: int, wait_for: Sequence[cl.Event] | None = None) -> list[cl.Event]:
        """`enqueue` with a given build and plan (the tuner, tests and experiments pick
        their own)."""
        with self._lock, b.lock:
            s = self._scratch.get(queue.int_ptr)
            if s is None:
                s = self._scratch[queue.int_ptr] = AxisScratch(self.ctx, queue)
            return enqueue(queue, s, b, p, user_args, outer, r, inner, res, res_off,
                           self._item, wait_for)

    def warm(self, q: cl.CommandQueue, outer: int, r: int,
             inner: int) -> Callable[..., cl.Event | None] | None:
        """The launch of the (outer, r, inner) view on the in-order queue `q`, prepared for
        calls in a loop: `launch(user_args, res, res_off, wait_for)` enqueues what `enqueue`
        would, every kernel argument set from values converted once (no plan, lookup or
        argument conversion a call); it returns None, launching nothing, once the view's
        plan no longer serves (the database read again, plans dropped) or the queue's scratch
        is smaller than its split needs (`enqueue` grows it). None here for an out-of-order
        queue."""
        key = (outer, r, inner)
        hit = self.plan(outer, r, inner)
        b, p = hit
        with self._lock:
            s = self._scratch.get(q.int_ptr)
            if s is None:
                s = self._scratch[q.int_ptr] = AxisScratch(self.ctx, q)
        if not s.in_order:
            return None
        need = p.split * outer * inner * self._item if p.split > 1 else 0
        types = [None if t is None else np.dtype(t).type for t in self.spec.scalar_arg_dtypes()]
        nu, wg, two = len(types), b.config.wg, p.split > 1
        res_at = nu + 5
        k1, k2 = b.stage1, b.stage2
        g1, l1 = (p.groups * wg, p.split), (wg, 1)
        g2, l2 = p.stage2_sizes(wg, outer * inner)
        dims = (np.int64(r), np.int64(outer), np.int64(inner))
        last1, last2 = np.int64(p.chunk), np.int64(p.split)
        plans, lock, block = self._plans, self._lock, b.lock
        # a kernel whose arguments this launch set last (its `_clt_owner`; launch.enqueue and
        # other launches take it) keeps them: a call with the same scalars, result offset and
        # partials sets only the buffers (~1.5 us a call less than setting all of them)
        token = object()
        bufs = [i for i, t in enumerate(types) if t is None]
        vals = [(i, t) for i, t in enumerate(types) if t is not None]
        seen: list[Any] = [None, None, None]  # user scalars, result offset, partials
        pick = itemgetter(*(i for i, _ in vals)) if vals else (lambda user: ())
        # == takes -0.0 for 0.0 (x / a would flip an infinity's sign): floats' signs too
        fidx = [i for i, t in vals if np.issubdtype(t, np.floating)]
        signs = None if not fidx else (lambda user: [copysign(1.0, user[i]) for i in fidx])

        def launch(user: Sequence[Any], res: cl.Buffer, res_off: int,
                   wait_for: list[cl.Event] | None) -> cl.Event | None:
            if plans.get(key) is not hit or s.capacity < need:
                return None
            lock.acquire()  # both by hand: ~0.2 us less than `with lock, block`
            block.acquire()
            try:
                # the user's scalars, and floats' signs (none: no calls to make)
                uv = ((pick(user), signs(user) if signs is not None else ()) if vals
                      else _NO_SCALARS)
                same = seen[0] == uv and seen[1] == res_off and seen[2] is s.partials
                if (same and not two and getattr(k1, "_clt_owner", None) is token):
                    # one launch whose kernel still holds this launch's arguments: the
                    # buffers only (the loop below without its tuples and checks)
                    for i in bufs:
                        k1.set_arg(i, user[i])
                    k1.set_arg(res_at, res)
                    ev = cl.enqueue_nd_range_kernel(q, k1, g1, l1, None, wait_for)
                    s.last = ev
                    return ev
                for k, tail in ((k1, last1), (k2, last2)) if two else ((k1, last1),):
                    if same and getattr(k, "_clt_owner", None) is token:
                        for i in bufs:
                            k.set_arg(i, user[i])
                        k.set_arg(nu + 5, res)
                        continue
                    k._clt_owner = None  # half set: nobody's until the end
                    for i, t in enumerate(types):
                        if t is None:
                            k.set_arg(i, user[i])
                        else:
                            set_scalar(k, i, t(user[i]))
                    for j, v in enumerate(dims):
                        set_scalar(k, nu + j, v)
                    set_scalar(k, nu + 3, tail)
                    k.set_arg(nu + 4, s.partials)
                    k.set_arg(nu + 5, res)
                    set_scalar(k, nu + 6, np.int64(res_off))
                    k._clt_owner = token
                seen[:] = [uv, res_off, s.partials]
                ev = cl.enqueue_nd_range_kernel(q, k1, g1, l1, None, wait_for)
                if two:
                    ev = cl.enqueue_nd_range_kernel(q, k2, g2, l2, None, None)
                s.last = ev
            finally:
                block.release()
                lock.release()
            return ev
        return launch


#: a warm launch's (scalars, signs) when the expression takes no scalars of the application's
_NO_SCALARS: tuple = ((), ())


def axis_reducer(ctx: cl.Context, dev: cl.Device, spec: ExprSpec,
                 db: str | None = None, kernel: Any = None) -> AxisReducer:
    """The (cached, per context) AxisReducer of `spec` on `dev` reading the database `db`
    (None: the default one); `kernel`, the application's ReductionKernel of `spec`, lets it
    vet what it serves."""
    hit = _reducers.get(ctx, (dev.int_ptr, spec, db),
                        lambda: AxisReducer(ctx, dev, spec, db, kernel))
    if hit.kernel is None and kernel is not None:
        hit.kernel = kernel
    return hit


# ---- a ReductionKernel's call along axes ---------------------------------------------------
def reducer_of(knl: Any, q: cl.CommandQueue) -> AxisReducer:
    """The AxisReducer of `knl` for calls on `q`, kept on the kernel per queue (the queue is
    held, so its address is not reused while kept): `q.context`, `q.device` and the shared
    cache's key (the spec's hash) cost the host ~2 us a call otherwise."""
    cache = knl._along_reducers
    hit = cache.get(q.int_ptr)
    if hit is not None and hit[0] is q:
        return hit[1]
    red = axis_reducer(q.context, q.device, knl.spec, knl.db, knl)
    if len(cache) >= 8:
        cache.clear()
    cache[q.int_ptr] = (q, red)
    return red


_geometries: dict[tuple, Geometry] = {}


def cached_geometry(x: cla.Array, axis: Any, keepdims: bool) -> Geometry:
    c_order = bool(x.flags.c_contiguous)
    key, g = None, None
    # only plain ints are keys: 1.0 == 1 as a key, yet is no axis (geometry() says so)
    if type(axis) is int or (type(axis) is tuple
                             and builtins.all(type(a) is int for a in axis)):
        key = (x.shape, c_order, axis, bool(keepdims))
        g = _geometries.get(key)
    if g is None:
        g = geometry(tuple(x.shape), c_order, axis, keepdims)
        if key is not None:
            if len(_geometries) > 1024:
                _geometries.clear()
            _geometries[key] = g
    return g


def flat(x: cla.Array) -> cla.Array:
    if x.ndim == 1:
        return x
    return x.reshape(x.size, order="C" if x.flags.c_contiguous else "F")


def reduce_along(knl: Any, args: tuple, x: cla.Array, q: cl.CommandQueue,
                 axis: Any, keepdims: bool, waits: list) -> cla.Array:
    """`knl(*args)` along `axis`: `args` as a call takes them, their vectors contiguous arrays
    of x's shape and memory order (checked by the caller); numpy's result shape."""
    g = cached_geometry(x, axis, keepdims)
    rdt = knl.spec.dtype_result
    nout = g.outer * g.inner
    if nout == 1 and g.mem:  # every element: the tuned 1-D kernel
        flats = [flat(a) if isinstance(t, VectorArg) else a
                 for a, t in zip(args, knl.spec.arguments, strict=True)]
        out = (empty_result(q, g.kept, rdt, "C", knl.result_allocator(x.allocator))
               if g.kept != () else None)
        return knl(*flats, queue=q, out=out)
    res = empty_result(q, g.kept, rdt, g.order, knl.result_allocator(x.allocator))
    if nout == 0:
        return res
    user: list[Any] = []
    for a, t in zip(args, knl.spec.arguments, strict=True):
        user += (a.base_data, a.offset) if isinstance(t, VectorArg) else [a]
    red = reducer_of(knl, q)
    # completed events and those of q itself (in order) are not waited for: NVIDIA's driver
    # pays a host round trip for each event in a wait list
    evs = red.enqueue(q, user, g.outer, g.r, g.inner, res.base_data, res.offset,
                      wait_for=pending(waits, in_order=in_order(q)))
    res.add_event(evs[-1])
    return res
