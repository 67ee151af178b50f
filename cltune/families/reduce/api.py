"""`get_reducer`: the tuned reduction as a library call for applications.

The database is read once per (context, device, op, dtype, database); kernels are built lazily
per config and cached; scratch lives per queue and grows only with n. The runtime never writes
to the database and never imports the tuner.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cltools

from cltune.core import family
from cltune.core.buckets import nearest
from cltune.core.ops import OpSpec
from cltune.core.serving import CltuneWarning, Explanation
from cltune.device.info import DeviceInfo
from cltune.device.select import info_for, require_usable
from cltune.families.reduce.config import Config
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.launch import SMALL_OFFSET, Launcher
from cltune.families.reduce.serve import Choice, builtin_choice, load_choices, vetted
from cltune.opencl import caches
from cltune.opencl.arrays import device_array
from cltune.opencl.build import BuildError
from cltune.opencl.events import pending
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scalars import ScalarFactory, new_scalar

_new = object.__new__

__all__ = ["Reducer", "get_reducer"]


_AXIS_API: list[Any] = []  # the axis family's api module, once imported


def _axis() -> Any:
    """The axis family's api (`r(x, axis=k)`, `r.segments`), through the registry: the 1-D
    family imports no other family (and a 1-D reduction never loads the axis family).
    Resolved once: a call along an axis is on the hot path."""
    if not _AXIS_API:
        _AXIS_API.append(family.entry("axis", "api"))
    return _AXIS_API[0]


class _Engine:
    """Shared state of all Reducers on one (context, device, op, dtype, db)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec,
                 db: str | None) -> None:
        self.ctx, self.dev, self.info, self.spec = ctx, dev, info, spec
        self.db = db  # the axis family's engine (axis/serve.py) reads the same database
        self.level, self.why, self.choices = load_choices(info, spec, db)
        self.buckets = sorted(c.bucket for c in self.choices if c.bucket is not None)
        self._launchers: dict[Config, Launcher] = {}
        self._by_n: dict[int, tuple[Launcher, Choice]] = {}
        self._vetted: dict[Config, Choice] = {}  # a config -> itself or its substitute
        self._lock = threading.Lock()
        self.queue = cl.CommandQueue(ctx, dev)
        self.allocator = cltools.MemoryPool(cltools.ImmediateAllocator(self.queue))

    def choice(self, n: int) -> Choice:
        b = nearest(n, self.buckets)
        for c in self.choices:
            if c.bucket == b:
                return c
        return self.choices[0]

    def launcher_for(self, n: int) -> tuple[Launcher, Choice]:
        hit = self._by_n.get(n)
        if hit is not None:
            return hit
        ch = self.choice(n)
        if ch.bucket is None and not ch.level:  # untuned: the builtin config for this size
            sized = builtin_config(self.info, self.spec, n)
            if sized != ch.config and ch.config == builtin_config(self.info, self.spec):
                ch = dataclasses.replace(ch, config=sized)
        with self._lock:
            served = self._vetted.get(ch.config)
            if served is None:
                # never build here what has not run right on this driver (vetting)
                level = self.level if ch.bucket is not None else "builtin"
                served = self._vetted[ch.config] = vetted(self.info, self.spec, ch, level)
            if served.config != ch.config:  # passed over: the substitute, and why
                ch = served
            la = self._launchers.get(ch.config)
            if la is None:
                la = Launcher(self.ctx, self.dev, self.info, self.spec, ch.config)
                try:
                    la.built(False)
                except BuildError as e:
                    # a stored config that no longer builds: serve the builtin one instead
                    warnings.warn(f"cltune: stored config {ch.config.short()} does not build "
                                  f"here ({e}); using the builtin config", CltuneWarning,
                                  stacklevel=3)
                    ch = builtin_choice(self.info, self.ctx, self.dev, self.spec)
                    la = Launcher(self.ctx, self.dev, self.info, self.spec, ch.config)
                self._launchers[ch.config] = la
            if len(self._by_n) > 256:
                self._by_n.clear()
            self._by_n[n] = (la, ch)
        return la, ch


#: engines by (context, device, op/dtype, db): an engine lives while a Reducer uses it, and
#: the last few stay alive after that (so a get_reducer per call does not rebuild each time);
#: with the engine go its launchers, builds and scratch, and the context when nothing else
#: holds it. `clear_caches()` lets all of them go at once.
_engines: weakref.WeakValueDictionary[tuple, _Engine] = weakref.WeakValueDictionary()
_recent: OrderedDict[tuple, _Engine] = OrderedDict()
RECENT_ENGINES = 8
_engines_lock = threading.Lock()
#: the reducers get_reducer handed out, by (target, op, dtype, db) as given: a get_reducer per
#: call gets the same Reducer back, its prepared launches with it (a new Reducer's first call
#: prepares them again: get_reducer(q)(x) of 4096 floats took 27.9 us a call on PoCL, 7.1
#: after; 55-58 us on the H100's host at 2^20-2^24, where torch.sum took 18-31). Each holds
#: its target, so no address is reused while kept; the oldest go first; `clear_caches()`
#: empties it.
_reducers: OrderedDict[tuple, Reducer] = OrderedDict()
RECENT_REDUCERS = 64
#: one context per device for get_reducer(device) (bounded by the number of devices)
_device_contexts: dict[int, cl.Context] = {}


