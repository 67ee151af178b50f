"""The 1-D reduction as a kernel family: variant `op/dtype`, size class `2^k` (k = log2 n).

    >>> from cltune.families.reduce.family import size_class, spec_of, variant
    >>> variant(spec_of("max/int64")), size_class(20)
    ('max/int64', '2^20')
"""

from __future__ import annotations

from collections.abc import Mapping

from cltune.core.buckets import class_bucket
from cltune.core.family import Family, reason_of
from cltune.core.ops import OpError, OpSpec
from cltune.families.reduce.config import Config

NAME = "reduce"


def variant(spec: OpSpec) -> str:
    return f"{spec.op}/{spec.dtype}"


def spec_of(text: str) -> OpSpec:
    """The OpSpec a variant names; OpError when it names none."""
    op, sep, dtype = text.partition("/")
    if not sep:
        raise OpError(f"variant {text!r:.60} is not op/dtype")
    return OpSpec(op, dtype)


def _parse_config(m: Mapping[str, object]) -> Config:
    return Config.from_mapping(m)


FAMILY = Family(NAME, _parse_config, reason_of(spec_of), reason_of(class_bucket),
                kernel="reduce.cl",
                interface="cltune.families.reduce.kernel",
                reference="cltune.families.reduce.reference",
                target="cltune.families.reduce.target:ReduceTarget",
                api="cltune.families.reduce.api",
                untuned="cltune.families.reduce.defaults:untuned")
