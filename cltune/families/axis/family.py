"""Reductions along an axis and over segments as a kernel family (`axis`).

Variant `op/dtype/kind`: kind `rows` (the reduced axis is contiguous), `cols` (strided: values
kept along a contiguous inner axis) or `segs` (CSR segments). Size class `2^a x 2^b` written
`2^ax2^b`: for rows, a = log2 rows and b = log2 row length; for cols, a = log2 of the reduced
length and b = log2 of the inner (kept, contiguous) length; for segments, a = log2 segment
count and b = log2 mean length. A shape is served by the tuned class nearest to it.

    >>> size_class((20, 4)), shape_key_of("2^20x2^4"), variant_of("sum/float32/cols").kind
    ('2^20x2^4', (20, 4), 'cols')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError, OpSpec
from cltune.core.shapes import shape_key_of
from cltune.families.axis.config import AxisConfig

NAME = "axis"
KINDS = ("rows", "cols", "segs")

#: The default tuning shapes (rows x cols; 2^24 elements but 2^24 x 2), tuned
#: for both axes.
DEFAULT_SHAPES = ((20, 4), (18, 6), (16, 8), (14, 14), (12, 12), (4, 20), (22, 2), (24, 1))
#: Segments: (log2 count, log2 mean length) tuned by default.
DEFAULT_SEGMENTS = ((20, 4), (16, 8), (12, 12))


#: the segments kernel's error flag when every bound was valid
NO_ERROR = 0xFFFFFFFF


def identity(spec: OpSpec) -> object:
    """What an empty reduction gives, in the result dtype (min/max: +-inf for floats, the
    integer limits otherwise; sums of floats -0.0, so that -0.0 + x is x for every x)."""
    dt = spec.result_dtype
    if spec.op in ("sum", "dot"):
        return dt.type(-0.0) if spec.is_float else dt.type(0)
    if spec.op == "prod":
        return dt.type(1)
    if spec.is_float:
        return dt.type(np.inf if spec.op == "min" else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if spec.op == "min" else info.min)


@dataclass(frozen=True)
class AxisVariant:
    spec: OpSpec
    kind: str

    def __str__(self) -> str:
        return f"{self.spec.op}/{self.spec.dtype}/{self.kind}"


def variant_of(text: str) -> AxisVariant:
    """The variant a text names; OpError (a ValueError) when it names none."""
    parts = text.split("/")
    if len(parts) != 3 or parts[2] not in KINDS:
        raise OpError(f"variant {text!r:.60} is not op/dtype/kind with kind in {KINDS}")
    return AxisVariant(OpSpec(parts[0], parts[1]), parts[2])


def _parse_config(m: Mapping[str, object]) -> AxisConfig:
    return AxisConfig.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
                kernel="axis.cl", interface="cltune.families.axis.kernel",
                reference="cltune.families.axis.reference",
                target="cltune.families.axis.target:AxisTarget", api="cltune.families.axis.api",
                untuned="cltune.families.axis.defaults:untuned")
