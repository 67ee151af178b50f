"""The Bayesian optimisation over an enumerated space (cltune/user/pool_search.py) that runs
tune_kernel's model-based strategies: each config at most once, within the budget, the start
honoured, failures steered around, categories and huge spaces handled, and better than random
draws at the same budget on a landscape with one basin (deterministic: seeded, no device)."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import numpy as np
import pytest

from cltune.user import pool_search, strategies
from cltune.user.space import Space

WORST = strategies.WORST


def _grid(nx: int = 16, ny: int = 12) -> tuple[list[dict], dict]:
    values = {"bx": [2 ** k for k in range(nx)], "by": list(range(1, ny + 1))}
    return [dict(zip(values, p, strict=True)) for p in itertools.product(*values.values())], values


def _bowl(c: dict) -> float:
    """One basin at (2^11, 4), a few % of noise-like ripple, times > 0."""
    x, y = math.log2(c["bx"]), c["by"]
    return 1.0 + 0.02 * (x - 11) ** 2 + 0.05 * (y - 4) ** 2 + 0.01 * math.sin(3 * x + y)


def test_each_config_once_within_the_budget_and_the_start_first():
    configs, values = _grid()
    seen: list[tuple] = []

    def cost(c):
        seen.append((c["bx"], c["by"]))
        return _bowl(c)

    pool_search.search(configs, list(values), values, 25, seed=3, cost=cost, worst=WORST,
                       first=7)
    assert len(seen) == 25 == len(set(seen))
    assert seen[0] == (configs[7]["bx"], configs[7]["by"])
    seen.clear()
    pool_search.search(configs[:5], list(values), values, 50, seed=3, cost=cost, worst=WORST)
    assert sorted(seen) == sorted((c["bx"], c["by"]) for c in configs[:5])  # all, once each


def test_the_same_seed_the_same_search():
    configs, values = _grid()
    runs = []
    for _ in range(2):
        seen: list[tuple] = []
        pool_search.search(configs, list(values), values, 15, seed=11,
                           cost=lambda c, seen=seen: seen.append(tuple(c.values())) or _bowl(c),
                           worst=WORST)
        runs.append(seen)
    assert runs[0] == runs[1]


def test_it_beats_random_draws_on_one_basin():
    """A tenth of 192 configs: the median best of 15 seeds within 2 % of the optimum, and above
    the median of random draws of the same size."""
    configs, values = _grid()
    best = min(map(_bowl, configs))
    found, drawn = [], []
    for seed in range(15):
        got: list[float] = []
        pool_search.search(configs, list(values), values, 19, seed=seed,
                           cost=lambda c, got=got: got.append(_bowl(c)) or got[-1], worst=WORST)
        found.append(best / min(got))
        drawn.append(best / min(map(_bowl, random.Random(seed).sample(configs, 19))))
    assert statistics.median(found) >= 0.98
    assert statistics.median(found) > statistics.median(drawn)


def test_failed_configs_are_steered_around():
    """Half the space fails (bx > 2^7): the search still finds the best of the rest, and runs
    fewer failing configs than a random draw would."""
    configs, values = _grid()

    def landscape(c):
        return WORST if c["bx"] > 2 ** 7 else 1.0 + 0.05 * (math.log2(c["bx"]) - 6) ** 2 + \
            0.05 * (c["by"] - 9) ** 2

    best = min(landscape(c) for c in configs)
    fails, quality = [], []
    for seed in range(10):
        got: list[float] = []
        pool_search.search(configs, list(values), values, 24, seed=seed,
                           cost=lambda c, got=got: got.append(landscape(c)) or got[-1],
                           worst=WORST)
        fails.append(sum(g >= WORST for g in got))
        quality.append(best / min(got))
    assert statistics.median(quality) >= 0.97
    assert statistics.median(fails) < 12  # a random draw of 24 holds 12 failing ones


def test_categories_and_one_valued_parameters():
    values = {"kind": ["a", "b", "c"], "wg": [32, 64, 128, 256], "fixed": [1], "flag": [True,
                                                                                       False]}
    configs = [dict(zip(values, p, strict=True)) for p in itertools.product(*values.values())]
    x = pool_search.encode(configs, list(values), values)
    assert x.shape == (24, 3 + 1 + 2)  # kind one-hot, wg, (fixed dropped), flag one-hot
    d = np.sqrt(((x[0] - x[8]) ** 2).sum())  # the same but kind a -> b
    assert d == pytest.approx(1.0)

    def cost(c):
        return {"a": 3.0, "b": 1.0, "c": 2.0}[c["kind"]] * (1 + c["wg"] / 1000) * \
            (1.1 if c["flag"] else 1.0)

    best = min(map(cost, configs))
    got: list[float] = []
    pool_search.search(configs, list(values), values, 10, seed=0,
                       cost=lambda c: got.append(cost(c)) or got[-1], worst=WORST)
    assert min(got) <= best * 1.05


def test_a_space_larger_than_the_pool(monkeypatch):
    monkeypatch.setattr(pool_search, "MAX_POOL", 50)
    monkeypatch.setattr(pool_search, "NEAREST", 10)
    configs, values = _grid()
    best = min(map(_bowl, configs))
    got: list[float] = []
    pool_search.search(configs, list(values), values, 30, seed=1,
                       cost=lambda c: got.append(_bowl(c)) or got[-1], worst=WORST)
    assert len(got) == 30 and best / min(got) >= 0.95


def test_the_strategies_map_model_based_names_to_it_and_tpe_to_optuna():
    sp = Space({"bx": [2 ** k for k in range(10)], "by": [1, 2, 3, 4]})
    for name in ("bayes_opt", "genetic_algorithm", "tpe"):
        seen: list[str] = []
        strategies.run(name, {"max_fevals": 9, "x0": {"bx": 8, "by": 2}}, sp, 4,
                       lambda c, nxt, seen=seen: seen.append(sp.key(c)) or _bowl(c))
        assert len(seen) == 9 == len(set(seen)) and seen[0] == "8,2", (name, seen)
    seen = []
    strategies.run("bayes_opt", {"max_fevals": 5, "x0": {"nope": 1}}, sp, 4,
                   lambda c, nxt: seen.append(sp.key(c)) or 1.0)
    assert len(seen) == 5  # an x0 of other parameters is no start, not an error


def test_an_objective_better_higher_arrives_negated_and_is_searched_alike():
    """tune_kernel minimises -GFLOP/s where higher is better: negative costs are values, not
    failures."""
    configs, values = _grid()
    best = max(1.0 / _bowl(c) for c in configs)
    got: list[float] = []
    pool_search.search(configs, list(values), values, 19, seed=2,
                       cost=lambda c: got.append(1.0 / _bowl(c)) or -got[-1], worst=WORST)
    assert max(got) / best >= 0.98
    assert pool_search.modelled(np.array([-4.0, np.nan, -1.0]))[1] != pool_search.modelled(
        np.array([-4.0, np.nan, -1.0]))[1]  # nan stays nan
    assert list(pool_search.modelled(np.array([1.0, -1.0]))) == [1.0, -1.0]
