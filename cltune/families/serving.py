"""What the serving engines of the shape-keyed families (hist, topk) share: the tuned classes
of a variant, the nearest one whose config makes a call, the vetting of what was not tuned on
this driver (house rule 17) and the build that falls back to the safest config. Never writes
the database, never loads the tuner."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cltune.core import shapes
from cltune.core.serving import CltuneWarning
from cltune.families.base import tuned_shape_classes
from cltune.isolation.vetting import first_usable
from cltune.opencl.build import BuildError

#: entries a serving cache keeps before it is emptied
MAX_KEPT = 256

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Tuned:
    """A tuned class of a variant: its (log2, log2) key, config and measured GB/s."""

    key: tuple[int, int]
    config: Any
    gbps: float | None


def tuned_classes(info: Any, db: str | None, family: str, variant: str,
                  parse: Callable[[Mapping[str, object]], Any],
                  ) -> tuple[str, str, list[Tuned]]:
    """(level, why, tuned classes) of a variant along the fallback chain."""
    level, why, rows = tuned_shape_classes(info, db, family, variant, parse, stacklevel=7)
    return level, why, [Tuned(k, c, g) for k, c, g in rows]


def nearest(tuned: list[Tuned], key: tuple[int, int],
            makes: Callable[[Any], bool]) -> Tuned | None:
    """The tuned class nearest to `key` (within shapes.MAX_CLASS_STEPS) whose config `makes`
    the call, or None."""
    fit = [t for t in tuned if makes(t.config)]
    near = shapes.nearest(key, [t.key for t in fit])
    return next((t for t in fit if t.key == near), None)


def vetted(info: Any, family: str, variant: str, chosen: tuple[Any, str, str, Tuned | None],
           fallbacks: list[tuple[Any, str]], vet_key: Any, *, source_hash: str,
           element_bytes: int) -> tuple[Any, str, str, Tuned | None]:
    """(config, level, why, tuned class) that may be built here: the chosen one when it is
    exact (it ran in this process's tuning), else the first of it and `fallbacks` whose
    verdict in the device's worker allows it (a warning says what was passed over)."""
    cfg, level, _, _ = chosen
    if level == "exact":
        return chosen
    got, lvl, passed = first_usable(info, family, variant, [(cfg, level), *fallbacks], vet_key,
                                    source_hash=source_hash, element_bytes=element_bytes)
    if got == cfg:
        return chosen
    warnings.warn(f"cltune: {passed}; serving the {lvl} config {got.short()}", CltuneWarning,
                  stacklevel=5)
    return got, lvl, passed, None


def built_or_safest(make: Callable[[Any], Any], cfg: Any, safest: Any,
                    what: str) -> tuple[Any, Any, str]:
    """(launcher, its config, '' or the build error) of cfg, else of the safest config when
    cfg does not build here (said by a warning)."""
    la = make(cfg)
    try:
        la.built()
    except BuildError as e:
        warnings.warn(f"cltune: {what} config {cfg.short()} does not build here ({e}); using "
                      "the safest config", CltuneWarning, stacklevel=5)
        return make(safest), safest, str(e)
    return la, cfg, ""


def remember(cache: dict[K, V], key: K, value: V) -> V:
    """cache[key] = value in a cache of at most MAX_KEPT entries (emptied when full)."""
    if len(cache) >= MAX_KEPT:
        cache.clear()
    cache[key] = value
    return value
