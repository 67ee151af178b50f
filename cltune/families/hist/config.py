"""`HistConfig`: one point of the histogram kernels' design space, validated on creation (the
only door from stored or sampled values to kernels/hist.cl's build options).

    >>> HistConfig(strategy="local", wg=256, reps=4, groups_per_cu=8).short()
    'local wg256 r4 g8 i4'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

#: kernels/hist.cl's CLT_H_STRATEGY values
STRATEGIES = {"global": 0, "local": 1, "private": 2}
REPS = (1, 2, 4, 8, 16)
ITEMS = (1, 2, 4, 8)
MAX_WG = 1024
MAX_GROUPS_PER_CU = 1024


class HistConfigError(ConfigError):
    """A histogram config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class HistConfig(MappedConfig):
    """strategy: `global` (every increment an atomic on the result), `local` (a group's `reps`
    copies of the histogram in __local memory, merged at the end) or `private` (groups of one
    work-item, plain increments: CPUs); wg: work-group size; reps: copies of a group's
    histogram (local: work-item l increments copy l % reps; private: element i of each run of
    reps increments copy i); groups_per_cu: work-groups per
    compute unit, each taking a contiguous block of the input; items: loads a work-item has in
    flight a step (global and local; private runs reps a step)."""

    error: ClassVar[type[ValueError]] = HistConfigError

    strategy: str = "local"
    wg: int = 256
    reps: int = 1
    groups_per_cu: int = 8
    items: int = 4

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise HistConfigError(f"strategy: {self.strategy!r:.30} is not one of "
                                  f"{', '.join(STRATEGIES)}")
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise HistConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if self.reps not in REPS:
            raise HistConfigError(f"reps: {self.reps} is not one of {REPS}")
        if self.strategy == "global" and self.reps != 1:
            raise HistConfigError("reps: copies are for the local and private strategies")
        if self.strategy == "private" and self.wg != 1:
            raise HistConfigError("wg: the private strategy runs groups of one work-item")
        if self.strategy == "local" and self.reps > self.wg:
            raise HistConfigError(f"reps: {self.reps} copies > wg={self.wg} work-items")
        if self.items not in ITEMS:
            raise HistConfigError(f"items: {self.items} is not one of {ITEMS}")
        if not (is_pow2(self.groups_per_cu) and self.groups_per_cu <= MAX_GROUPS_PER_CU):
            raise HistConfigError(f"groups_per_cu: {self.groups_per_cu} is not a power of two "
                                  f"<= {MAX_GROUPS_PER_CU}")

    def local_bytes(self, nbins: int, acc_bytes: int) -> int:
        """__local memory a group holds for `nbins` bins (none for `global`)."""
        return 0 if self.strategy == "global" else self.reps * nbins * acc_bytes

    def short(self) -> str:
        return f"{self.strategy} wg{self.wg} r{self.reps} g{self.groups_per_cu} i{self.items}"
