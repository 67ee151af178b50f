"""Many small reductions in one launch as a kernel family (`many`).

Variant `op/dtype` with op one of sum, prod, min, max (the Reducer's ops but dot) or norm (the
L2 norm: square root of the sum of squares); size class `2^ax2^b`: a = log2 of the number of
arrays, b = log2 of their mean length (rounded). A call is served by the tuned class nearest
to it (within `shapes.MAX_CLASS_STEPS`), else by the builtin config of its own class.

    >>> variant_of("norm/float32").spec, class_of([4096] * 64)
    (OpSpec(op='sum', dtype='float32'), (6, 12))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError, OpSpec
from cltune.core.shapes import shape_key_of
from cltune.families.many.config import ManyConfig

NAME = "many"
OPS = ("sum", "prod", "min", "max", "norm")
DTYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64")
#: (log2 arrays, log2 mean length) tuned by default: the issue's 64 x 4096 and neighbours
DEFAULT_CLASSES = ((6, 12), (4, 12), (6, 16), (8, 10), (5, 18))


@dataclass(frozen=True)
class ManyVariant:
    op: str  # sum | prod | min | max | norm
    dtype: str

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise OpError(f"many: unknown op {self.op!r}; choose one of {', '.join(OPS)}")
        if self.dtype not in DTYPES:
            raise OpError(f"many: unsupported dtype {self.dtype!r}; choose one of "
                          f"{', '.join(DTYPES)}")
        if self.op == "norm" and not self.dtype.startswith("float"):
            raise OpError("many: norm is for float32 and float64 (cast integers first)")

    @cached_property
    def spec(self) -> OpSpec:
        """The op as kernels/reduce.cl's header knows it (norm: a sum of squares)."""
        return OpSpec("sum" if self.op == "norm" else self.op, self.dtype)

    @property
    def norm(self) -> bool:
        return self.op == "norm"

    @property
    def result_dtype(self) -> np.dtype:
        """numpy's: np.sum of int32 is int64, np.linalg.norm of float32 is float32."""
        return np.dtype(self.dtype) if self.norm else self.spec.result_dtype

    def wide(self, fp64: bool) -> bool:
        """float32 sums, products and norms accumulate in double where the device has it
        (at least as accurate as numpy's pairwise float32 sum, at no cost a memory-bound
        kernel notices), compensated (Kahan) where it has not: `OpSpec.accumulation`, as
        the 1-D family."""
        return self.spec.accumulation(fp64) == "wide"

    def __str__(self) -> str:
        return f"{self.op}/{self.dtype}"


def variant_of(text: str) -> ManyVariant:
    """The variant a text names; OpError (a ValueError) when it names none."""
    op, sep, dtype = text.partition("/")
    if not sep:
        raise OpError(f"variant {text!r:.60} is not op/dtype")
    return ManyVariant(op, dtype)


def log2_round(v: float) -> int:
    return max(0, round(math.log2(max(1.0, v))))


def class_of(lengths: Sequence[int]) -> tuple[int, int]:
    """The size class of a call: (log2 arrays, log2 mean length), rounded."""
    return log2_round(len(lengths)), log2_round(sum(lengths) / max(1, len(lengths)))


def _parse_config(m: Mapping[str, object]) -> ManyConfig:
    return ManyConfig.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
                kernel="many.cl", interface="cltune.families.many.kernel",
                reference="cltune.families.many.reference",
                target="cltune.families.many.target:ManyTarget", api="cltune.families.many.api",
                untuned="")
