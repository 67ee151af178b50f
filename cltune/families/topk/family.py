"""Top-k as a kernel family (`topk`, #41).

Variant `topk/dtype` (float16, float32, float64, int8..uint64; the largest and the smallest
k share it). Size class `2^ax2^b`: a = log2 of the elements, b = log2 of k (rounded). A call is
served by the tuned class nearest to it (within `shapes.MAX_CLASS_STEPS`) whose config
selects its k, else by the builtin config for its k.

    >>> str(variant_of("topk/float32")), class_of(1 << 24, 10)
    ('topk/float32', (24, 3))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError
from cltune.core.shapes import shape_key_of
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import TYPE_CODES

NAME = "topk"
KINDS = ("topk",)
#: (log2 elements, log2 k) tuned by default: k = 8 and 1024 at 2^20 and 2^24 elements
DEFAULT_CLASSES = ((20, 3), (24, 3), (24, 10))


@dataclass(frozen=True)
class TopkVariant:
    kind: str
    dtype: np.dtype

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise OpError(f"topk: unknown kind {self.kind!r:.30}; choose {', '.join(KINDS)}")
        if self.dtype not in TYPE_CODES:
            raise OpError(f"topk: unsupported dtype {self.dtype!s:.30}")

    def __str__(self) -> str:
        return f"{self.kind}/{self.dtype.name}"


def variant_of(text: str) -> TopkVariant:
    """The variant a text names; OpError (a ValueError) when it names none."""
    parts = text.split("/")
    if len(parts) != 2:
        raise OpError(f"variant {text!r:.60} is not topk/dtype")
    try:
        dt = np.dtype(parts[1])
    except TypeError:
        raise OpError(f"variant {text!r:.60}: unknown dtype") from None
    return TopkVariant(parts[0], dt)


def _log2_round(v: float) -> int:
    return max(0, round(math.log2(max(1.0, v))))


def class_of(n: int, k: int) -> tuple[int, int]:
    """The size class of a call: (log2 elements, log2 k), rounded."""
    return _log2_round(n), _log2_round(k)


def _parse_config(m: Mapping[str, object]) -> TopkConfig:
    return TopkConfig.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
                kernel="topk.cl", interface="cltune.families.topk.kernel",
                reference="cltune.families.topk.reference",
                target="cltune.families.topk.target:TopkTarget", api="cltune.families.topk.api",
                untuned="")
