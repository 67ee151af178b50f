"""The 1-D reduction of one variant (op/dtype) on one device, as the tuner and `cltune verify` see
any kernel family: a space to sample, configs from trials and from stored mappings, launchers,
benchmark inputs per size class, one evaluate call, starting points, result keys.

The tuner (`tuning/tuner.py`) and the re-verification (`tuning/reverify.py`) use only these
methods; another family provides an object with the same ones (`family.Family.target` names its
factory)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyopencl as cl

from cltune.core import strategies
from cltune.core.inputs import make_input
from cltune.core.ops import OpSpec
from cltune.core.outcome import Outcome
from cltune.families.base import Target, known_config
from cltune.families.reduce import family as reduce_family
from cltune.families.reduce.config import Config
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.kernel import source_hash
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import error_bound, validate
from cltune.families.reduce.seeds import params_of, seed_params
from cltune.families.reduce.space import Space, make_space
from cltune.opencl.build import BuildError
from cltune.opencl.measure import Bench

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna


def suggest(trial: optuna.Trial, space: Space) -> Config:
    """Sample one point; the parameter names are the Config's own (tile as a factor of wg)."""
    v = space.values
    strategy = trial.suggest_categorical("strategy", v["strategy"])
    wg = trial.suggest_categorical("wg", v["wg"])
    tile = 0
    if strategies.get(strategy).uses_tile:
        tile = wg * trial.suggest_categorical("tile_factor", v["tile_factor"])
    return Config(
        strategy=strategy,
        wg=wg,
        tile=tile,
        items=trial.suggest_categorical("items", v["items"]),
        vec=trial.suggest_categorical("vec", v["vec"]),
        groups_per_cu=trial.suggest_categorical("groups_per_cu", v["groups_per_cu"]),
        passes=trial.suggest_categorical("passes", v["passes"]),
        acc=trial.suggest_categorical("acc", v["acc"]),
    )


@dataclass
class ReduceTarget(Target):
    """One variant of the 1-D reduction on one device. `extended_acc` also offers the kahan
    and wide accumulators; `restrict` limits the space (sweeps, tests)."""

    family: ClassVar[str] = reduce_family.NAME
    config_type: ClassVar[type] = Config

    def setup(self) -> None:
        self.spec: OpSpec = reduce_family.spec_of(self.variant)
        self.source_hash = source_hash()

    def make_space(self) -> Any:
        return make_space(self.ctx, self.dev, self.info, self.spec,
                          extended_acc=self.extended_acc)

    # ---- configs --------------------------------------------------------------------------
    def suggest(self, trial: optuna.Trial) -> Config:
        return suggest(trial, self.space)


    def builtin(self) -> Config | None:
        """The config `get_reducer` runs on a device never tuned (defaults.builtin_config), if
        it is a point of this (possibly restricted) space: what tuning must never end slower
        than."""
        cfg = builtin_config(self.info, self.spec)
        return cfg if params_of(cfg, self.space) is not None else None

    def seeds(self, known_rows: Iterable[object], bucket: int,
              previous: Config | None) -> list[dict]:
        """Starting points (cltune.families.reduce.seeds): what the fallback chain knows for this
        size class, the previous size class's winner, the builtin config served untuned at
        this class's size (CPUs: one launch for small ones) and the general builtin config."""
        return seed_params(self.space, [known_config(known_rows, bucket), previous,
                                        builtin_config(self.info, self.spec, 1 << bucket),
                                        builtin_config(self.info, self.spec)])

    # ---- running --------------------------------------------------------------------------
    def make_launcher(self, cfg: Config) -> Launcher:
        return Launcher(self.ctx, self.dev, self.info, self.spec, cfg)

    def bench(self, bucket: int) -> Bench:
        """The tuning input of a size class, on the device."""
        return Bench(self.ctx, self.queue, make_input(self.spec, 1 << bucket),
                     self.spec.result_dtype)

    def evaluate(self, cfg: Config, bench: Bench, *, check: bool = True,
                 max_rel_error: float | None = None) -> Outcome:
        """check (against this space, unless `check` is off: a stored config is judged as it
        is) -> build -> validate -> time."""
        return evaluate(self.launcher(cfg), self.queue, bench,
                        space=self.space if check else None, max_rel_error=max_rel_error)


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
