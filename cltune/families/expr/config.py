"""The tunables of a custom expression reduction (`cltune.ReductionKernel`), as a value type.

An `ExprConfig` is built from a name -> value mapping (Optuna's params, a database row, an
import file); every field is checked, so nothing but known names with allowed values ever
becomes a `-D` build option of kernels/expr.cl (house rule 2). No OpenCL here: the database
layer validates stored configs with it.

    >>> ExprConfig.from_mapping({"layout": "strided", "wg": 256, "items": 4,
    ...                          "groups_per_cu": 8, "passes": 2}).short()
    'strided wg=256 items=4 g/cu=8 passes=2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig

LAYOUTS = ("strided", "contiguous")
MAX_WG = 1024
ITEMS = (1, 2, 4, 8, 16)
#: 0 = a single work-group reads the whole input (one launch, no partials)
GROUPS_PER_CU = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)


class ExprConfigError(ConfigError):
    """A config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class ExprConfig(MappedConfig):
    """One point of the expression reduction's design space.

    Fields:
        layout: `strided` (consecutive work-items read consecutive elements of their group's
            chunk: coalesced, for GPUs) or `contiguous` (each work-item streams its own chunk:
            CPUs).
        wg: work-group size (a power of two up to 1024; the device may allow fewer).
        items: independent accumulators per work-item (loads in flight per loop step).
        groups_per_cu: work-groups per compute unit (capped by n); 0 = one work-group.
        passes: 2 = the group partials are combined by a second kernel; 1 = by the last group
            to finish (atomic ticket).
    """

    error: ClassVar[type[ValueError]] = ExprConfigError

    layout: str = "strided"
    wg: int = 256
    items: int = 4
    groups_per_cu: int = 8
    passes: int = 2

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise ExprConfigError(f"layout: {self.layout!r:.40} is not one of {LAYOUTS}")
        if not (0 < self.wg <= MAX_WG and self.wg & (self.wg - 1) == 0):
            raise ExprConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if self.items not in ITEMS:
            raise ExprConfigError(f"items: {self.items} is not one of {ITEMS}")
        if self.groups_per_cu not in GROUPS_PER_CU:
            raise ExprConfigError(f"groups_per_cu: {self.groups_per_cu} is not one of "
                                  f"{GROUPS_PER_CU}")
        if self.passes not in (1, 2):
            raise ExprConfigError(f"passes: {self.passes} is not 1 or 2")

    def short(self) -> str:
        return (f"{self.layout} wg={self.wg} items={self.items} g/cu={self.groups_per_cu} "
                f"passes={self.passes}")

    def defines(self) -> dict[str, int]:
        """The `-D` values of kernels/expr.cl: integers only, from checked fields only."""
        self.validate()  # frozen, but this is the door to the compiler
        return {"CLT_LAYOUT": LAYOUTS.index(self.layout), "CLT_WG": self.wg,
                "CLT_ITEMS": self.items, "CLT_PASSES": self.passes}
