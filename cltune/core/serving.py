"""What a served answer says about itself: `Explanation` (the config serving n elements and
where that answer came from) and `CltuneWarning` (the runtime fell back; results stay
correct). Shared by every family's api."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class CltuneWarning(UserWarning):
    """The runtime fell back (no or unusable database); results stay correct."""


@dataclass(frozen=True)
class Explanation:
    """What serves inputs of n elements, and where that answer came from."""

    n: int
    config: Any  # the family's config value (`Config`, ...)
    level: str  # a lookup level (exact, shipped, ...), builtin, or safest (vetting)
    why: str
    bucket: int | None
    tuned_at: str
    driver: str
    gbps: float | None

    def __str__(self) -> str:
        b = f"bucket 2^{self.bucket}" if self.bucket is not None else "no bucket"
        perf = f", {self.gbps:.1f} GB/s when tuned" if self.gbps else ""
        when = f", tuned {self.tuned_at} on driver {self.driver}" if self.tuned_at else ""
        return f"n={self.n}: {self.config.short()} [{self.level}: {self.why}; {b}{perf}{when}]"
