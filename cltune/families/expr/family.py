"""Custom expression reductions as a kernel family: variant = the expression's fingerprint
(24 hex digits, see cltune.opencl.expression), size class `2^k` as for the 1-D reduction.

The database never holds an expression: only this fingerprint and configs (name -> value).

    >>> from cltune.families.expr.family import FAMILY
    >>> FAMILY.check_variant("0123456789abcdef01234567"), FAMILY.check_size_class("2^20")
    ('', '')
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cltune.core.buckets import class_bucket, size_class  # noqa: F401 - the same size classes
from cltune.core.family import Family, reason_of
from cltune.families.expr.config import ExprConfig
from cltune.opencl.expression import FINGERPRINT_HEX

NAME = "expr"

_VARIANT = re.compile(rf"^[0-9a-f]{{{FINGERPRINT_HEX}}}$")


def check_variant(text: str) -> str:
    if isinstance(text, str) and _VARIANT.match(text):
        return ""
    return f"variant {text!r:.60} is not an expression fingerprint ({FINGERPRINT_HEX} hex digits)"


def parse_config(m: Mapping[str, object]) -> ExprConfig:
    return ExprConfig.from_mapping(m)


FAMILY = Family(NAME, parse_config, check_variant, reason_of(class_bucket), kernel="expr.cl",
              interface="cltune.families.expr.kernel", reference="cltune.families.expr.reference",
              target="cltune.families.expr.target:ExprTarget", api="cltune.families.expr.api")