@caches.register
def forget_engines() -> None:
    """Forget every cached engine and device context (kernels, scratch, database answers);
    reducers in use keep working, new ones start afresh (part of `cltune.clear_caches()`)."""
    with _engines_lock:
        _recent.clear()
        _reducers.clear()
        _device_contexts.clear()


def engine_contexts() -> set[int]:
    """The contexts (`int_ptr`) that cached engines still hold, for inspection and tests."""
    with _engines_lock:
        return {key[0] for key in _engines.keys()}


def _remember(key: tuple, eng: _Engine) -> None:
    _recent[key] = eng
    _recent.move_to_end(key)
    while len(_recent) > RECENT_ENGINES:
        _recent.popitem(last=False)


def _resolve(target: Any) -> tuple[cl.Context, cl.Device, cl.CommandQueue | None]:
    if isinstance(target, cl.CommandQueue):
        return target.context, target.device, target
    if isinstance(target, cl.Context):
        return target, target.devices[0], None
    if isinstance(target, cl.Device):
        with _engines_lock:
            ctx = _device_contexts.get(target.int_ptr)
            if ctx is None:
                ctx = _device_contexts[target.int_ptr] = cl.Context([target])
        return ctx, target, None
    raise TypeError(f"get_reducer takes a pyopencl Device, Context or CommandQueue, "
                    f"not {type(target).__name__}")


def _many() -> Any:
    """The many family's api (`r.many([x1, ..., xk])`), through the registry."""
    return family.entry("many", "api")


def get_reducer(target: Any, op: str = "sum", dtype: Any = np.float32, *,
                db: str | None = None) -> Reducer:
    """A tuned reducer for `op` over `dtype` on the target's device.

    Raises `DeviceError` when the device cannot run kernels (its probe kernel failed to build
    or gave a wrong answer: e.g. pyopencl's bundled PoCL on a CPU its LLVM does not know), with
    the compiler's message and the fix; `OpError` for an unknown op or dtype.

    Example:
        >>> q = cl.CommandQueue(cl.create_some_context(interactive=False))
        >>> total = get_reducer(q)(cla.to_device(q, np.ones(1000, np.float32))).get()
    """
    try:
        handed = (type(target), target.int_ptr, op, dtype, db)
        hit = _reducers.get(handed)
    except (AttributeError, TypeError):  # no address, or an unhashable dtype: no shortcut
        handed = hit = None
    if hit is not None:
        return hit
    ctx, dev, queue = _resolve(target)
    spec = OpSpec.of(op, dtype)
    key = (ctx.int_ptr, dev.int_ptr, spec, db)
    with _engines_lock:
        eng = _engines.get(key)
    if eng is None:
        info = require_usable(dev, info_for(dev))  # cached verdict; else one health check
        with _engines_lock:
            eng = _engines.get(key)
            if eng is None:
                # its own Context object: the program cache is keyed by it, so the engine's
                # builds live exactly as long as the engine
                own = cl.Context.from_int_ptr(ctx.int_ptr)
                eng = _engines[key] = _Engine(own, dev, info, spec, db)
    r = Reducer(eng, queue or eng.queue)
    with _engines_lock:
        _remember(key, eng)
        if handed is not None:
            r._target = target  # held: its address stays its own while cached
            _reducers[handed] = r
            while len(_reducers) > RECENT_REDUCERS:
                _reducers.popitem(last=False)
    return r


_IDENTITY = {"sum": 0, "dot": 0, "prod": 1}


