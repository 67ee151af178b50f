"""One evaluate path for every config cltune judges: check -> build -> validate -> time.

The tuner's trials and `cltune verify`'s re-validation both go through `evaluate`; nothing is
timed before it validated (house rule 5), and the outcome says which step stopped it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyopencl as cl

from cltune.core.outcome import Outcome, Timing
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import error_bound, validate
from cltune.families.reduce.space import Space
from cltune.opencl.build import BuildError
from cltune.opencl.measure import Bench


def judge(cfg: Any, n: int, nbytes: int, *, infeasible: str, build: Callable[[], object],
          build_errors: tuple[type[Exception], ...],
          validate: Callable[[], tuple[str, float | None]],
          time: Callable[[], Timing]) -> Outcome:
    """The steps of `evaluate` for a family that brings its own: `infeasible` ('' when cfg
    is a point of the space), `build()` (raising one of `build_errors`), `validate()` -> (why
    not, measured error), and `time()`, called only after the rest passed."""
    if infeasible:
        return Outcome(cfg, "check", n, nbytes, infeasible)
    try:
        build()
    except build_errors as e:
        return Outcome(cfg, "build", n, nbytes, str(e))
    why, err = validate()
    if why:
        return Outcome(cfg, "validate", n, nbytes, why)
    return Outcome(cfg, "timed", n, nbytes, "", time(), err)


def evaluate(launcher: Launcher, queue: cl.CommandQueue, bench: Bench, *,
             space: Space | None = None, max_rel_error: float | None = None,
             budget_s: float = 0.3) -> Outcome:
    """Judge `launcher`'s config on `bench`'s input: feasible in `space` (when given), builds,
    matches the host reference on the validation inputs (and, with `max_rel_error`, has an
    error bound and a measured error within that budget, relative to sum|x|), then timed."""
    cfg, spec, n = launcher.cfg, launcher.spec, bench.n

    def stop(step: str, reason: str) -> Outcome:
        return Outcome(cfg, step, n, bench.nbytes, reason)

    if space is not None:
        why = space.check(cfg)
        if why:
            return stop("check", why)
    try:
        launcher.built(False)
        chk = validate(launcher, queue, n)  # may build 64-bit indices for the n + 3 input
    except BuildError as e:
        return stop("build", str(e))
    if not chk.ok:
        return stop("validate", chk.reason)
    if max_rel_error is not None and spec.is_float:
        # the bound must meet the budget for every input, not just this one
        bound = error_bound(launcher, n, 1.0)
        if bound > max_rel_error:
            return stop("validate", f"error bound {bound:.3g} > --max-rel-error "
                        f"{max_rel_error:.3g}")
        if chk.max_rel_error > max_rel_error:
            return stop("validate", f"error {chk.max_rel_error:.3g} > --max-rel-error "
                        f"{max_rel_error:.3g}")
    return Outcome(cfg, "timed", n, bench.nbytes, "", bench.time(launcher, budget_s=budget_s),
                   chk.max_rel_error)
