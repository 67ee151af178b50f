"""Results in Kernel Tuner's shape: one dict per config that ran right (its params, `time` in
ms — the mean of `times` —, `times`, the step timings in ms, the metrics, `timestamp`), the
objective and its direction, the best config, and the lines Kernel Tuner prints."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cltune.user.grid import evaluate

#: Kernel Tuner's objectives whose direction it knows
HIGHER_IS_BETTER = {"time": False, "energy": False, "fitness": True, "cost": False,
                    "loss": False, "GFLOP/s": True, "TFLOP/s": True, "GB/s": True,
                    "TB/s": True, "GFLOPS/W": True, "TFLOPS/W": True, "GFLOP/J": True,
                    "TFLOP/J": True}
TIMING_KEYS = ("compile_time", "verification_time", "benchmark_time")


def objective_of(objective: Any, higher: Any, objectives: Any,  # noqa: ANN401
                 metrics: Mapping[str, Any] | None) -> tuple[str, bool]:
    """(objective, higher is better) from Kernel Tuner's options."""
    if objectives:
        if not isinstance(objectives, Mapping) or len(objectives) != 1:
            raise NotImplementedError("cltune tunes one objective at a time (objectives= with "
                                      "one entry, or objective=)")
        objective, higher = next(iter(objectives.items()))
    objective = objective or "time"
    if not isinstance(objective, str):
        raise ValueError("objective must be the name of a result key: 'time' or a metric")
    if objective != "time" and objective not in (metrics or {}):
        raise ValueError(f"objective {objective!r:.40} is neither 'time' nor a metric")
    if higher is None:
        if objective not in HIGHER_IS_BETTER:
            raise ValueError(f"Please specify objective_higher_is_better for objective "
                             f"{objective}")
        higher = HIGHER_IS_BETTER[objective]
    return objective, bool(higher)


def check_metrics(metrics: Any) -> dict:  # noqa: ANN401
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise ValueError("metrics should be a dictionary to preserve order and support "
                         "composability")
    for k, v in metrics.items():
        if not isinstance(v, str) and not callable(v):
            raise ValueError("metric dicts values should be strings or callable")
        if not isinstance(k, str):
            raise ValueError("metric names must be strings")
    return dict(metrics)


def add_metrics(result: dict, metrics: Mapping[str, Any]) -> None:
    """Each metric computed from the result so far (later metrics see earlier ones)."""
    for k, v in metrics.items():
        result[k] = evaluate(v, result, f"metric {k}") if isinstance(v, str) else v(result)


def now() -> str:
    return str(datetime.datetime.now(datetime.timezone.utc))


def make_result(params: Mapping[str, object], out: Mapping[str, Any],
                metrics: Mapping[str, Any]) -> dict:
    times = [float(t) for t in out["times"]]
    r: dict[str, Any] = dict(params)
    r["time"] = float(np.average(times))
    r["times"] = times
    for k in TIMING_KEYS:
        r[k] = float(out.get(k) or 0.0)
    r.update(out.get("observed") or {})  # the observers' results (the metrics may read them)
    add_metrics(r, metrics)
    r["timestamp"] = now()
    return r


def from_cache(params: Mapping[str, object], entry: Mapping[str, Any],
               metrics: Mapping[str, Any]) -> dict:
    """A result served from a cache file: as stored, no step timings, metrics recomputed."""
    r: dict[str, Any] = dict(params)
    for k, v in entry.items():
        if k not in params and k not in ("strategy_time", "framework_time", "timestamp"):
            r[k] = v
    for k in TIMING_KEYS:
        r[k] = 0
    add_metrics(r, metrics)
    r["timestamp"] = now()
    return r


def score(r: Mapping[str, Any], objective: str, higher: bool) -> float:
    """What the search minimises: the objective, negated when higher is better."""
    v = r.get(objective)
    if not isinstance(v, (int, float, np.number)) or isinstance(v, bool) or not np.isfinite(v):
        return float("inf")
    return -float(v) if higher else float(v)


def best(results: Sequence[dict], objective: str, higher: bool) -> dict | None:
    """The result with the best objective (itself, as Kernel Tuner's env holds it), or None."""
    ok = [r for r in results if score(r, objective, higher) != float("inf")]
    return min(ok, key=lambda r: score(r, objective, higher)) if ok else None


def config_string(r: Mapping[str, Any], keys: Sequence[str]) -> str:
    parts = []
    for k in keys:
        if k not in r:
            continue
        v = r[k]
        if isinstance(v, (float, np.floating)):
            v = f"{round(float(v), 3):.3f}" + ("ms" if k == "time" else "")
        parts.append(f"{k}={v}")
    return ", ".join(parts)
