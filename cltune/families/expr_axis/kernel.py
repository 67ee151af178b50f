"""The interface of kernels/expr_axis.cl: the program of an expression along an axis (its
prelude, then the template), the `-D` options of a validated `AxisExprConfig`, and the built
kernels (cached per context; configs that differ only in launch parameters share a program)."""

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
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.opencl.build import check_limits, compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.expression import ExprSpec
from cltune.opencl.sources import kernel_file

#: kernels/expr_axis.cl's rounding cascade (its defaults): an accumulator restarts every
#: CASCADE_BLOCK steps into level 1, pushed every CASCADE_FAN blocks onto a binary counter
#: of CASCADE_DEPTH slots
CASCADE_BLOCK, CASCADE_FAN, CASCADE_DEPTH = 64, 4, 10


def _narrow(dt: np.dtype) -> bool:
    """Whether every value of `dt` is exact in a double with bits to spare: float32 or
    narrower (complex64), integers of up to 32 bits, bool; structs field by field."""
    if dt.names:
        return all(_narrow(dt.fields[k][0]) for k in dt.names)
    if dt.subdtype is not None:
        return _narrow(dt.subdtype[0])
    return dt.itemsize <= {"f": 4, "c": 8}.get(dt.kind, 4) if dt.kind in "fciub" else False


def _wide(dt: np.dtype) -> bool:
    """Whether every floating-point field of an accumulator is double (or complex128)."""
    if dt.names:
        return all(_wide(dt.fields[k][0]) for k in dt.names)
    if dt.subdtype is not None:
        return _wide(dt.subdtype[0])
    return dt.kind not in "fc" or dt.itemsize >= {"f": 8, "c": 16}[dt.kind]


def wide_accumulator(spec: ExprSpec) -> bool:
    """Whether the spec accumulates values of at most float32 precision (every vector
    argument `_narrow`) in double-precision floating-point fields only: a mean, norm or var of
    float32 (cltune.stats). Such a chain of launch.MAX_STEPS steps (2^24 * 2^-53 = 2^-29 of
    the sum of magnitudes) is already more accurate than numpy's float32 answer, so the
    rounding cascade, whose counter keeps CASCADE_DEPTH more accumulators an output, is left
    out (on the H200 the sweep's best var of 16x1048576 float32 along 0 took 105 us against
    torch's 28, where argmax, which never restarts, took 29)."""
    dt = spec.dtype_out
    floats = [dt.fields[k][0] for k in dt.names] if dt.names else [dt]
    return (any(f.kind in "fc" for f in floats) and _wide(dt)
            and all(_narrow(a.dtype) for a in spec.vector_args))


def restarts(spec: ExprSpec) -> bool:
    """Whether the spec's accumulators restart (the cascade): not where the prelude (or the
    application's preamble) sets CLT_BLOCK 0 (no floating-point field, or an exact kernel),
    nor for a wide accumulator (`wide_accumulator`)."""
    return "#define CLT_BLOCK 0" not in spec.prelude(False) and not wide_accumulator(spec)


def streams(spec: ExprSpec) -> tuple[bool, bool]:
    """(whether the heuristic streams CPU columns of this spec, whether with the rounding
    cascade): accumulators that hold floating-point values, wide ones (`wide_accumulator`) or
    ones that restart (`restarts`); exact ones (argmin/argmax, integers) keep strips of 16."""
    cascade = restarts(spec)
    return cascade or wide_accumulator(spec), cascade


@lru_cache(maxsize=1)
def axis_template() -> str:
    return kernel_file("expr_axis.cl")


def template_hash() -> str:
    """The skeleton's hash (stored with every tuned result of the family)."""
    return hashlib.sha256(axis_template().encode()).hexdigest()[:16]


def axis_source(spec: ExprSpec, fp64: bool) -> str:
    """The application's prelude followed by the axis skeleton (without the rounding cascade
    where the accumulator is wide: `restarts`)."""
    cut = "" if restarts(spec) else "#ifndef CLT_BLOCK\n#define CLT_BLOCK 0\n#endif\n"
    return spec.prelude(fp64) + cut + axis_template()


#: the longest rows a build may take whole (`short`: kernels/expr_axis.cl's CLT_AX_SHORT)
MAX_SHORT = 16


