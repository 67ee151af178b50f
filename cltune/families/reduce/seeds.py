"""Starting points a new study evaluates first (Optuna `enqueue_trial`), before its sampler.

A tuning run should never end worse than what cltune already knew for the device, and should
not spend its first trials rediscovering the neighbourhood of the previous bucket's winner. A
fresh study therefore starts from, in order:

1. what the fallback chain answers for this device and bucket (its own stored best, a best
   from an older driver, the results shipped for its model, the vendor default);
2. the winner of the bucket tuned just before in the same run (sizes are tuned in increasing
   order, and neighbours share their best shape more often than not);
3. the builtin config `get_reducer` would use with no tuning at all.

Every seed is a `Config` that passed validation, is feasible in this run's space (the run may
be restricted) and is expressed in the sampler's own parameter names; duplicates are dropped.
Seeds count against `--trials` and are validated like any other trial.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cltune.families.base import MAX_SEEDS
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.space import Space

#: at most this many seeds per study, so the sampler keeps most of the budget


def params_of(cfg: Config, space: Space) -> dict[str, object] | None:
    """The sampler parameters that reproduce cfg in `space`, or None if it is not a point of
    the space (infeasible, or a value the space does not offer)."""
    if space.check(cfg):
        return None
    p: dict[str, object] = {"strategy": cfg.strategy, "wg": cfg.wg, "items": cfg.items,
                            "vec": cfg.vec, "groups_per_cu": cfg.groups_per_cu,
                            "passes": cfg.passes, "acc": cfg.acc}
    if cfg.uses_tile:
        if cfg.tile % cfg.wg:
            return None
        p["tile_factor"] = cfg.tile // cfg.wg
    for k, v in p.items():
        if v not in space.values[k]:
            return None
    return p


def seed_params(space: Space, candidates: Iterable[Config | Mapping | None]) -> list[dict]:
    """Distinct sampler parameters of the feasible candidates, in order, at most MAX_SEEDS.
    Mappings (stored configs) go through `Config.from_mapping`, so a stored value that is not
    valid any more is skipped, never passed on."""
    out: list[dict] = []
    for c in candidates:
        if c is None:
            continue
        try:
            cfg = c if isinstance(c, Config) else Config.from_mapping(c)
        except (ConfigError, TypeError, ValueError):
            continue
        p = params_of(cfg, space)
        if p is not None and p not in out:
            out.append(p)
        if len(out) == MAX_SEEDS:
            break
    return out
