"""Reduction operations and element types: numpy semantics mapped onto OpenCL C types.

This module is the one place that knows, for an (op, dtype) pair, which OpenCL types the
kernel reads, accumulates in and writes, what the identity is and what numpy returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

OPS = ("sum", "prod", "min", "max", "dot")
DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint32", "uint64")

#: OpenCL C scalar type name per numpy dtype name.
CL_TYPE = {
    "float16": "half",
    "float32": "float",
    "float64": "double",
    "int32": "int",
    "int64": "long",
    "uint32": "uint",
    "uint64": "ulong",
}
_OP_ID = {"sum": 0, "prod": 1, "min": 2, "max": 3, "dot": 4}


class OpError(ValueError):
    """An op/dtype pair that cltune does not support."""


@dataclass(frozen=True)
class OpSpec:
    """What the kernel computes: the op and the element type of its input(s)."""

    op: str
    dtype: str

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise OpError(f"unknown op {self.op!r}; choose one of {', '.join(OPS)}")
        if self.dtype not in DTYPES:
            raise OpError(f"unknown dtype {self.dtype!r}; choose one of {', '.join(DTYPES)}")

    @classmethod
    def of(cls, op: str, dtype: object) -> OpSpec:
        return cls(op, np.dtype(dtype).name if not isinstance(dtype, str) else dtype)

    @cached_property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("float")

    @property
    def is_arith(self) -> bool:
        """sum, prod and dot accumulate; min and max select."""
        return self.op in ("sum", "prod", "dot")

    @property
    def n_inputs(self) -> int:
        return 2 if self.op == "dot" else 1

    @cached_property
    def result_dtype(self) -> np.dtype:
        """numpy's result dtype (np.sum of int32 is int64 on 64-bit Linux)."""
        if self.op == "dot":
            return self.np_dtype  # numpy.dot keeps the input dtype (and wraps in it)
        if self.is_arith and not self.is_float:
            return np.dtype("uint64" if self.dtype.startswith("uint") else "int64")
        return self.np_dtype

    def acc_cl_type(self, wide: bool = False) -> str:
        """Accumulator type. Integer sums accumulate unsigned so overflow wraps (no UB)."""
        if not self.is_float:
            if self.is_arith:
                return "ulong"
            return CL_TYPE[self.dtype]
        if self.dtype == "float16":
            return "double" if wide else "float"
        if self.dtype == "float32":
            return "double" if wide else "float"
        return "double"

    @property
    def widened(self) -> bool:
        """float16/float32 sum, prod and dot are never accumulated plainly in the input's
        precision: in double where the device has fp64, else compensated (Kahan for sums,
        an FMA TwoProduct error term for products), so that the answer is at least as accurate
        as numpy's own in the same dtype (README.md, "Accuracy")."""
        return self.is_arith and self.dtype in ("float16", "float32")

    def accumulation(self, fp64: bool, asked: str = "native") -> str:
        """How a kernel of this op accumulates on a device with or without fp64, given the
        accumulator a config asks for (`native`, `kahan`, `wide`): `wide` (double), `kahan`
        (compensated in the accumulator type) or `native`. A widened op's `native` is `wide`
        where the device has fp64, else `kahan`."""
        if not (self.is_float and self.is_arith):
            return "native"
        if asked == "native" and self.widened:
            return "wide" if fp64 else "kahan"
        return asked

    def out_cl_type(self) -> str:
        return CL_TYPE[self.result_dtype.name]

    def out_unsigned_cl_type(self) -> str:
        """Unsigned type of the result's width: integer results are written bit-exactly."""
        return {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[self.result_dtype.itemsize]

    @property
    def needs_fp64(self) -> bool:
        return self.dtype == "float64"

    @property
    def needs_fp16(self) -> bool:
        return self.dtype == "float16"

    @property
    def op_id(self) -> int:
        return _OP_ID[self.op]

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    @property
    def vector_element_bytes(self) -> int:
        """Bytes of the widest lane a vector of this op holds (input or accumulator): what a
        device's vector-width restriction (`DeviceInfo.vector_cap`) is counted in."""
        wide = self.widened or self.acc_cl_type() in ("double", "long", "ulong")
        return max(self.itemsize, 8 if wide else 4)

    def bytes_read(self, n: int) -> int:
        return n * self.itemsize * self.n_inputs

    def __str__(self) -> str:
        return f"{self.op}/{self.dtype}"
