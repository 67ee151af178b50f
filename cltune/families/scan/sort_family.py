"""The whole-array sort's radix passes as a kernel family (`sort`): variant `sort/<key dtype>`
(the key dtypes of kernels/sort.cl, `sort.TYPE_CODES`; bool keys sort as uint8), size class
`2^k` of the element count, as the 1-D reduction's. A config is the passes' shape
(`SortConfig`); the database never holds code.

    >>> FAMILY.check_variant("sort/float32"), FAMILY.check_size_class("2^20")
    ('', '')
    >>> variant_for("bool")
    'sort/uint8'
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cltune.core.buckets import class_bucket
from cltune.core.family import Family, reason_of
from cltune.families.scan.sort_config import SortConfig

NAME = "sort"
#: the key dtypes kernels/sort.cl sorts (sort.TYPE_CODES' names; a test keeps them equal)
KEY_DTYPES = ("float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "float16")
#: the sizes (log2) `cltune tune --op sort` tunes when none are named, per device type
DEFAULT_SIZES = {"gpu": (20, 24), "cpu": (16, 20)}


def key_dtype(dtype: object) -> np.dtype:
    """The key dtype a sort of `dtype` values takes (bool: uint8); ValueError for one that
    kernels/sort.cl does not sort."""
    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"{dtype!r:.40} is not a numpy dtype") from None
    dt = np.dtype(np.uint8) if dt == np.bool_ else dt
    if dt.name not in KEY_DTYPES:
        raise ValueError(f"the sort takes keys of {', '.join(KEY_DTYPES)} or bool, not "
                         f"{dt.name:.30}")
    return dt


def variant_for(dtype: object) -> str:
    """`sort/<key dtype>` of a sort of `dtype` values."""
    return f"{NAME}/{key_dtype(dtype).name}"


def dtype_of(variant: str) -> np.dtype:
    """The key dtype a variant names; ValueError when it names none."""
    kind, _, name = str(variant).partition("/")
    if kind != NAME or name not in KEY_DTYPES:
        raise ValueError(f"variant {variant!r:.60} is not sort/<key dtype> "
                         f"({', '.join(KEY_DTYPES)})")
    return np.dtype(name)


def parse_config(m: Mapping[str, object]) -> SortConfig:
    return SortConfig.from_mapping(m)


FAMILY = Family(NAME, parse_config, reason_of(dtype_of), reason_of(class_bucket),
                kernel="sort.cl", interface="cltune.families.scan.sort",
                reference="cltune.families.scan.sort",
                target="cltune.families.scan.sort_target:SortTarget",
                api="cltune.families.scan.sort")
