"""Scans as a kernel family (`scan`): inclusive and exclusive prefix sums and products, and
running minima and maxima (numpy's `cumsum`, `cumprod`, `maximum.accumulate`,
`minimum.accumulate`), over a whole array, along an axis, or by segments.

Variant `op/dtype/layout`: op one of sum, prod, min, max; dtype the input's (numpy's result
dtype follows: integer sums and products widen to 64 bits and wrap as numpy's do); layout
`rows` (the scanned axis is contiguous; a whole array is one row) or `cols` (it is strided).
Size class `2^ax2^b` (core.shapes): rows: (log2 rows, log2 row length); cols: (log2 scanned
length, log2 columns).

    >>> v = variant_of("sum/int32/rows")
    >>> v.result_dtype, v.acc_cl_type, class_of(1, 1 << 20, 1, "rows")
    (dtype('int64'), 'ulong', (0, 20))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError
from cltune.core.shapes import shape_key_of
from cltune.families.scan.config import LAYOUTS, ScanConfig

NAME = "scan"
OPS = ("sum", "prod", "min", "max")
OP_ID = {"sum": 0, "prod": 1, "min": 2, "max": 3}
#: numpy dtype name -> OpenCL C type
CL_TYPES = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
            "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong",
            "float32": "float", "float64": "double"}
DTYPES = tuple(CL_TYPES)
_INT_LIMITS = {"char": ("CHAR_MIN", "CHAR_MAX"), "uchar": ("0", "UCHAR_MAX"),
               "short": ("SHRT_MIN", "SHRT_MAX"), "ushort": ("0", "USHRT_MAX"),
               "int": ("INT_MIN", "INT_MAX"), "uint": ("0u", "UINT_MAX"),
               "long": ("LONG_MIN", "LONG_MAX"), "ulong": ("0ul", "ULONG_MAX")}
#: the classes tuned by default: whole arrays of 2^16..2^28 and the issue's axis shapes
DEFAULT_ROWS = ((0, 12), (0, 16), (0, 20), (0, 24), (0, 26), (0, 28), (16, 8), (4, 20))
DEFAULT_COLS = ((20, 4), (16, 8), (12, 12))


@dataclass(frozen=True)
class ScanVariant:
    op: str
    dtype: str
    layout: str = "rows"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise OpError(f"scan: unknown op {self.op!r}; choose one of {', '.join(OPS)}")
        if self.dtype not in DTYPES:
            raise OpError(f"scan: unsupported dtype {self.dtype!r}; choose one of "
                          f"{', '.join(DTYPES)}")
        if self.layout not in LAYOUTS:
            raise OpError(f"scan: unknown layout {self.layout!r}; choose one of "
                          f"{', '.join(LAYOUTS)}")

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("float")

    @property
    def in_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def result_dtype(self) -> np.dtype:
        """numpy's: cumsum/cumprod of a small integer type is the platform's 64-bit integer of
        its signedness; min/max keep the type."""
        if self.op in ("min", "max") or self.is_float:
            return self.in_dtype
        return np.dtype(np.uint64 if self.dtype.startswith("uint") else np.int64)

    @property
    def out_cl_type(self) -> str:
        return CL_TYPES[self.result_dtype.name]

    @property
    def acc_cl_type(self) -> str:
        """Integer sums and products in the unsigned type of the result (wrap-around is
        defined there; the bits are numpy's signed answer); everything else in the result's."""
        if not self.is_float and self.op in ("sum", "prod"):
            return "ulong"
        return self.out_cl_type

    @property
    def acc_bytes(self) -> int:
        """The accumulator's width in bytes (4 or 8)."""
        return 8 if self.acc_cl_type in ("double", "long", "ulong") else 4

    @property
    def needs_fp64(self) -> bool:
        return self.dtype == "float64"

    def ident_int(self) -> str:
        """The identity of an integer min/max, as a name from OpenCL C's limits."""
        lo, hi = _INT_LIMITS[CL_TYPES[self.dtype]]
        return hi if self.op == "min" else lo

    def with_layout(self, layout: str) -> ScanVariant:
        return ScanVariant(self.op, self.dtype, layout)

    def __str__(self) -> str:
        return f"{self.op}/{self.dtype}/{self.layout}"


def variant_of(text: str) -> ScanVariant:
    """The variant a text names; OpError (a ValueError) when it names none."""
    parts = text.split("/")
    if len(parts) != 3:
        raise OpError(f"variant {text!r:.60} is not op/dtype/layout")
    return ScanVariant(*parts)


def _log2(v: int) -> int:
    return max(0, round(math.log2(max(1, v))))


def class_of(outer: int, r: int, inner: int, layout: str) -> tuple[int, int]:
    """The size class of a scan of the view (outer, r, inner) along r."""
    if layout == "rows":
        return _log2(outer * inner), _log2(r)
    return _log2(r), _log2(outer * inner)


def _parse_config(m: Mapping[str, object]) -> ScanConfig:
    return ScanConfig.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(variant_of), reason_of(shape_key_of),
                kernel="scan.cl", interface="cltune.families.scan.kernel",
                reference="cltune.families.scan.reference",
                target="cltune.families.scan.target:ScanTarget", api="cltune.families.scan.api",
                untuned="")
