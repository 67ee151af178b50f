"""The interface of kernels/reduce.cl, in one place: the `-D` build options a validated config
becomes, and the kernels' argument lists by name (never by position).

    >>> STAGE1_PLAIN.out, STAGE1_DOT.y
    (7, 2)
"""

from __future__ import annotations

import numpy as np

from . import strategies
from .config import Config
from .ops import CL_TYPE, OpSpec


class KernelArgs:
    """A kernel's argument list: the index of each argument by name (`args.out`), as plain
    attributes (read on every launch)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        for i, name in enumerate(names):
            setattr(self, name, i)

    def __getattr__(self, name: str) -> int:  # only for names the kernel does not have
        raise AttributeError(f"no kernel argument {name!r} in {self.__dict__.get('names')}")

    def scalar_dtypes(self, index_dtype: type) -> list[type | None]:
        """For `Kernel.set_scalar_arg_dtypes`: indices and sizes are index_dtype, rest None."""
        return [index_dtype if n in ("xoff", "yoff", "n", "chunk") else None for n in self.names]


def _stage1(two_inputs: bool) -> KernelArgs:
    """`clt_stage1`'s arguments; `y`/`yoff` exist for two inputs (dot) only."""
    y = ("y", "yoff") if two_inputs else ()
    return KernelArgs(("x", "xoff", *y, "n", "chunk", "partials", "tile", "ticket", "out"))


STAGE1_PLAIN = _stage1(False)
STAGE1_DOT = _stage1(True)
#: `clt_stage2(partials, m, out, tile)`
STAGE2 = KernelArgs(("partials", "m", "out", "tile"))
STAGE2_DTYPES = [None, np.uint32, None, None]


def stage1_args(spec: OpSpec) -> KernelArgs:
    return STAGE1_DOT if spec.n_inputs == 2 else STAGE1_PLAIN


def build_defines(spec: OpSpec, cfg: Config, *, index64: bool, nv_ptx: bool = False) -> list[str]:
    """The `-D` options for a kernel build: produced here only, from validated values only."""
    if not isinstance(cfg, Config) or not isinstance(spec, OpSpec):
        raise TypeError("build_defines takes a validated OpSpec and Config")
    cfg._check()  # a Config is frozen, but re-check: this is the door to the compiler

    wide = cfg.acc == "wide"
    defs = {
        **op_defines(spec, wide),
        "CLT_STRATEGY": strategies.get(cfg.strategy).kernel_id,
        "CLT_HOOK": int(bool(strategies.get(cfg.strategy).source)),
        "CLT_WG": cfg.wg,
        "CLT_LANES": cfg.lanes,
        "CLT_ITEMS": cfg.items,
        "CLT_VEC": cfg.vec,
        "CLT_PASSES": cfg.passes,
        "CLT_KAHAN": int(cfg.acc == "kahan" and spec.is_float and spec.is_arith),
        "CLT_INDEX64": int(index64),
        "CLT_NV_PTX": int(nv_ptx),
    }
    return [f"-D{k}={v}" for k, v in defs.items()]


def op_defines(spec: OpSpec, wide: bool = False) -> dict[str, object]:
    """The op and type part of the build options (shared with kernels/axis.cl's builds)."""
    return {
        "CLT_OP": spec.op_id,
        "CLT_IN_T": CL_TYPE[spec.dtype],
        "CLT_ACC_T": spec.acc_cl_type(wide),
        "CLT_OUT_T": spec.out_cl_type(),
        "CLT_OUT_U": spec.out_unsigned_cl_type(),
        "CLT_IS_FLOAT": int(spec.is_float),
        "CLT_IS_HALF": int(spec.dtype == "float16"),
        "CLT_NEEDS_FP64": int(spec.needs_fp64 or (wide and spec.is_float)),
        "CLT_ACC_64": int(spec.acc_cl_type(wide) in ("double", "long", "ulong")),
    }
