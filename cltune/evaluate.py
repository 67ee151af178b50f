"""One evaluate path for every config cltune judges: check -> build -> validate -> time.

The tuner's trials and `cltune verify`'s re-validation both go through `evaluate`; nothing is
timed before it validated (house rule 5), and the outcome says which step stopped it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

from .config import Config
from .launch import Launcher
from .measure import Bench
from .program import BuildError
from .space import Space
from .verify import error_bound, validate


@dataclass(frozen=True)
class Outcome:
    """What evaluating one config gave. `step` is where it stopped: `check` (infeasible here,
    nothing compiled), `build`, `validate`, or `timed` (ok)."""

    config: Config
    step: str
    reason: str = ""
    median_s: float | None = None
    gbps: float | None = None
    max_rel_error: float | None = None
    n: int = 0

    @property
    def ok(self) -> bool:
        return self.step == "timed"

    @property
    def compiled(self) -> bool:
        """Whether the device saw it (an infeasible point is never recorded)."""
        return self.step != "check"


def evaluate(launcher: Launcher, queue: cl.CommandQueue, bench: Bench, *,
             space: Space | None = None, max_rel_error: float | None = None,
             budget_s: float = 0.3) -> Outcome:
    """Judge `launcher`'s config on `bench`'s input: feasible in `space` (when given), builds,
    matches the host reference on the validation inputs (and, with `max_rel_error`, has an
    error bound and a measured error within that budget, relative to sum|x|), then timed."""
    cfg, spec, n = launcher.cfg, launcher.spec, bench.n
    if space is not None:
        why = space.check(cfg)
        if why:
            return Outcome(cfg, "check", why, n=n)
    try:
        launcher.built(False)
    except BuildError as e:
        return Outcome(cfg, "build", str(e), n=n)
    try:
        chk = validate(launcher, queue, n)
    except BuildError as e:  # a 64-bit-index build for the n + 3 input
        return Outcome(cfg, "build", str(e), n=n)
    if not chk.ok:
        return Outcome(cfg, "validate", chk.reason, n=n)
    if max_rel_error is not None and spec.is_float:
        # the bound must meet the budget for every input, not just this one
        bound = error_bound(launcher, n, 1.0)
        if bound > max_rel_error:
            return Outcome(cfg, "validate",
                           f"error bound {bound:.3g} > --max-rel-error {max_rel_error:.3g}", n=n)
        if chk.max_rel_error > max_rel_error:
            return Outcome(cfg, "validate", f"error {chk.max_rel_error:.3g} > --max-rel-error "
                           f"{max_rel_error:.3g}", n=n)
    t = bench.time(launcher, budget_s=budget_s)
    return Outcome(cfg, "timed", "", t.median_s, t.gbps(bench.nbytes), chk.max_rel_error, n)
