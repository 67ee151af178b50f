"""The interface of kernels/expr.cl: the template, the `-D` options of a validated
`ExprConfig`, and the built kernels of one config (cached per context); the expression
itself is `cltune.opencl.expression.ExprSpec`."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.device.wg_limits import kept_limit
from cltune.families.expr.config import ExprConfig
from cltune.opencl.build import check_limits, compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.expression import ExprSpec
from cltune.opencl.sources import kernel_file


@lru_cache(maxsize=1)
def template_source() -> str:
    return kernel_file("expr.cl")


def source(spec: ExprSpec, fp64: bool) -> str:
    """The program of an expression: its prelude, then kernels/expr.cl."""
    return spec.prelude(fp64) + template_source()


def template_hash() -> str:
    return hashlib.sha256(template_source().encode()).hexdigest()[:16]


# ---- builds -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExprBuilt:
    """The kernels of one build, shared by every launcher of the same (context, device, spec,
    config): their arguments are shared state, so launches take `lock`, and `owner` names the
    prepared launch that set each kernel's arguments last (expr/launch.py)."""

    config: ExprConfig
    unit_step: bool
    stage1: cl.Kernel
    stage2: cl.Kernel
    user_types: tuple = ()  # per user argument: None (a buffer) or its numpy scalar type
    lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    owner: dict = field(default_factory=dict, compare=False, repr=False)


_builds: ContextCache[ExprBuilt] = ContextCache()


def build_options(cfg: ExprConfig, *, unit_step: bool, nv_ptx: bool) -> list[str]:
    """The `-D` options of a build: integers from a validated config and two booleans."""
    if not isinstance(cfg, ExprConfig):
        raise TypeError("build_options takes a validated ExprConfig")
    defs = {**cfg.defines(), "CLT_UNIT_STEP": int(bool(unit_step)),
            "CLT_NV_PTX": int(bool(nv_ptx))}
    return [f"-D{k}={int(v)}" for k, v in defs.items()]


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec, cfg: ExprConfig,
          *, unit_step: bool = True) -> ExprBuilt:
    """Build (or fetch from the context's cache) `cfg` of `spec` for `dev`."""
    key = (dev.int_ptr, spec, cfg, unit_step)
    return _builds.get(ctx, key, lambda: _build(ctx, dev, info, spec, cfg, unit_step))


def kernel_wg_limit(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                    cfg: ExprConfig) -> int:
    """The most work-items a group of this expression's kernels may have on `dev`
    (CL_KERNEL_WORK_GROUP_SIZE of a build of `cfg`, both stages): a struct accumulator can
    need more registers than a group of the device's maximum size has (argmax on the H200:
    256, where the device takes 1024)."""
    opts = [*build_options(cfg, unit_step=True, nv_ptx=info.is_nvidia), *spec.options]
    src = source(spec, info.fp64)

    def probe() -> int:
        prg = compile_program(ctx, dev, src, opts)
        wgs = cl.kernel_work_group_info.WORK_GROUP_SIZE
        return min(int(k.get_work_group_info(wgs, dev))
                   for k in (prg.clt_expr_stage1, prg.clt_expr_stage2))
    return kept_limit(info, src, opts, probe)  # once per driver: NVIDIA's builds are slow


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec, cfg: ExprConfig,
           unit_step: bool) -> ExprBuilt:
    opts = [*build_options(cfg, unit_step=unit_step, nv_ptx=info.is_nvidia), *spec.options]
    prg = compile_program(ctx, dev, source(spec, info.fp64), opts)
    s1, s2 = prg.clt_expr_stage1, prg.clt_expr_stage2
    user = spec.scalar_arg_dtypes()
    s1.set_scalar_arg_dtypes([*user, np.int64, np.int64, np.int64, np.int64, None, None, None,
                              np.int64])
    s2.set_scalar_arg_dtypes([*user, np.int64, None, np.uint32, None, np.int64])
    for k in (s1, s2):
        check_limits(k, dev, info, cfg.wg)
    return ExprBuilt(cfg, unit_step, s1, s2,
                     tuple(None if t is None else np.dtype(t).type for t in user))
