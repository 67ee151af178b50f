"""What a served answer says about itself: `Explanation` (the config serving n elements and
where that answer came from) and `CltuneWarning` (the runtime fell back; results stay
correct); `SizeChoices`, an application's kernel's tuned size classes with the fallback for
sizes far from them (the expressions', the scan kernels'). Shared by every family's api."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cltune.core.buckets import nearest

#: a size class an application's kernel was tuned for serves sizes up to this many powers of
#: two away; beyond, its fallback does (on the H200 the var tuned at 2^24, two passes, took
#: 22.9 us per call at 2^12 and 23.1 at 2^20 where the derived single pass took 17.1 at both)
NEAR_STEPS = 2


@dataclass(frozen=True)
class SizeChoices:
    """A lookup level and why, the choices (each with its size class `bucket`, log2, or None
    for any size) and what serves sizes far from every tuned class."""

    level: str  # a lookup level, `derived` or `builtin`
    why: str
    choices: tuple[Any, ...]
    fallback: SizeChoices | None = None

    def serve(self, n: int) -> tuple[Any, str, str]:
        """The choice for n elements, its level and why: the nearest size class within
        NEAR_STEPS, else the fallback's (the first choice where none has a class)."""
        buckets = [c.bucket for c in self.choices if c.bucket is not None]
        b = nearest(n, buckets)
        far = b is None or abs(b - math.log2(max(1, n))) > NEAR_STEPS
        if far and self.fallback is not None:
            c, level, why = self.fallback.serve(n)
            tuned = ", ".join(f"2^{x}" for x in sorted(buckets))
            return c, level, (f"tuned for {tuned} ({self.level}), more than "
                              f"2^{NEAR_STEPS} from n: {why}")
        return next((c for c in self.choices if c.bucket == b), self.choices[0]), \
            self.level, self.why


class CltuneWarning(UserWarning):
    """The runtime fell back, and the application may want to know: no, a read-only or a
    corrupt database, a stored or builtin config that failed vetting on this driver (the next
    level of the fallback chain serves), a scan whose vetting answers differ in rounding.
    Results stay correct. `warnings.simplefilter("ignore", cltune.CltuneWarning)` silences
    them; `explain()` says what serves a call and why."""


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
