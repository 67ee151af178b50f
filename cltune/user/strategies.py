"""Kernel Tuner's strategies by name, driven over cltune's search space.

`brute_force` (the default) evaluates every config in Kernel Tuner's order; `random_sample` a
random `fraction` (0.1) or `max_fevals` of them without repeats; every model-based name of
Kernel Tuner (`bayes_opt`, `genetic_algorithm`, `diff_evo`, `pso`, `greedy_ils`, `mls`,
`simulated_annealing`, `minimize`, ...) runs a Bayesian optimisation over the enumerated space
(`cltune.user.pool_search`: a space-filling start, then a Gaussian process's expected
improvement over every config not run yet), seeded by `seed`, for `max_fevals` evaluations
(default: the smaller of the space and 100); `tpe` runs Optuna's TPE sampler (multivariate)
over the parameters' positions in their sorted values where they are numbers and as categories
otherwise (a point the restrictions remove is told back as the worst cost without an
evaluation; a point seen before is told its known cost without a second one). Every strategy
stops at `time_limit` seconds. Every evaluation counts against `max_fevals`, a result from a
cache file too (as in Kernel Tuner).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from cltune.user import pool_search
from cltune.user.space import Space

#: a cost worse than any measured one (a config that failed, or one the space removes)
WORST = 1e300
#: how many of the next configs a strategy with a known order shows its cost function (the
#: session judges that many ahead at most: `lanes.MAX_LANES`)
LOOKAHEAD = 16

_COMMON = ("max_fevals", "time_limit")
#: each of Kernel Tuner's strategy names -> the options it accepts there (taken, and ignored
#: where cltune's sampler has no such knob)
KT_OPTIONS: dict[str, tuple[str, ...]] = {
    "brute_force": (),
    "random_sample": ("fraction",),
    "minimize": ("method", "maxiter", "x0"),
    "basinhopping": ("method", "T", "maxiter", "x0"),
    "dual_annealing": ("method", "x0"),
    "diff_evo": ("popsize", "popsize_times_dimensions", "maxiter", "F", "CR", "method",
                 "constraint_aware"),
    "genetic_algorithm": ("popsize", "maxiter", "method", "mutation_chance",
                          "constraint_aware"),
    "greedy_mls": ("neighbor", "restart", "order", "randomize", "x0"),
    "ordered_greedy_mls": ("neighbor", "restart", "order", "randomize", "x0"),
    "mls": ("neighbor", "restart", "order", "randomize", "x0"),
    "greedy_ils": ("neighbor", "restart", "no_improvement", "random_walk", "x0"),
    "pso": ("popsize", "maxiter", "w", "c1", "c2", "constraint_aware"),
    "simulated_annealing": ("T", "T_min", "alpha", "maxiter", "constraint_aware", "x0"),
    "firefly_algorithm": ("popsize", "maxiter", "B0", "gamma", "alpha", "constraint_aware"),
    "bayes_opt": ("covariancekernel", "covariancelengthscale", "method", "samplingmethod",
                  "popsize", "maxiter"),
    "skopt": ("learner", "acq_func", "x0"),
    "tpe": ("x0",),
}
NAMES = tuple(KT_OPTIONS)


def check(strategy: str | None, options: Mapping[str, object] | None) -> tuple[str, dict]:
    """(name, options) validated; ValueError naming what is not known."""
    name = strategy or "brute_force"
    if not isinstance(name, str) or name not in KT_OPTIONS:
        raise ValueError(f"Unkown strategy {name!r:.40}, must be one of: {', '.join(NAMES)}")
    opts = dict(options or {})
    allowed = (*_COMMON, *KT_OPTIONS[name])
    for k in opts:
        if k not in allowed:
            raise ValueError(f"Unrecognized option {k!r:.40} in strategy_options (allowed: "
                             f"{list(allowed)})")
    mf = opts.get("max_fevals")
    if mf is not None and (isinstance(mf, bool) or not isinstance(mf, int) or mf < 1):
        raise ValueError("strategy_options max_fevals must be a positive int")
    tl = opts.get("time_limit")
    if tl is not None and (isinstance(tl, bool) or not isinstance(tl, (int, float)) or tl <= 0):
        raise ValueError("strategy_options time_limit must be a positive number of seconds")
    fr = opts.get("fraction")
    if fr is not None and not (isinstance(fr, (int, float)) and 0 < fr <= 1):
        raise ValueError("strategy_options fraction must be in (0, 1]")
    return name, opts


class Budget:
    """Evaluations left and the time limit; `spent()` says when to stop."""

    def __init__(self, fevals: int, time_limit: float | None) -> None:
        self.left = fevals
        self.end = time.monotonic() + time_limit if time_limit else None

    def spent(self) -> bool:
        return self.left <= 0 or (self.end is not None and time.monotonic() >= self.end)

    def use(self) -> None:
        self.left -= 1


def planned(name: str, opts: Mapping[str, Any], n: int) -> int:
    """How many configs of a space of `n` the strategy judges in an order known before it
    starts (brute force, random sample: their budget); 0 for the searches that pick each
    config from the costs before it."""
    if name == "brute_force":
        return min(n, int(opts.get("max_fevals") or n))
    if name == "random_sample":
        k = opts.get("max_fevals") or max(1, round(float(opts.get("fraction", 0.1)) * n))
        return min(n, int(k))
    return 0


def run(name: str, opts: Mapping[str, Any], space: Space, seed: int | None,
        cost: Callable[..., float]) -> None:
    """Drive `cost(config, upcoming)` (the objective to minimise; WORST when the config
    failed; `upcoming` the next LOOKAHEAD configs in the order they will be evaluated where
    that order is known, else empty) over the space with the named strategy until its budget
    is spent."""
    n = len(space)
    if n == 0:
        return
    if name == "brute_force":
        budget = Budget(planned(name, opts, n), opts.get("time_limit"))
        order = space.configs
    elif name == "random_sample":
        budget = Budget(planned(name, opts, n), opts.get("time_limit"))
        order = random.Random(seed).sample(space.configs, budget.left)
    else:
        budget = Budget(min(n, int(opts.get("max_fevals") or min(n, 100))),
                        opts.get("time_limit"))
        if name == "tpe":
            _model_based(opts, space, seed, cost, budget)
        else:
            _pool(opts, space, seed, cost, budget)
        return
    todo = order[:budget.left]
    for i, cfg in enumerate(todo):
        if budget.spent():
            return
        budget.use()
        cost(cfg, todo[i + 1:i + 1 + LOOKAHEAD])


def _pool(opts: Mapping[str, Any], space: Space, seed: int | None,
          cost: Callable[..., float], budget: Budget) -> None:
    """pool_search's Bayesian optimisation over the space's configs (`x0` first)."""
    x0 = opts.get("x0")
    try:
        first = space.index(x0) if isinstance(x0, Mapping) else None
    except (KeyError, TypeError):  # not a config of this space: no start given
        first = None

    def one(cfg: Mapping[str, object]) -> float:
        budget.use()
        return cost(cfg, ())

    pool_search.search(space.configs, space.names, space.tune_params, budget.left, seed, one,
                       WORST, first, budget.spent)


def _model_based(opts: Mapping[str, Any], space: Space, seed: int | None,
                 cost: Callable[..., float], budget: Budget) -> None:
    import optuna  # lazy: only model-based strategies need it (import cost)

    from cltune.tuning.quiet import quiet_studies  # lazy: with optuna

    values = space.tune_params
    numeric = {k: all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
               for k, vals in values.items()}
    levels = {k: sorted(set(vals)) if numeric[k] else list(dict.fromkeys(map(_hashable, vals)))
              for k, vals in values.items()}
    dists = {k: optuna.distributions.IntDistribution(0, len(levels[k]) - 1) if numeric[k]
             else optuna.distributions.CategoricalDistribution(list(range(len(levels[k]))))
             for k in values}
    by_key = {space.key(c): c for c in space.configs}
    known: dict[str, float] = {}

    def params_of(cfg: Mapping[str, object]) -> dict[str, int]:
        return {k: levels[k].index(cfg[k] if numeric[k] else _hashable(cfg[k])) for k in values}

    # random points first, then the model: at most 10 of them, half of a small budget (on
    # Kernel Tuner's examples' exhaustive tables, simulated over 60 seeds, a third or fewer
    # made the model follow one early point and lose to random sampling at budgets of 6-8)
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True,
                                         n_startup_trials=min(10, max(3, budget.left // 2)))
    with quiet_studies():
        study = optuna.create_study(sampler=sampler, direction="minimize")
        x0 = opts.get("x0")
        if isinstance(x0, Mapping) and space.index(x0) is not None:
            study.enqueue_trial(params_of(x0))
        asks = 0
        limit = 50 * budget.left + 10 * len(space)
        while not budget.spent() and len(known) < len(space) and asks < limit:
            asks += 1
            trial = study.ask(dists)
            cfg = {k: levels[k][trial.params[k]] for k in values}
            key = space.key(cfg)
            if key not in by_key:  # removed by a restriction or the work-group limit
                study.tell(trial, WORST)
                continue
            if key not in known:
                budget.use()
                known[key] = cost(by_key[key], ())
            study.tell(trial, known[key])
        rest = [c for c in space.configs if space.key(c) not in known]
        random.Random(seed).shuffle(rest)
        for cfg in rest:  # the sampler kept proposing known points: spend the rest at random
            if budget.spent():
                break
            budget.use()
            known[space.key(cfg)] = cost(cfg, ())


def _hashable(v: object) -> object:
    return v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)