def build_options(cfg: AxisExprConfig, info: DeviceInfo, short: int = 0) -> list[str]:
    """The `-D` options of a build: integers from a validated config only, and
    CLT_AX_ROLLED=1 for a CPU `info` (the binary counter's loops kept as loops: an unrolled
    push of var's accumulators took Debian's PoCL 17 s to compile, 1.4 s rolled; see
    kernels/expr_axis.cl); `short` (2..MAX_SHORT, rows of a work-item each) a build for rows
    of exactly that many elements (CLT_AX_SHORT), without the rounding cascade (CLT_BLOCK 0:
    at most MAX_SHORT steps, fewer than its first block's CASCADE_BLOCK)."""
    if not isinstance(cfg, AxisExprConfig):
        raise TypeError("build_options takes a validated AxisExprConfig")
    if short and (not 2 <= short <= MAX_SHORT or cfg.layout != "rows" or cfg.lanes != 1):
        raise ValueError(f"short rows: 2..{MAX_SHORT} elements, rows a work-item each "
                         f"(got {short} for {cfg.short()})")
    rolled = ["-DCLT_AX_ROLLED=1"] if info.type == "cpu" else []
    # (a row of at most MAX_SHORT elements needs no rounding cascade: its chain is shorter
    # than the cascade's first block)
    whole = [f"-DCLT_AX_SHORT={int(short)}", "-DCLT_BLOCK=0"] if short else []
    return [*(f"-D{k}={int(v)}" for k, v in cfg.defines().items()), *rolled, *whole]


@dataclass(frozen=True)
class AxisBuilt:
    """A config and its program's kernels. Configs that differ only in launch parameters
    share the kernels, and so their lock: kernel arguments are shared state."""

    config: AxisExprConfig
    stage1: cl.Kernel
    stage2: cl.Kernel
    lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    #: > 0: built for rows of exactly this many elements (`build_options`), no others
    short: int = 0


_builds: ContextCache[AxisBuilt] = ContextCache()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
          cfg: AxisExprConfig, short: int = 0) -> AxisBuilt:
    """Build (or fetch from the context's cache) `cfg` of `spec` for `dev` (`short`: for
    rows of exactly that many elements, `build_options`); BuildError when it does not build
    or breaks the kernel's limits. Configs that differ only in launch parameters share a
    program."""
    key = (dev.int_ptr, spec, tuple(cfg.defines().items()), short)
    hit = _builds.get(ctx, key, lambda: _build(ctx, dev, info, spec, cfg, short))
    return hit if hit.config == cfg else AxisBuilt(cfg, hit.stage1, hit.stage2, hit.lock,
                                                   short=hit.short)


def kernel_wg_limit(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
                    cfg: AxisExprConfig) -> int:
    """The most work-items a group of `cfg`'s kernels may have on `dev`
    (CL_KERNEL_WORK_GROUP_SIZE, both stages): the accumulators and the cascade's counter can
    need more registers than a group of the device's maximum size has (a float32 sum along
    rows on the H200: 256, where the device takes 1024). BuildError when it does not build."""
    src, opts = axis_source(spec, info.fp64), [*build_options(cfg, info), *spec.options]

    def probe() -> int:
        prg = compile_program(ctx, dev, src, opts)
        wgs = cl.kernel_work_group_info.WORK_GROUP_SIZE
        return min(int(k.get_work_group_info(wgs, dev))
                   for k in (prg.clt_axis_stage1, prg.clt_axis_stage2))
    return kept_limit(info, src, opts, probe)  # once per driver: a probe took NVIDIA 20-48 s


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: ExprSpec,
           cfg: AxisExprConfig, short: int = 0) -> AxisBuilt:
    prg = compile_program(ctx, dev, axis_source(spec, info.fp64),
                          [*build_options(cfg, info, short), *spec.options])
    s1, s2 = prg.clt_axis_stage1, prg.clt_axis_stage2
    user = spec.scalar_arg_dtypes()
    tail = [np.int64, np.int64, np.int64, np.int64, None, None, np.int64]
    s1.set_scalar_arg_dtypes([*user, *tail])
    s2.set_scalar_arg_dtypes([*user, *tail])
    for k in (s1, s2):
        check_limits(k, dev, info, cfg.wg)
    return AxisBuilt(cfg, s1, s2, short=short)
