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

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError, OpSpec
from cltune.families.axis.config import AxisConfig

NAME = "axis"
KINDS = ("rows", "cols", "segs")
MAX_LOG2 = 40
_CLASS = re.compile(r"^2\^(\d{1,2})x2\^(\d{1,2})$")
_SHAPE = re.compile(r"^\s*(\d+|2\^\d+)\s*[xX×]\s*(\d+|2\^\d+)\s*$")

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


def size_class(key: tuple[int, int]) -> str:
    return f"2^{key[0]}x2^{key[1]}"


def shape_key_of(text: str) -> tuple[int, int]:
    """(a, b) of a size class `2^ax2^b`; ValueError when the text is not one."""
    m = _CLASS.match(text)
    if not m or max(int(m.group(1)), int(m.group(2))) > MAX_LOG2:
        raise ValueError(f"size class {text!r:.60} is not 2^ax2^b with a, b in 0..{MAX_LOG2}")
    return int(m.group(1)), int(m.group(2))


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """'65536x256,16x1048576' or '2^16x2^8' -> (log2 rows, log2 cols) pairs (powers of two)."""
    out = []
    for part in text.split(","):
        m = _SHAPE.match(part)
        if not m:
            raise ValueError(f"not a shape: {part.strip()!r:.40} (use ROWSxCOLS, e.g. 65536x256)")
        key = []
        for g in m.groups():
            v = 2 ** int(g[2:]) if g.startswith("2^") else int(g)
            if v <= 0 or v & (v - 1) or v > 2**MAX_LOG2:
                raise ValueError(f"shape {part.strip()!r:.40}: {g} is not a power of two "
                                 f"in 1..2^{MAX_LOG2}")
            key.append(v.bit_length() - 1)
        out.append((key[0], key[1]))
    return tuple(dict.fromkeys(out))


def log2_key(a: int, b: int) -> tuple[float, float]:
    return math.log2(max(1, a)), math.log2(max(1, b))


#: a tuned class serves shapes up to this many powers of two away in each dimension; beyond,
#: the heuristic (on the H200 the argmax tuned for rows of 2^20x16 ran 7x slower than the
#: heuristic on 16x2^20, where it split each row over 1049 groups)
MAX_CLASS_STEPS = 3


def nearest(key: tuple[float, float], tuned: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The tuned class nearest to a shape (log2 space; ties to the larger); None when none is
    within MAX_CLASS_STEPS in both dimensions."""
    near = [t for t in tuned
            if abs(t[0] - key[0]) <= MAX_CLASS_STEPS and abs(t[1] - key[1]) <= MAX_CLASS_STEPS]
    if not near:
        return None
    return min(near, key=lambda t: ((t[0] - key[0]) ** 2 + (t[1] - key[1]) ** 2,
                                    -t[0] - t[1]))


def _parse_config(m: Mapping[str, object]) -> AxisConfig:
    return AxisConfig.from_mapping(m)


AXIS = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
              kernel="axis.cl", interface="cltune.families.axis.kernel", reference="cltune.families.axis.reference",
              target="cltune.families.axis.target:AxisTarget")
