"""An application's `GenericScanKernel` as a kernel family (`gscan`): variant = the kernel's
fingerprint (24 hex digits of a hash of its types, expressions, arguments, preamble and
options), size class `2^k` (the element count) as for the 1-D reduction.

The database never holds the application's code: only this fingerprint and configs.

    >>> FAMILY.check_variant("0123456789abcdef01234567"), FAMILY.check_size_class("2^20")
    ('', '')
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cltune.core.buckets import class_bucket, size_class  # noqa: F401 - the same size classes
from cltune.core.family import Family, reason_of
from cltune.families.scan.gscan_config import GScanConfig
from cltune.opencl.expression import FINGERPRINT_HEX

NAME = "gscan"

_VARIANT = re.compile(rf"^[0-9a-f]{{{FINGERPRINT_HEX}}}$")


def check_variant(text: str) -> str:
    if isinstance(text, str) and _VARIANT.match(text):
        return ""
    return (f"variant {text!r:.60} is not a GenericScanKernel fingerprint "
            f"({FINGERPRINT_HEX} hex digits)")


def parse_config(m: Mapping[str, object]) -> GScanConfig:
    return GScanConfig.from_mapping(m)


FAMILY = Family(NAME, parse_config, check_variant, reason_of(class_bucket),
                kernel="generic_scan.cl", interface="cltune.families.scan.generic",
                reference="cltune.families.scan.gscan_target",
                target="cltune.families.scan.gscan_target:GScanTarget",
                api="cltune.families.scan.generic")
