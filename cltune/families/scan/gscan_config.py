"""`GScanConfig`: the tunables of an application's `GenericScanKernel` (kernels/generic_scan.cl),
validated on creation: the only door from stored or sampled values to its `-DCLT_WG`.

    >>> GScanConfig.from_mapping({"wg": 128, "groups_per_cu": 8}).short()
    'wg128 g/cu8'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

MAX_WG = 1024
#: chunks a compute unit (each scanned by one group: its work-items take contiguous ranges)
GROUPS_PER_CU = (1, 2, 4, 8, 16, 32, 64)


class GScanConfigError(ConfigError):
    """A GenericScanKernel config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class GScanConfig(MappedConfig):
    """wg: work-group size (a power of two; its work-items scan contiguous ranges of the
    group's chunk, then combine in __local memory); groups_per_cu: the chunks (one group
    each) per compute unit the input is cut into (a launch parameter)."""

    error: ClassVar[type[ValueError]] = GScanConfigError

    wg: int = 128
    groups_per_cu: int = 8

    def check(self) -> None:
        if not (0 < self.wg <= MAX_WG and is_pow2(self.wg)):
            raise GScanConfigError(f"wg: {self.wg!r:.20} is not a power of two in 1..{MAX_WG}")
        if self.groups_per_cu not in GROUPS_PER_CU:
            raise GScanConfigError(f"groups_per_cu: {self.groups_per_cu!r:.20} is not one of "
                                   f"{GROUPS_PER_CU}")

    def short(self) -> str:
        return f"wg{self.wg} g/cu{self.groups_per_cu}"

    def defines(self) -> dict[str, int]:
        """The `-D` values of kernels/generic_scan.cl: integers from checked fields only."""
        self.validate()
        return {"CLT_WG": self.wg}
