"""The OpenCL C files in kernels/ (package data `cltune.kernels`), their hashes, and the op
and element-type part of the build options that kernels/reduce.cl's header (shared by
kernels/axis.cl) reads."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources

from cltune.core.ops import CL_TYPE, OpSpec


@lru_cache(maxsize=8)
def kernel_file(name: str) -> str:
    """The text of kernels/`name` (a fixed name in cltune's code, never one from outside)."""
    return resources.files("cltune.kernels").joinpath(name).read_text()


def text_hash(text: str) -> str:
    """Short stable hash of a kernel source (stored beside results: a changed kernel is seen)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def op_defines(spec: OpSpec, wide: bool = False) -> dict[str, object]:
    """The op and type part of the build options (kernels/reduce.cl and kernels/axis.cl)."""
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


def acc_defines(spec: OpSpec, fp64: bool, asked: str = "native") -> dict[str, object]:
    """The op and type part of the build options with the accumulation `spec.accumulation`
    chooses for the device (double where it has fp64 for float16/float32 sums and products,
    else compensated: CLT_KAHAN)."""
    mode = spec.accumulation(fp64, asked)
    return {**op_defines(spec, mode == "wide"), "CLT_KAHAN": int(mode == "kahan")}
