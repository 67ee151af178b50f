"""Which config serves an expression reduction along an axis on a device, and where that
answer came from.

The chain (every answer names its level):
  exact / driver-changed / same-device / shipped / vendor-default
           this expression's fingerprint tuned for this layout (tuning_db/lookup.py's chain,
           family `expr_axis`); a shape is served by the nearest tuned size class
  builtin  nothing known: `expr_axis/defaults.choose`'s heuristic for the shape

Stored configs go through `AxisExprConfig.from_mapping` and must be of the variant's layout;
one that does not validate is skipped with a warning, never compiled. The runtime never
writes to the database and never loads the tuner.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from cltune.core.serving import CltuneWarning
from cltune.core.shapes import nearest
from cltune.families.expr_axis import family as fam
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.tuning_db.answer import answer


@dataclass(frozen=True)
class AxisTuned:
    """A stored best: the class it was tuned for, its config and provenance."""

    key: tuple[int, int]
    config: AxisExprConfig
    gbps: float | None = None
    tuned_at: str = ""
    driver: str = ""

    @property
    def size_class(self) -> str:
        return fam.size_class(self.key)


@dataclass(frozen=True)
class AxisChoices:
    """What the chain knows for one variant: its level, why, and the tuned classes (empty at
    `builtin`)."""

    level: str
    why: str
    tuned: tuple[AxisTuned, ...] = ()

    def nearest(self, pos: tuple[float, float]) -> AxisTuned | None:
        """The tuned class nearest to a shape's log2 position (ties to the larger)."""
        best = nearest(pos, [t.key for t in self.tuned])
        return next((t for t in self.tuned if t.key == best), None)


BUILTIN_WHY = "not tuned for this layout: the heuristic config for the shape"


def _warn(msg: str) -> None:
    warnings.warn(msg, CltuneWarning, stacklevel=6)


def resolve(info: Any, fingerprint: str, layout: str, db: str | None) -> AxisChoices:
    """The validated tuned classes of `fingerprint/layout` on the device `info` describes."""
    variant = fam.variant(fingerprint, layout)
    ans = answer(info, db, fam.NAME, variant, stacklevel=5)
    tuned: list[AxisTuned] = []
    for r in ans.rows:
        try:
            key = fam.shape_key_of(r.size_class)
            cfg = AxisExprConfig.from_mapping(r.config)
            if cfg.layout != layout:
                raise ValueError(f"a {cfg.layout} config stored for the {layout} layout")
        except (ValueError, TypeError) as e:  # AxisExprConfigError is a ValueError
            _warn(f"cltune: stored {fam.NAME} config for {variant} {r.size_class!r:.30} "
                  f"skipped ({str(e)[:200]})")
            continue
        tuned.append(AxisTuned(key, cfg, r.gbps, r.updated_at, r.driver))
    if not tuned:
        why = BUILTIN_WHY if ans.level == "builtin" else \
            f"the stored configs ({ans.level}) do not validate: {BUILTIN_WHY}"
        return AxisChoices("builtin", why)
    return AxisChoices(ans.level, ans.why, tuple(tuned))
