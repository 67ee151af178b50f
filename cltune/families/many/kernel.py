"""The interface of kernels/many.cl: build options from a validated ManyConfig, argument
lists by name, and builds cached per context (cltune.opencl.build and .caches).

The program is kernels/reduce.cl's header (its 1-D kernels left out with -DCLT_NO_1D=1: the
op, type, load and store macros are written once) followed by kernels/many.cl.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.many.config import ManyConfig
from cltune.families.many.family import ManyVariant
from cltune.opencl.build import BuildError, check_limits, compile_program, std_options
from cltune.opencl.caches import ContextCache
from cltune.opencl.kernel_args import KernelArgs
from cltune.opencl.sources import acc_defines, kernel_file, text_hash

_ACC = {"float": np.float32, "double": np.float64, "int": np.int32, "uint": np.uint32,
        "long": np.int64, "ulong": np.uint64}


def many_args(slots: int) -> KernelArgs:
    """clt_many's arguments: the slots' buffers, then the launch's table and outputs."""
    return KernelArgs((*(f"x{i}" for i in range(slots)), "meta", "k", "partials", "pbase",
                       "out", "obase", "tile"))


FIN_ARGS = KernelArgs(("meta", "k", "partials", "pbase", "out", "obase", "tile"))


def many_source() -> str:
    return kernel_file("reduce.cl") + "\n" + kernel_file("many.cl")


def source_hash() -> str:
    return text_hash(many_source())


def acc_type(variant: ManyVariant, fp64: bool) -> str:
    return variant.spec.acc_cl_type(variant.wide(fp64))



def build_defines(variant: ManyVariant, cfg: ManyConfig, *, fp64: bool,
                  index64: bool) -> list[str]:
    """The `-D` options of a build: produced here only, from validated values only."""
    if not isinstance(cfg, ManyConfig) or not isinstance(variant, ManyVariant):
        raise TypeError("build_defines takes a validated ManyVariant and ManyConfig")
    cfg.validate()  # frozen, but re-checked: this is the door to the compiler
    defs = {
        **acc_defines(variant.spec, fp64),  # double for float32 where fp64, else Kahan
        "CLT_NO_1D": 1,
        "CLT_WG": cfg.wg,
        "CLT_ITEMS": cfg.items,
        "CLT_VEC": cfg.vec,
        "CLT_MANY_STEPS": cfg.steps,
        "CLT_MANY_K": cfg.slots,
        "CLT_MANY_NORM": int(variant.norm),
        "CLT_PASSES": 2,
        "CLT_INDEX64": int(index64),
    }
    return [f"-D{k}={v}" for k, v in defs.items()]


@dataclass(frozen=True, eq=False)
class ManyBuilt:
    """The two kernels of one build and what launching them needs."""

    variant: ManyVariant
    config: ManyConfig
    index64: bool
    many: cl.Kernel
    fin: cl.Kernel
    acc_dtype: np.dtype

    @property
    def tile_bytes(self) -> int:
        return self.config.wg * self.acc_dtype.itemsize


_builds: ContextCache[ManyBuilt] = ContextCache()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: ManyVariant,
          cfg: ManyConfig, *, index64: bool = False) -> ManyBuilt:
    key = (dev.int_ptr, str(variant), cfg, index64, bool(info.fp64), many_source())
    return _builds.get(ctx, key, lambda: _build(ctx, dev, info, variant, cfg, index64))


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: ManyVariant,
           cfg: ManyConfig, index64: bool) -> ManyBuilt:
    if variant.spec.needs_fp64 and not info.fp64:
        raise BuildError("needs cl_khr_fp64, which the device lacks")
    fp64 = bool(info.fp64)
    opts = [*build_defines(variant, cfg, fp64=fp64, index64=index64), *std_options(info)]
    prg = compile_program(ctx, dev, many_source(), opts)
    acc = np.dtype(_ACC[acc_type(variant, fp64)])
    k, fin = prg.clt_many, prg.clt_many_fin
    for kern in (k, fin):
        check_limits(kern, dev, info, cfg.wg, cfg.wg * acc.itemsize)
    return ManyBuilt(variant, cfg, index64, k, fin, acc)
