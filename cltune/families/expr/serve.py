"""Which config serves an expression reduction on a device, and where that answer came from.

The chain (every answer names its level):
  exact / driver-changed / same-device / shipped / vendor-default
           this expression's fingerprint tuned (tuning_db/lookup.py's chain, family `expr`)
  derived  not tuned: derived from the device's tuned plain reduction (`reduce`,
           `sum/float32`, any level of the same chain)
  builtin  nothing known: a config from the device's limits

Stored configs go through `ExprConfig.from_mapping` (a value that is not allowed is skipped,
never compiled); the runtime never writes to the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cltune.core import family
from cltune.core.config import ConfigError
from cltune.core.serving import NEAR_STEPS, SizeChoices
from cltune.device.info import DeviceInfo
from cltune.families.expr import family as expr_family
from cltune.families.expr.config import ExprConfig, ExprConfigError
from cltune.families.expr.defaults import builtin_by_size, derive, fit

#: bytes of __local memory reserved besides the tile (the single-pass flag)
from cltune.tuning_db.answer import answers


@dataclass(frozen=True)
class ExprChoice:
    config: ExprConfig
    bucket: int | None  # the size class 2^bucket it was tuned for; None: any n
    tuned_at: str = ""
    driver: str = ""
    gbps: float | None = None


#: a size class this expression was tuned for serves sizes up to this many powers of two away
MAX_BUCKET_STEPS = NEAR_STEPS
#: the chain's answer for one expression (core.serving)
Choices = SizeChoices


def _rows_to_choices(rows: Any, make: Any) -> list[ExprChoice]:
    out = []
    for r in rows:
        try:
            cfg = make(r.config)
            bucket = expr_family.class_bucket(r.size_class)
        except (ExprConfigError, ConfigError, ValueError, TypeError):
            continue  # a stored config that does not validate never reaches the compiler
        out.append(ExprChoice(cfg, bucket, r.updated_at, r.driver, r.gbps))
    return out


def _builtin_choices(info: DeviceInfo, itemsize: int) -> Choices:
    """The builtin level: one config, or (var-sized accumulators on GPUs) one per size class,
    which `explain` then names as the builtin's classes, not tuned ones."""
    by_size = builtin_by_size(info, itemsize)
    why = "not tuned, and no tuned sum/float32 for this device: config from its limits"
    if len(by_size) > 1:
        why += " (by size: " + ", ".join(f"2^{b}" for _, b in by_size) + " untuned classes)"
    return Choices("builtin", why, tuple(ExprChoice(cfg, b) for cfg, b in by_size))


def resolve(info: DeviceInfo, fingerprint: str, itemsize: int, db: str | None) -> Choices:
    """The chain for one expression on one device (never raises for a bad database: it is
    reported as a warning and the next level answers)."""
    own, plain = answers(info, db, [(expr_family.NAME, fingerprint), ("reduce", "sum/float32")],
                         stacklevel=4)
    got = _rows_to_choices(own.rows, lambda m: fit(ExprConfig.from_mapping(m), info, itemsize))
    # the 1-D family's config type through the registry (this family imports no other)
    parse_sum = family.get("reduce").parse_config
    derived = _rows_to_choices(plain.rows, lambda m: derive(parse_sum(m), info, itemsize))
    fallback = (Choices("derived", f"not tuned: shaped like the tuned sum/float32 "
                        f"({plain.level}: {plain.why})", tuple(derived)) if derived else
                _builtin_choices(info, itemsize))
    if got:
        return Choices(own.level, own.why, tuple(got), fallback)
    return fallback
