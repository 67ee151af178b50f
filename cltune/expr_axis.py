"""An expression reduction (`ExprSpec`, the prelude of `cltune.ReductionKernel`) along an axis:
the builds of kernels/expr_axis.cl (cached per context) and their launches.

The input is viewed as (outer, r, inner) in memory order (see `cltune.axis_runtime.geometry`)
and every one of the outer * inner outputs is reduced over r. Configs come from
`expr_axis_config.choose` per shape (nothing is tuned or read from a database here); the
application's expressions are compiled as given, the config reaches the compiler only as
integer `-D` values of a validated `AxisExprConfig`.

    >>> red = axis_reducer(ctx, dev, cltune.stats.kernel("mean", ctx, np.float32).spec)
    >>> red.enqueue(queue, [x.base_data, x.offset], outer, r, inner, out.base_data, 0)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import pyopencl as cl

from .devices import DeviceInfo, info_for
from .expr_axis_config import AxisExprConfig, AxisPlan, axis_plan, choose
from .expr_source import ExprBuildError, ExprSpec


@lru_cache(maxsize=1)
def axis_template() -> str:
    return resources.files("cltune.kernels").joinpath("expr_axis.cl").read_text()


def axis_source(spec: ExprSpec, fp64: bool) -> str:
    """The application's prelude followed by the axis skeleton."""
    return spec.prelude(fp64) + axis_template()


def build_options(cfg: AxisExprConfig) -> list[str]:
    """The `-D` options of a build: integers from a validated config only."""
    if not isinstance(cfg, AxisExprConfig):
        raise TypeError("build_options takes a validated AxisExprConfig")
    return [f"-D{k}={int(v)}" for k, v in cfg.defines().items()]


@dataclass(frozen=True)
class AxisBuilt:
    config: AxisExprConfig
    stage1: cl.Kernel
    stage2: cl.Kernel


_builds: weakref.WeakKeyDictionary[cl.Context, dict[tuple, AxisBuilt]] = (
    weakref.WeakKeyDictionary())
_reducers: weakref.WeakKeyDictionary[cl.Context, dict[tuple, AxisReducer]] = (
    weakref.WeakKeyDictionary())
_lock = threading.Lock()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
          cfg: AxisExprConfig) -> AxisBuilt:
    """Build (or fetch from the context's cache) `cfg` of `spec` for `dev`; ExprBuildError
    when it does not build or breaks the kernel's limits."""
    key = (dev.int_ptr, spec, cfg)
    with _lock:
        hit = _builds.get(ctx, {}).get(key)
    if hit is not None:
        return hit
    opts = [*build_options(cfg), *spec.options]
    try:
        prg = cl.Program(ctx, axis_source(spec, info.fp64)).build(options=opts, devices=[dev])
    except cl.Error as e:
        msg = str(e).strip().splitlines()
        raise ExprBuildError("build failed: " + " | ".join(msg[-8:])[:1200]) from None
    s1, s2 = prg.clt_axis_stage1, prg.clt_axis_stage2
    user = spec.scalar_arg_dtypes()
    tail = [np.int64, np.int64, np.int64, np.int64, None, None, np.int64]
    s1.set_scalar_arg_dtypes([*user, *tail])
    s2.set_scalar_arg_dtypes([*user, *tail])
    for k in (s1, s2):
        kwg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
        if cfg.wg > kwg:
            raise ExprBuildError(f"wg={cfg.wg} exceeds the kernel's "
                                 f"CL_KERNEL_WORK_GROUP_SIZE={kwg}")
        lmem = k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev)
        if lmem > info.local_mem:
            raise ExprBuildError(f"local memory {lmem} > CL_DEVICE_LOCAL_MEM_SIZE="
                                 f"{info.local_mem}")
    built = AxisBuilt(cfg, s1, s2)
    with _lock:
        return _builds.setdefault(ctx, {}).setdefault(key, built)


def _smaller(cfg: AxisExprConfig) -> AxisExprConfig | None:
    """The same layout with half the work-group (for kernels whose limit is lower)."""
    if cfg.wg == 1:
        return None
    wg = cfg.wg // 2
    return AxisExprConfig(cfg.layout, wg, min(cfg.lanes, wg), cfg.items, cfg.strip)


class _Scratch:
    __slots__ = ("partials", "capacity", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
        self.capacity = 64
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)


class AxisReducer:
    """One spec on one device: a config and plan per shape (cached), builds, scratch per
    queue. Thread-safe: launches are serialised (kernel arguments are shared state)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, spec: ExprSpec) -> None:
        self.ctx, self.dev, self.spec = ctx, dev, spec
        self.info = info_for(dev)
        self._item = spec.dtype_out.itemsize
        self._plans: dict[tuple[int, int, int], tuple[AxisBuilt, AxisPlan]] = {}
        self._scratch: dict[int, _Scratch] = {}
        self._lock = threading.Lock()

    def config(self, outer: int, r: int, inner: int) -> AxisExprConfig:
        """The config that serves this shape (after any fallback for the kernel's limits)."""
        return self.plan(outer, r, inner)[0].config

    def plan(self, outer: int, r: int, inner: int) -> tuple[AxisBuilt, AxisPlan]:
        key = (outer, r, inner)
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        cfg: AxisExprConfig | None = choose(self.info, outer, r, inner, self._item)
        while True:
            assert cfg is not None
            try:
                built = build(self.ctx, self.dev, self.info, self.spec, cfg)
                break
            except ExprBuildError as e:
                cfg = _smaller(cfg) if "exceeds" in str(e) or "local memory" in str(e) \
                    else None
                if cfg is None:
                    raise
        hit = (built, axis_plan(built.config, self.info.compute_units, outer, r, inner))
        with self._lock:
            if len(self._plans) > 256:
                self._plans.clear()
            self._plans[key] = hit
        return hit

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
        """`enqueue` with a given build and plan (tests and experiments pick their own)."""
        wg = b.config.wg
        with self._lock:
            s = self._scratch.get(queue.int_ptr)
            if s is None:
                s = self._scratch[queue.int_ptr] = _Scratch(self.ctx, queue)
            if p.split > 1:
                need = p.split * outer * inner * self._item
                if s.capacity < need:
                    s.partials = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, need)
                    s.capacity = need
            if not s.in_order and s.last is not None:
                wait_for = [*(wait_for or ()), s.last]
            ev = b.stage1(queue, (p.groups * wg, p.split), (wg, 1), *user_args, r, outer, inner,
                          p.chunk, s.partials, res, res_off, wait_for=wait_for)
            evs = [ev]
            if p.split > 1:
                n2 = -(-(outer * inner) // wg) * wg
                evs.append(b.stage2(queue, (n2,), (wg,), *user_args, r, outer, inner, p.split,
                                    s.partials, res, res_off,
                                    wait_for=None if s.in_order else [ev]))
            s.last = evs[-1]
            return evs


def axis_reducer(ctx: cl.Context, dev: cl.Device, spec: ExprSpec) -> AxisReducer:
    """The (cached, per context) AxisReducer of `spec` on `dev`."""
    key = (dev.int_ptr, spec)
    with _lock:
        hit = _reducers.get(ctx, {}).get(key)
        if hit is None:
            hit = _reducers.setdefault(ctx, {}).setdefault(key, AxisReducer(ctx, dev, spec))
    return hit
