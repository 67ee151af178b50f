"""`cltune.ReductionKernel`: pyopencl's ReductionKernel, tuned.

Same constructor and call convention as `pyopencl.reduction.ReductionKernel`, so code switches
by changing the import. Which config serves a call comes from the tuning database (this
expression's fingerprint), else is derived from the device's tuned plain sum, else from its
limits (`expr/serve.py`, `expr/defaults.py`); `knl.explain(n)` says which and why.
`knl.tune(...)` tunes it.

Trust: the expressions, preamble and options are the application's code and are compiled as
given (as pyopencl does). The database holds only their fingerprint and configs.
"""

from __future__ import annotations

import builtins
import threading
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cltools
from pyopencl.tools import VectorArg

from cltune.core import family
from cltune.core.serving import CltuneWarning, Explanation
from cltune.core.shapes import class_of_view, geometry
from cltune.device.select import info_for
from cltune.families.expr import family as expr_family
from cltune.families.expr.config import ExprConfig
from cltune.families.expr.defaults import builtin
from cltune.families.expr.kernel import template_hash
from cltune.families.expr.launch import ExprLauncher
from cltune.families.expr.serve import Choices, ExprChoice, resolve
from cltune.isolation.vetting import first_usable
from cltune.opencl.build import BuildError
from cltune.opencl.events import pending
from cltune.opencl.expression import ExprSpec
from cltune.opencl.scalars import ScalarFactory, new_scalar

_new = object.__new__

TUNE_MODES = (None, "first-use")


