"""What the tuner and `cltune verify` see of every family: its tuning target, made from its
descriptor (`core.family.Family.target`, so that they name no family's modules), and `judge`,
the one evaluate path of every target: check -> build -> validate -> time (nothing is timed
before it validated, house rule 5; the outcome says which step stopped it)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyopencl as cl

from cltune.core.buckets import class_bucket
from cltune.core.family import get
from cltune.core.outcome import Outcome, Timing
from cltune.device.info import DeviceInfo

#: `space=LATER`: the target is made without its space, which the caller sets afterwards (the
#: tuner takes it from the worker, where the 1-D family's probe builds run)
LATER = object()


def make_target(family: str, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: str,
                **options: Any) -> Any:
    """The family's target for one variant on one device (e.g. `ReduceTarget`)."""
    module, _, name = get(family).target.partition(":")
    return getattr(importlib.import_module(module), name)(ctx, dev, info, variant, **options)


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


#: starting points a new study evaluates first (Optuna `enqueue_trial`), at most this many
MAX_SEEDS = 3


def known_config(rows: Iterable[object], bucket: int) -> Mapping | None:
    """The config of the stored row for `bucket`, else of the nearest bucket (log scale)."""
    known = []
    for r in rows:
        try:
            known.append((class_bucket(getattr(r, "size_class", "")), r))
        except ValueError:
            continue
    if not known:
        return None
    return min(known, key=lambda kr: (abs(kr[0] - bucket), -kr[0]))[1].config
