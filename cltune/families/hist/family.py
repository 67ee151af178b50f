"""Histograms as a kernel family (`hist`, #41).

Variant `kind/dtype[/weights]`: kind `bincount` (integers, counts of 0 .. nbins - 1),
`histogram` (uniform bins of float32/float64 values over a range, numpy's index arithmetic) or
`histogram_edges` (bins between given increasing edges, a binary search);
weights `float32` or `float64` (sums of the weights instead of counts; bincount's are float64,
as numpy's). Size class `2^ax2^b`: a = log2 of the elements, b = log2 of the bins (rounded).
A call is served by the tuned class nearest to it (within `shapes.MAX_CLASS_STEPS`), else by
the builtin config for its bin count.

    >>> variant_of("histogram/float32/float32").weights, class_of(1 << 20, 256)
    (dtype('float32'), (20, 8))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError
from cltune.core.shapes import shape_key_of
from cltune.families.hist.config import HistConfig
from cltune.families.hist.kernel import TYPE_CODES

NAME = "hist"
KINDS = ("bincount", "histogram", "histogram_edges")
#: (log2 elements, log2 bins) tuned by default: 256 and 4096 bins at 2^20 and 2^24 elements
DEFAULT_CLASSES = ((20, 8), (24, 8), (24, 12))


@dataclass(frozen=True)
class HistVariant:
    kind: str  # bincount | histogram
    dtype: np.dtype
    weights: np.dtype | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise OpError(f"hist: unknown kind {self.kind!r:.30}; choose one of "
                          f"{', '.join(KINDS)}")
        if self.dtype not in TYPE_CODES:
            raise OpError(f"hist: unsupported dtype {self.dtype!s:.30}")
        if (self.kind != "bincount") != (self.dtype.kind == "f"):
            raise OpError("hist: histogram bins floats (float32, float64), bincount counts "
                          "integers")
        if self.weights is not None and self.weights.name not in ("float32", "float64"):
            raise OpError(f"hist: weights are float32 or float64, not {self.weights!s:.30}")
        if self.kind == "bincount" and self.weights not in (None, np.dtype(np.float64)):
            raise OpError("hist: bincount sums its weights in float64 (numpy's result)")

    def __str__(self) -> str:
        w = f"/{self.weights.name}" if self.weights is not None else ""
        return f"{self.kind}/{self.dtype.name}{w}"


def variant_of(text: str) -> HistVariant:
    """The variant a text names; OpError (a ValueError) when it names none."""
    parts = text.split("/")
    if len(parts) not in (2, 3):
        raise OpError(f"variant {text!r:.60} is not kind/dtype[/weights]")
    try:
        dts = [np.dtype(p) for p in parts[1:]]
    except TypeError:
        raise OpError(f"variant {text!r:.60}: unknown dtype") from None
    return HistVariant(parts[0], dts[0], dts[1] if len(dts) == 2 else None)


def _log2_round(v: float) -> int:
    return max(0, round(math.log2(max(1.0, v))))


def class_of(n: int, nbins: int) -> tuple[int, int]:
    """The size class of a call: (log2 elements, log2 bins), rounded."""
    return _log2_round(n), _log2_round(nbins)


def _parse_config(m: Mapping[str, object]) -> HistConfig:
    return HistConfig.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
                kernel="hist.cl", interface="cltune.families.hist.kernel",
                reference="cltune.families.hist.reference",
                target="cltune.families.hist.target:HistTarget", api="cltune.families.hist.api",
                untuned="")
