"""What evaluating one config gave (`Outcome`) and its timing (`Timing`): plain values, no
OpenCL, so that the callers of the evaluation worker (the runtime's vetting among them) need
none of the evaluate path's modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    median_s: float
    repeats: int
    samples: tuple[float, ...]

    def gbps(self, nbytes: int) -> float:
        return nbytes / self.median_s / 1e9


@dataclass(frozen=True)
class Outcome:
    """What evaluating one config gave. `step` is where it stopped: `check` (infeasible here,
    nothing compiled), `build`, `validate`, `timed` (ok), or, from the evaluation worker,
    `crashed` / `hung` / `error` (the driver died, missed its deadline, or raised)."""

    config: Any  # the family's config
    step: str
    n: int  # elements of the tuning input
    nbytes: int  # bytes it reads
    reason: str = ""
    timing: Timing | None = None
    max_rel_error: float | None = None  # |err| / sum|x| seen in validation (floats)

    @property
    def ok(self) -> bool:
        return self.step == "timed"

    @property
    def median_s(self) -> float | None:
        return self.timing.median_s if self.timing else None

    @property
    def gbps(self) -> float | None:
        return self.timing.gbps(self.nbytes) if self.timing else None

    @property
    def compiled(self) -> bool:
        """Whether the device saw it (an infeasible point is never recorded)."""
        return self.step != "check"