class Reducer:
    """Reduces a pyopencl Array (or numpy array, uploaded first) to a 0-d device Array."""

    def __init__(self, engine: _Engine, queue: cl.CommandQueue) -> None:
        self._eng = engine
        self.queue = queue
        self.spec = engine.spec
        self._dtype = engine.spec.np_dtype
        self._rdtype = engine.spec.result_dtype
        self._itemsize = engine.spec.itemsize
        self.scalars = ScalarFactory(queue, self._rdtype, engine.allocator)
        # the queue's own Context object (pyopencl keeps one per queue): arrays made on this
        # queue carry it, so the hot path can check the context by identity
        self._ctx = queue.context
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self._in_order = not queue.properties & ooo
        self._last: cl.Event | None = None  # the event the hot path enqueued last on `queue`
        # n -> prepared launch on `queue` (sizes seen; the least recently used dropped first)
        self._hot: PreparedCalls = PreparedCalls(256)
        # (shape, strides, offset, axis, keepdims) -> a prepared call along an int axis on
        # `queue` (filled by the axis family's first call of that key)
        self._axis_hot: PreparedCalls = PreparedCalls()

    @property
    def engine_id(self) -> int:
        """Equal for reducers that share one engine: kernels, scratch and database answer (one
        per context, device, op/dtype and database)."""
        return id(self._eng)

    @property
    def level(self) -> str:
        return self._eng.level

    def explain(self, n: Any, axis: Any = None, order: str = "C") -> Any:
        """What serves a reduction of n elements (an `Explanation`), or with a shape tuple and
        `axis`, what serves `r(x, axis=axis)` for an array of that shape and memory order
        (an `AxisExplanation` of the axis family): config, tuned class and fallback level."""
        if isinstance(n, tuple):
            return _axis().explain_axis(self, n, tuple(range(len(n))) if axis is None else axis,
                                order)
        la, ch = self._eng.launcher_for(max(1, int(n)))
        level = ch.level or (self._eng.level if ch.bucket is not None or
                             self._eng.level == "builtin" else "builtin")
        return Explanation(int(n), la.cfg, level, ch.note or self._eng.why, ch.bucket,
                           ch.tuned_at, ch.driver, ch.gbps)

    def _as_device(self, a: Any, queue: cl.CommandQueue, name: str) -> cla.Array:
        return device_array(a, self.spec.np_dtype, self._eng.ctx, queue, name, flat=True)

    def __call__(self, x: Any, y: Any = None, *, axis: Any = None, keepdims: bool = False,
                 queue: cl.CommandQueue | None = None, out: cla.Array | None = None,
                 wait_for: list[cl.Event] | None = None) -> cla.Array:
        """Reduce x (dot: x and y) wholly to a 0-d Array, or along `axis` (an int or a tuple of
        adjacent axes; cltune.families.axis.api) to an Array of numpy's shape."""
        # the hot path: one contiguous device array of our dtype and context, of a size served
        # before, into a fresh 0-d result or an `out` of ours (all checked by identity)
        if (y is None and wait_for is None and queue is None and axis is None and not keepdims
                and type(x) is cla.Array and x.dtype is self._dtype and x.context is self._ctx
                and (x._flags or x.flags).forc and x.offset < SMALL_OFFSET):
            hot = self._hot
            p = hot.get(x.size)
            if p is not None:
                try:  # PreparedCalls.touch, inline
                    hot.move_to_end(x.size)
                except KeyError:
                    pass
                if out is None:
                    f = self.scalars
                    if f.fast:  # ResultFactory.around, inline: a frame and a list less
                        buf = f._alloc(f._nbytes)
                        ev = p.launch1(self.queue, x.base_data, x.offset // self._itemsize,
                                       buf, pending(x.events) if x.events else None)
                        res = _new(cla.Array)
                        d = f._attrs.copy()
                        d["base_data"] = buf
                        d["events"] = [ev]
                        res.__dict__ = d
                        self._last = ev
                        return res
                    res = f()
                    ev = p.launch(self.queue, x.base_data, x.offset // self._itemsize,
                                  res.base_data, None, 0,
                                  pending(x.events) if x.events else None)[-1]
                    res.events.append(ev)
                    self._last = ev
                    return res
                if (type(out) is cla.Array and out.dtype is self._rdtype and out.offset == 0
                        and out.size == 1 and out.context is self._ctx):
                    # x's and out's pending events are waited for, except the one we enqueued
                    # last on this in-order queue (ordered anyway); then ours is out's only one
                    oe, waits = out.events, None
                    if x.events or oe and (len(oe) > 1 or oe[0] is not self._last
                                           or not self._in_order):
                        waits = pending(x.events, oe, ours=self._last if self._in_order else None)
                    ev = p.launch(self.queue, x.base_data, x.offset // self._itemsize,
                                  out.base_data, None, 0, waits)[-1]
                    out.events = [ev]
                    self._last = ev
                    return out
        if axis is not None or keepdims:
            # a call along an int axis seen before, on this queue into a fresh result: its
            # result's template and launch were prepared by that call
            if (type(axis) is int and y is None and queue is None and out is None
                    and wait_for is None and type(x) is cla.Array and x.dtype is self._dtype
                    and x.context is self._ctx):
                k = (x.shape, x.strides, x.offset, axis, bool(keepdims))
                hot = self._axis_hot
                w = hot.get(k)
                if w is not None:
                    try:  # the least recently used goes first (PreparedCalls.touch, inline)
                        hot.move_to_end(k)
                    except KeyError:
                        pass
                    f = w.results
                    waits = pending(x.events, in_order=w.in_order) if x.events else None
                    if f.fast:  # ResultFactory.around, inline
                        buf = f._alloc(f._nbytes)
                        ev = w.launch(x.base_data, buf, None, waits)[-1]
                        res = _new(cla.Array)
                        d = f._attrs.copy()
                        d["base_data"] = buf
                        d["events"] = [ev]
                        res.__dict__ = d
                        return res
                    res = f()
                    res.events.append(w.launch(x.base_data, res.base_data, None, waits)[-1])
                    return res
            return _axis().reduce_axis(self, x, y, axis, keepdims, queue or self.queue, out,
                                       wait_for)
        return self._call(x, y, queue=queue, out=out, wait_for=wait_for)

    def segments(self, x: Any, offsets: Any, initial: Any = None, *,
                 queue: cl.CommandQueue | None = None, out: cla.Array | None = None,
                 wait_for: list[cl.Event] | None = None, check: bool | None = None,
                 ) -> cla.Array:
        """Reduce each segment x[offsets[i]:offsets[i+1]] (CSR row pointers, m+1 int32/int64
        entries) to one value: m results; `initial` is combined into every segment (empty
        ones give it, else the identity). Bounds are checked on the device; the check is read
        back the first time an offsets array is used, always with check=True, never with
        check=False (see cltune.families.axis.api.reduce_segments)."""
        return _axis().reduce_segments(self, x, offsets, initial, queue or self.queue, out,
                                       wait_for,
                               check)

    def many(self, xs: Any, *, queue: cl.CommandQueue | None = None,
             out: cla.Array | None = None, wait_for: list[cl.Event] | None = None,
             ) -> cla.Array:
        """Reduce each array of the list `xs` (any lengths and offsets, contiguous, this
        reducer's dtype and context) in one launch: k results in one device array, the i-th
        equal to `r(xs[i])` (cltune.families.many.api; sum, prod, min and max).

            >>> sums = r.many([x1, x2, x3]).get()
        """
        return _many().reduce_many(self, xs, queue or self.queue, out, wait_for)

    def explain_many(self, k: int, n: int) -> Any:
        """What serves `r.many` of k arrays of mean length n (a `ManyExplanation`: config,
        tuned class and fallback level)."""
        return _many().explain_many(self, self.spec.op, self.spec.dtype, k, n)

    def _call(self, x: Any, y: Any = None, *, queue: cl.CommandQueue | None = None,
              out: cla.Array | None = None, wait_for: list[cl.Event] | None = None,
              ) -> cla.Array:
        q = queue or self.queue
        spec = self.spec
        if (y is None) != (spec.op != "dot"):
            raise TypeError("dot takes two arrays (x, y)" if spec.op == "dot"
                            else f"{spec.op} takes one array")
        xd = self._as_device(x, q, "x")
        yd = self._as_device(y, q, "y") if y is not None else None
        if yd is not None and yd.size != xd.size:
            raise ValueError(f"x and y differ in size ({xd.size} vs {yd.size})")
        rdt = spec.result_dtype
        if out is None:
            out = self.scalars() if q is self.queue else new_scalar(q, rdt, self._eng.allocator)
        elif not (isinstance(out, cla.Array) and out.dtype == rdt and out.size == 1
                  and out.offset == 0):
            raise TypeError(f"out must be a 0-d pyopencl Array of dtype {rdt} at offset 0")
        n = xd.size
        if n == 0:
            if spec.op in ("min", "max"):
                raise ValueError(f"zero-size array to reduction operation "
                                 f"{'minimum' if spec.op == 'min' else 'maximum'} "
                                 "which has no identity")
            out.fill(rdt.type(_IDENTITY[spec.op]), queue=q, wait_for=wait_for)
            return out
        if wait_for is not None and not all(isinstance(e, cl.Event) for e in wait_for):
            raise TypeError("wait_for must be a list of pyopencl Events")
        waits = list(wait_for or []) + list(xd.events)
        if yd is not None:
            waits += yd.events
        waits += list(out.events)
        la, _ = self._eng.launcher_for(n)
        if q is self.queue and yd is None and n not in self._hot:  # the hot path's next time
            self._hot.keep(n, la.prepared(q, n))
        isz = spec.itemsize
        evs = la.enqueue(q, xd.base_data, xd.offset // isz, n, out.base_data,
                         y=yd.base_data if yd is not None else None,
                         yoff=yd.offset // isz if yd is not None else 0,
                         wait_for=waits or None)
        out.events = [evs[-1]]  # it waited for all of out's (add_event would block at times)
        return out
