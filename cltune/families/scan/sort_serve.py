"""Which shape serves the radix passes of a sort of n keys on a device, and where that answer
came from (every answer names its level):

  exact / driver-changed / same-device / shipped / vendor-default
           the key dtype's variant tuned (family `sort`, the database's chain): the stored best
           of the tuned size class nearest to n, within NEAR_STEPS powers of two
  builtin  nothing tuned near n (or the tuned shape failed here): the device's untuned shape,
           `sort.device_shape`

Stored configs go through `SortConfig.from_mapping` and `fit` (a value that is not allowed is
skipped, never compiled); the runtime never writes to the database. sort.py's `shape_for`
keeps each answer in `SERVED` per (context, device, key dtype, size class, index width), so a
warm call asks no database; `clear_caches()` forgets them.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from cltune.core.buckets import class_bucket
from cltune.core.config import ConfigError
from cltune.core.serving import NEAR_STEPS, CltuneWarning, SizeChoices
from cltune.families.scan.sort_config import SortConfig, SplitLocal, fit
from cltune.families.scan.sort_family import NAME, variant_for
from cltune.opencl.caches import ContextCache, register
from cltune.tuning_db.answer import answers

#: a tuned size class serves sizes up to this many powers of two away (as the expressions')
MAX_BUCKET_STEPS = NEAR_STEPS


@dataclass(frozen=True)
class SortChoice:
    """A level's config for a size class (`bucket`, log2; None: any size); config None: the
    device's untuned shape."""

    config: SortConfig | None
    bucket: int | None
    tuned_at: str = ""
    driver: str = ""
    gbps: float | None = None


@dataclass(frozen=True)
class Served:
    """What serves the sorts of one (device, key dtype, size class, index width): `shape`
    (sort.py's tuple) of the tuned `config`, or None for the device's untuned shape."""

    config: SortConfig | None
    shape: tuple[int, int, int, int] | None
    level: str
    why: str
    bucket: int | None  # the tuned size class that serves (log2); None: builtin


Choices = SizeChoices  # the chain's answer for one key dtype (core.serving)

#: sort.py's answers per (context; device, key dtype, size class, index width)
SERVED: ContextCache[Served] = ContextCache()
_resolved: dict[tuple[str, str, str | None], Choices] = {}
_lock = threading.Lock()


@register
def _forget() -> None:
    with _lock:
        _resolved.clear()


def resolve(info: Any, dtype: np.dtype, db: str | None = None) -> Choices:  # noqa: ANN401
    """The chain for one key dtype on one device (a bad database is a warning and the next
    level answers, never an error): the stored configs that validate, per size class."""
    (own,) = answers(info, db, [(NAME, variant_for(dtype))], stacklevel=5)
    got = []
    for r in own.rows:
        try:
            cfg = SortConfig.from_mapping(r.config)
            bucket = class_bucket(r.size_class)
        except (ConfigError, ValueError, TypeError):
            continue  # a stored config that does not validate never reaches the compiler
        got.append(SortChoice(cfg, bucket, r.updated_at, r.driver, r.gbps))
    untuned = "the device's untuned shape (sort.device_shape)"
    if got:
        return Choices(own.level, own.why, tuple(got),
                       Choices("builtin", untuned, (SortChoice(None, None),)))
    why = own.why if own.level == "builtin" else f"stored configs invalid ({own.why})"
    return Choices("builtin", f"{why}: {untuned}", (SortChoice(None, None),))


def served(info: Any, dtype: np.dtype, bucket: int, key_bytes: int,  # noqa: ANN401
           idx_bytes: int, split_local: SplitLocal, db: str | None = None) -> Served:
    """The shape for sorts of about 2^bucket keys of `dtype` on the device `info` describes,
    fitted to it (`split_local`: sort.split_local); the chain is asked once per device and
    dtype."""
    key = (info.fingerprint, np.dtype(dtype).str, db)
    with _lock:
        chain = _resolved.get(key)
    if chain is None:
        chain = resolve(info, np.dtype(dtype), db)
        with _lock:
            _resolved[key] = chain
    c, level, why = chain.serve(1 << bucket)
    if c.config is None:
        return Served(None, None, level, why, None)
    cfg = fit(c.config, info, key_bytes, idx_bytes, split_local)
    if cfg != c.config:
        why = f"{why}; {c.config.short()} fitted to this device"
    return Served(cfg, cfg.shape(), level, why, c.bucket)


def passed_over(s: Served, reason: str) -> Served:
    """The untuned shape in place of a tuned one that did not build or pass its vetting here
    (said by a warning)."""
    assert s.config is not None
    warnings.warn(f"cltune: the {s.level} sort shape {s.config.short()} does not run here "
                  f"({reason[:300]}); serving the device's untuned shape", CltuneWarning,
                  stacklevel=6)
    return Served(None, None, "builtin",
                  f"the {s.level} shape {s.config.short()} failed here: {reason[:200]}", None)