class _DeviceState:
    """The choices and launchers of one kernel on one device."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, kernel: ReductionKernel,
                 db: str | None) -> None:
        self.ctx, self.dev, self.kernel, self.spec, self.db = ctx, dev, kernel, kernel.spec, db
        self.info = info_for(dev)
        self.lock = threading.Lock()
        self.launchers: dict[ExprConfig, ExprLauncher] = {}
        self.load()

    def _vet(self, ch: ExprChoice, level: str, why: str) -> tuple[ExprChoice, str, str]:
        """The choice if this process may build it (tuned here, or it ran right in the
        worker: vetting), else the builtin or the safest config, and why."""
        if level == "exact":
            return ch, level, why  # tuned on this fingerprint and driver, in the worker
        base = builtin(self.info, self.spec.dtype_out.itemsize)
        candidates = [(ch.config, level), (base, "builtin"),
                      (replace(base, items=1, passes=2), "safest")]
        cfg, lvl, note = first_usable(self.info, expr_family.NAME, self.spec.fingerprint,
                                      candidates, 0, source_hash=template_hash(),
                                      options={"kernel": self.kernel,
                                               "answers_optional": True})
        if cfg == ch.config:
            return ch, level, why
        warnings.warn(f"cltune: {note}; serving the {lvl} config {cfg.short()}", CltuneWarning,
                      stacklevel=5)
        return ExprChoice(cfg, None), lvl, note[:300]

    def load(self) -> None:
        ch = resolve(self.info, self.spec.fingerprint, self.spec.dtype_out.itemsize, self.db)
        with self.lock:
            self.choices: Choices = ch
            self.by_n: dict[int, tuple[ExprLauncher, ExprChoice]] = {}
            self.served: dict[int, tuple[str, str]] = {}  # n -> (level, why) of by_n's choice
            # config -> its vetting verdict: itself, or the substitute served instead and why
            self.vetted: dict[ExprConfig, tuple[ExprChoice, str, str]] = {}

    def launcher_for(self, n: int) -> tuple[ExprLauncher, ExprChoice]:
        hit = self.by_n.get(n)
        if hit is not None:
            return hit
        ch, level, why = self.choices.serve(n)
        with self.lock:
            verdict = self.vetted.get(ch.config)
            if verdict is None:  # never build here what has not run right on this driver
                verdict = self.vetted[ch.config] = self._vet(ch, level, why)
            if verdict[0].config != ch.config:  # passed over: its substitute, and why
                ch, level, why = verdict
            # else the config itself serves, as this size's choice (its level and size class:
            # a tuned class may store the config a fallback served first)
            la = self.launchers.get(ch.config)
            if la is None:
                la = ExprLauncher(self.ctx, self.dev, self.info, self.spec, ch.config)
                try:
                    la.built()
                except BuildError as e:
                    if ch.config == builtin(self.info, self.spec.dtype_out.itemsize):
                        raise  # the application's expression itself does not build
                    fallback = ExprChoice(builtin(self.info, self.spec.dtype_out.itemsize),
                                          None)
                    la = ExprLauncher(self.ctx, self.dev, self.info, self.spec,
                                      fallback.config)
                    la.built()  # fails too: the expression does not build (its error, no warning)
                    warnings.warn(f"cltune: config {ch.config.short()} does not build here "
                                  f"({str(e)[:200]}); using the builtin config", CltuneWarning,
                                  stacklevel=4)
                    ch = fallback
                    level, why = "builtin", f"the served config does not build here: {e}"[:300]
                self.launchers[ch.config] = la
            if len(self.by_n) > 256:
                self.by_n.clear()
                self.served.clear()
            self.by_n[n] = (la, ch)
            self.served[n] = (level, why)
        return la, ch


class ReductionKernel:
    """A tuned reduction of an expression over arrays (pyopencl's ReductionKernel API).

    `map_expr` is evaluated at index `i` of the arguments (default `in[i]`), `reduce_expr`
    combines `a` and `b` (it must be associative and commutative: the kernel reorders it, as
    pyopencl's does), starting from `neutral`. cltune's extensions, keyword-only:

    - `tune="first-use"`: the first call starts tuning in a background thread on a private
      queue, within `budget_s` seconds; calls switch to the result when it is stored. Along
      an axis, the first call of each layout and shape class does the same (one run at a
      time). Off by default: nothing is tuned unless asked.
    - `db`: the tuning database (default: `CLTUNE_DB` or the user's data dir).
    - `finish_expr` / `dtype_result`: the result as an expression of `a` (the reduced value),
      `n` (the element count) and the scalar arguments, of another dtype (used by
      `cltune.stats.api`).
    - `axis=` / `keepdims=` at call time (as CuPy's ReductionKernel): reduce the vector
      arguments (arrays of one shape and memory order) along an int or a tuple of adjacent
      axes, numpy's result shape; `i` is then the element's flat index in memory, `n` the
      length of the reduced axes. Tuned per shape class: `knl.tune(*args, axis=k)`.
    - `fold_expr`: the accumulator `a` after element `i` is added (of `a`, `i` and the
      arguments), where that is cheaper than `reduce_expr(a, map_expr)`; each accumulator
      starts at `neutral` and receives its elements in increasing index order.
    - `sample`: `sample(queue, n) -> args` for tuning at size n (default: random vectors,
      zero scalars).
    - `reference`: `reference(host_args, lo, hi)` -> the expected result over elements
      lo..hi-1 (numpy arrays for the vectors), what tuning and vetting check answers against
      (default: pyopencl's own ReductionKernel of the same expression; a kernel with
      `finish_expr` needs one).

    Example:
        >>> from cltune import ReductionKernel
        >>> dot = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
        ...                       map_expr="x[i]*y[i]",
        ...                       arguments="__global const float *x, __global const float *y")
        >>> dot(x, y).get()
    """

    def __init__(self, ctx: cl.Context, dtype_out: Any, neutral: str, reduce_expr: str,
                 map_expr: str | None = None, arguments: Any = None,
                 name: str = "reduce_kernel", options: Any = None, preamble: str = "", *,
                 tune: str | None = None, budget_s: float = 60.0, db: str | None = None,
                 finish_expr: str | None = None, dtype_result: Any = None,
                 fold_expr: str | None = None, sample: Any = None,
                 reference: Any = None) -> None:
        if not isinstance(ctx, cl.Context):
            raise TypeError(f"ReductionKernel needs a pyopencl Context, not {type(ctx).__name__}")
        if tune not in TUNE_MODES:
            raise ValueError(f"tune={tune!r} is not one of {TUNE_MODES}")
        if not budget_s > 0:
            raise ValueError(f"budget_s must be > 0, got {budget_s!r}")
        self.context, self.name = ctx, name
        self.spec = ExprSpec.make(dtype_out, neutral, reduce_expr, map_expr, arguments,
                                  preamble, options, finish_expr, dtype_result, fold_expr)
        self.dtype_out = self.spec.dtype_out
        self.tune_mode, self.budget_s, self.db, self.sample = tune, budget_s, db, sample
        self.reference = reference
        self._states: dict[int, _DeviceState] = {}
        self._lock = threading.Lock()
        self._pool: Any = None  # result_allocator's, made at first need
        self._queues: dict[int, tuple] = {}  # _queue_entry's cache
        # queue address -> (queue, its AxisReducer): calls along axes (expr_axis.api)
        self._along_reducers: dict[int, tuple] = {}
        self.background: Any = None  # the first-use tuning thread, once started
        # first-use tuning along axes: one background run per (layout, size class) seen
        self.background_axes: dict[tuple, Any] = {}
        self.background_error: Exception | None = None  # why it failed, if it did
        # build now, like pyopencl: an expression that does not compile fails here
        for dev in ctx.devices:
            self._state(dev).launcher_for(1)

    #: per-process state that never crosses to the evaluation worker (isolation.codec)
    _LOCAL_STATE = ("_states", "_lock", "_pool", "_queues", "_along_reducers", "background",
                    "background_axes", "background_error")

    def __getstate__(self) -> dict[str, Any]:
        """The expression and its helpers (`sample`, a `reference`), without this process's
        devices, caches and threads: what the evaluation worker rebuilds the kernel from."""
        state = {k: v for k, v in self.__dict__.items() if k not in self._LOCAL_STATE}
        state["tune_mode"] = None  # the worker evaluates; it never tunes in the background
        # struct dtypes (cltune.stats.api' accumulators) are known to pyopencl by registration
        dts = [self.spec.dtype_out, self.spec.dtype_result,
               *(getattr(a, "dtype", None) for a in self.spec.arguments)]
        state["_struct_dtypes"] = [(cltools.dtype_to_ctype(d), d) for d in dts
                                   if d is not None and np.dtype(d).names]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, dt in state.pop("_struct_dtypes", ()):
            cltools.get_or_register_dtype(name, dt)
        self.__dict__.update(state)
        self._states, self._lock, self._pool, self._queues = {}, threading.Lock(), None, {}
        self._along_reducers = {}
        self.background, self.background_axes, self.background_error = None, {}, None

    @property
    def fingerprint(self) -> str:
        """The database key of this expression (normalised code, types; never the text)."""
        return self.spec.fingerprint

    def _state(self, dev: cl.Device) -> _DeviceState:
        st = self._states.get(dev.int_ptr)
        if st is None:
            with self._lock:
                st = self._states.get(dev.int_ptr)
                if st is None:
                    st = self._states[dev.int_ptr] = _DeviceState(self.context, dev, self,
                                                                  self.db)
        return st

    def result_allocator(self, allocator: Any = None) -> Any:
        """`allocator` if given, else a memory pool of this kernel's context. Results are
        small and made on every call: without a pool each is a buffer created and released per
        call, which on NVIDIA's driver costs more than a small reduction itself (see
        docs/expressions.md, host cost per call)."""
        if allocator is not None:
            return allocator
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = cltools.MemoryPool(cltools.ImmediateAllocator(
                        cl.CommandQueue(self.context, self.context.devices[0])))
                pool = self._pool
        return pool

    def reload(self) -> None:
        """Read the database again (after tuning elsewhere)."""
        for st in list(self._states.values()):
            st.load()

    # ---- calling --------------------------------------------------------------------------
    def __call__(self, *args: Any, return_event: bool = False,
                 queue: cl.CommandQueue | None = None, allocator: Any = None,
                 wait_for: Any = None, out: cla.Array | None = None,
                 range: builtins.slice | None = None,  # noqa: A002 - pyopencl's names
                 slice: builtins.slice | None = None,  # noqa: A002
                 axis: Any = None, keepdims: bool = False) -> Any:
        spec = self.spec
        if len(args) != len(spec.arguments):
            raise TypeError(f"{self.name} takes {len(spec.arguments)} arguments "
                            f"({', '.join(a.name for a in spec.arguments)}), got {len(args)}")
        if axis is not None or keepdims:
            if range is not None or slice is not None:
                raise TypeError("range=/slice= and axis=/keepdims= exclude each other")
            if out is not None:
                raise TypeError("out= goes with a reduction of every element (axis=None)")
            res = self._along(args, axis, keepdims, queue, wait_for)
            return (res, res.events[-1] if res.events else None) if return_event else res
        wait = list(wait_for or ())
        inv: list[Any] = []
        repr_vec = None
        for arg, tp in zip(args, spec.arguments, strict=True):
            if isinstance(tp, VectorArg):
                # by identity first (a plain Array of the declared dtype object, pyopencl's
                # cached flags): the checks below cost ~1 us a call for two arguments
                if not (type(arg) is cla.Array and arg.dtype is tp.dtype
                        and (arg._flags or arg.flags).forc):
                    _check_vector(arg, tp)
                repr_vec = repr_vec if repr_vec is not None else arg
                inv += (arg.base_data, arg.offset)
                if arg.events:  # completed ones leave the list (each costs an enqueue)
                    wait += pending(arg.events) or ()
            else:
                inv.append(arg)
        if range is None and slice is None and repr_vec is not None:
            start, step, n = 0, 1, repr_vec.size
        else:
            start, step, n = _index_range(range, slice, repr_vec)
        q = queue if queue is not None else getattr(repr_vec, "queue", None)
        if q is None:
            raise TypeError("no queue: pass queue= or arrays that have one")
        hit = self._queues.get(q.int_ptr)
        if hit is None or hit[0] is not q:
            hit = self._queue_entry(q)
        st = hit[1]
        if out is None:
            alloc = allocator if allocator is not None else getattr(repr_vec, "allocator",
                                                                    None)
            res = hit[2]() if alloc is None else new_scalar(q, spec.dtype_result, alloc)
        else:
            if out.dtype != spec.dtype_result or out.size != 1:
                raise TypeError(f"out must be a 1-element array of {spec.dtype_result}, got "
                                f"{out.size} of {out.dtype}")
            res = out
            if out.events:
                wait += pending(out.events) or ()
        if self.tune_mode == "first-use" and self.background is None:
            self._start_background(q.device, n)
        la, _ = st.launcher_for(n)
        evs = la.enqueue(q, inv, start, step, n, res.base_data, res.offset, wait or None)
        # the events waited for are complete before ours: ours is the result's only one
        res.events[:] = [evs[-1]]
        return (res, evs[-1]) if return_event else res

    def warm_call(self, q: cl.CommandQueue, n: int) -> Callable[..., cla.Array | None] | None:
        """For a kernel of one vector argument then scalars (cltune.stats' kernels): its call
        over every element of n-element vectors on the in-order queue `q`, prepared for calls
        in a loop (cltune.stats.warm keeps them). `call(x, scalars)` returns what
        `self(x, *scalars, queue=q)` would for an n-element contiguous array x of the declared
        dtype (the caller has checked these), without checking them again; None once the
        launch no longer serves n (the database was read again, the scratch grew): `__call__`
        serves then. None here where calls must take `__call__` (first-use tuning, other
        arguments, an out-of-order queue)."""
        args = self.spec.arguments
        if (self.tune_mode is not None or not args or not isinstance(args[0], VectorArg)
                or builtins.any(isinstance(a, VectorArg) for a in args[1:])):
            return None
        hit = self._queues.get(q.int_ptr)
        if hit is None or hit[0] is not q:
            hit = self._queue_entry(q)
        st, results = hit[1], hit[2]
        by_n = st.by_n
        served = st.launcher_for(n)
        pr = served[0].prepared(q, n, True)
        if not pr.s.in_order:
            return None
        launch, scratch, partials = pr.warm, pr.s, pr.partials
        rdt = self.spec.dtype_result

        def call(x: cla.Array, scalars: tuple) -> cla.Array | None:
            # the database read again (`load` makes a new by_n), the scratch grown
            if st.by_n is not by_n or scratch.partials is not partials:
                return None
            if x.allocator is None and results.fast:  # ResultFactory.around, inline
                buf = results._alloc(results._nbytes)
                ev = launch(q, (x.base_data, x.offset, *scalars), buf,
                            pending(x.events) if x.events else None)
                res = _new(cla.Array)
                d = results._attrs.copy()
                d["base_data"] = buf
                d["events"] = [ev]
                res.__dict__ = d
                return res
            res = results() if x.allocator is None else new_scalar(q, rdt, x.allocator)
            res.events.append(launch(q, (x.base_data, x.offset, *scalars), res.base_data,
                                     pending(x.events) if x.events else None))
            return res
        return call

    def _queue_entry(self, q: cl.CommandQueue) -> tuple:
        """(queue, device state, result factory) for calls on `q`, checked and cached (the
        queue is held, so its address is not reused while cached; a few are kept)."""
        if q.context.int_ptr != self.context.int_ptr:
            raise ValueError("the queue belongs to another context than this kernel")
        hit = (q, self._state(q.device),
               ScalarFactory(q, self.spec.dtype_result, self.result_allocator()))
        with self._lock:
            if len(self._queues) >= 8:
                self._queues.clear()
            self._queues[q.int_ptr] = hit
        return hit

    def _along(self, args: tuple, axis: Any, keepdims: bool, queue: cl.CommandQueue | None,
               wait_for: Any) -> cla.Array:
        """The reduction along `axis` of the vector arguments (arrays of one shape and memory
        order, C- or F-contiguous), as cltune.stats.api runs it (family `expr_axis`)."""
        vecs = []
        for arg, tp in zip(args, self.spec.arguments, strict=True):
            if isinstance(tp, VectorArg):
                if not isinstance(arg, cla.Array) or arg.dtype != tp.dtype:
                    raise TypeError(f"argument {tp.name}: expected a pyopencl Array of "
                                    f"{np.dtype(tp.dtype)}, got {type(arg).__name__}"
                                    f"{' of ' + str(arg.dtype) if hasattr(arg, 'dtype') else ''}")
                vecs.append(arg)
        if not vecs:
            raise TypeError("axis= reduces vector arguments; this kernel has none (use range=)")
        x = vecs[0]
        if not x.flags.forc or any(v.shape != x.shape or v.strides != x.strides for v in vecs):
            raise ValueError("along an axis the vector arguments must be contiguous arrays of "
                             "one shape and memory order")
        q = queue if queue is not None else x.queue
        if q is None:
            raise TypeError("no queue: pass queue= or arrays that have one")
        if q.context.int_ptr != self.context.int_ptr:
            raise ValueError("the queue belongs to another context than this kernel")
        waits = [*(wait_for or ()), *(e for v in vecs for e in v.events)]
        if self.tune_mode == "first-use":
            self._start_background_axis(q.device, x, axis)
        return _along_api().reduce_along(self, tuple(args), x, q, axis, keepdims, waits)

    def _start_background_axis(self, dev: cl.Device, x: cla.Array, axis: Any) -> None:
        """First use along an axis: tune this call's (layout, size class) in the background,
        one run at a time (a class seen while one runs is tuned by a later call)."""
        from cltune.tuning.kernels import start_background  # lazy: the tuner loads optuna

        try:
            g = geometry(tuple(x.shape), bool(x.flags.c_contiguous), axis, False)
        except (TypeError, ValueError):
            return  # the call itself reports it
        if g.outer * g.inner <= 1 or g.r == 0:
            return
        key = (dev.int_ptr, *class_of_view(g.outer, g.r, g.inner))
        with self._lock:
            if key in self.background_axes or any(
                    t.is_alive() for t in self.background_axes.values()):
                return
            self.background_axes[key] = start_background(
                self, dev, x.size, self.budget_s, tuple(x.shape),
                "C" if x.flags.c_contiguous else "F", axis)

    # ---- provenance and tuning -------------------------------------------------------------
    def explain(self, n: int, device: cl.Device | None = None) -> Explanation:
        """Which config serves inputs of n elements on `device` (default: the context's
        first), and where it came from (a lookup level, `derived` or `builtin`)."""
        st = self._state(device if device is not None else self.context.devices[0])
        _, ch = st.launcher_for(n)
        level, why = st.served.get(n, (st.choices.level, st.choices.why))
        return Explanation(n, ch.config, level, why, ch.bucket, ch.tuned_at, ch.driver,
                           ch.gbps)

    def tune(self, *sample_args: Any, trials: int = 30, timeout: float = 120.0,
             queue: cl.CommandQueue | None = None, db: str | None = None,
             storage: str | None = None, seed: int = 0, axis: Any = None,
             n: int | None = None) -> list[Any]:
        """Tune this expression for the size class of `sample_args` (as a call takes them)
        on the queue's device; results go to the database, and this kernel switches to them.
        Returns the tuner's per-size-class results. A kernel without vector arguments (called
        with `range=`) is tuned at `n` elements, on `queue`.

        With `axis` (an int, or a tuple of axes adjacent in memory), the reduction along that
        axis of the n-D vector arguments is tuned instead (family `expr_axis`, the shape
        class of their view), as `cltune.stats.api`' `axis=` runs it:
        `cltune.stats.api.kernel("var", ctx, np.float32).tune(x, 0.0, axis=0)`."""
        if axis is not None:
            from cltune.tuning.kernels import tune_along  # lazy: the tuner loads optuna

            return tune_along(self, sample_args, axis, trials=trials, timeout=timeout,
                              queue=queue, db=db if db is not None else self.db,
                              storage=storage, seed=seed)
        from cltune.tuning.kernels import tune_kernel  # lazy: the tuner loads optuna

        res = tune_kernel(self, sample_args, trials=trials, timeout=timeout, queue=queue,
                          db=db if db is not None else self.db, storage=storage, seed=seed,
                          n=n)
        self.reload()
        return res

    def sample_args(self, queue: cl.CommandQueue, n: int, seed: int = 0) -> tuple[Any, ...]:
        """Arguments for tuning at size n: `sample(queue, n)` when given, else random vectors
        (floats in [0, 1), integers in 0..99, structs zeroed) and zero scalars."""
        if self.sample is not None:
            return tuple(self.sample(queue, n))
        from cltune.tuning.kernels import synthetic_args  # lazy: tuning code, loads optuna

        return synthetic_args(self.spec, queue, n, seed)

    def _start_background(self, dev: cl.Device, n: int) -> None:
        from cltune.tuning.kernels import start_background  # lazy: the tuner loads optuna

        with self._lock:
            if self.background is None:
                self.background = start_background(self, dev, n, self.budget_s)


_ALONG_API: list[Any] = []  # the expr_axis family's api module, once imported


def _along_api() -> Any:
    """The expr_axis family's api (a kernel's call with `axis=`), through the registry: this
    family imports no other family. Resolved once (the call's hot path)."""
    if not _ALONG_API:
        _ALONG_API.append(family.entry("expr_axis", "api"))
    return _ALONG_API[0]


def _check_vector(arg: Any, tp: Any) -> None:
    """A vector argument's errors: not a pyopencl Array, another dtype, not contiguous."""
    if not isinstance(arg, cla.Array):
        raise TypeError(f"argument {tp.name}: expected a pyopencl Array, "
                        f"got {type(arg).__name__}")
    if arg.dtype != tp.dtype:
        raise TypeError(f"argument {tp.name}: dtype {arg.dtype} does not match the "
                        f"declared {np.dtype(tp.dtype)}")
    if not (getattr(arg, "_flags", None) or arg.flags).forc:
        raise ValueError(f"argument {tp.name}: non-contiguous arrays are not supported")


def _index_range(rng: builtins.slice | None, slc: builtins.slice | None,
                 repr_vec: cla.Array | None) -> tuple[int, int, int]:
    """(start, step, count) of pyopencl's range=/slice= arguments (step must be positive)."""
    if rng is not None:
        if slc is not None:
            raise TypeError("may not specify both range and slice keyword arguments")
        start = 0 if rng.start is None else int(rng.start)
        step = 1 if rng.step is None else int(rng.step)
        if rng.stop is None:
            raise ValueError("range needs a stop")
        stop = int(rng.stop)
    else:
        if repr_vec is None:
            raise TypeError("must have vector argument when range is not specified")
        start, stop, step = (slc or builtins.slice(None)).indices(repr_vec.size)
    if step < 1:
        raise ValueError(f"range/slice step must be positive, got {step}")
    if start < 0:
        raise ValueError(f"range start must be >= 0, got {start}")
    return start, step, len(builtins.range(start, stop, step))
