"""What serves a scan: the database's answer for a variant (`op/dtype/layout`) validated into
tuned classes, the nearest tuned class of a call (else the builtin config of the layout),
vetted before this process builds what was not tuned here, and the launchers. Never writes the
database, never loads the tuner.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.core import shapes
from cltune.core.serving import CltuneWarning
from cltune.families.base import tuned_shape_classes
from cltune.families.scan import family as fam
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.defaults import builtin_config, safest_config
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.kernel import source_hash
from cltune.families.scan.launch import ScanLauncher, serving_min_chunk
from cltune.isolation.vetting import first_usable
from cltune.opencl.build import BuildError


@dataclass(frozen=True)
class Tuned:
    key: tuple[int, int]
    config: ScanConfig
    gbps: float | None


@dataclass(frozen=True)
class ScanExplanation:
    """Which config serves a scan of the view (outer, r, inner), and where it came from."""

    variant: str
    view: tuple[int, int, int]
    config: ScanConfig
    level: str  # a level of the fallback chain, or safest
    why: str
    size_class: str | None  # the tuned class that serves it (None: untuned)
    gbps: float | None

    def __str__(self) -> str:
        where = f"tuned class {self.size_class}" if self.size_class else "untuned"
        o, r, i = self.view
        return (f"{self.variant} of ({o}, {r}, {i}) along {r}: {self.config.short()} "
                f"[{self.level}, {where}] {self.why}")


def load(info: Any, variant: str, db: str | None) -> tuple[str, str, list[Tuned]]:
    """(level, why, the validated tuned classes) of a variant along the fallback chain (a
    stored config or class that does not validate never reaches the compiler)."""
    layout = variant.rsplit("/", 1)[-1]
    level, why, rows = tuned_shape_classes(info, db, fam.NAME, variant,
                                           ScanConfig.from_mapping,
                                           keep=lambda c: c.layout == layout, stacklevel=7)
    return level, why, [Tuned(k, c, g) for k, c, g in rows]


class ScanEngine:
    """The configs and launchers of one (context, device, variant, database)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: Any, variant: ScanVariant,
                 db: str | None) -> None:
        self.ctx, self.dev, self.info, self.variant = ctx, dev, info, variant
        self.acc_bytes = variant.acc_bytes
        self.level, self.why, self.tuned = load(info, str(variant), db)
        self._lock = threading.Lock()
        self._by_key: dict[tuple[int, int], tuple[ScanLauncher, ScanExplanation]] = {}
        self._launchers: dict[ScanConfig, ScanLauncher] = {}

    def _builtin(self) -> ScanConfig:
        return builtin_config(self.info, self.variant.layout, self.acc_bytes)

    def _choose(self, key: tuple[int, int]) -> tuple[ScanConfig, str, str, Tuned | None]:
        near = shapes.nearest(key, [t.key for t in self.tuned])
        t = next((t for t in self.tuned if t.key == near), None)
        if t is not None:
            return t.config, self.level, self.why, t
        why = self.why if not self.tuned else (
            f"no tuned class within 2^{shapes.MAX_CLASS_STEPS} of this call: the builtin "
            "config")
        return self._builtin(), "builtin", why, None

    def served(self, view: tuple[int, int, int]) -> tuple[ScanLauncher, ScanExplanation]:
        """The launcher and explanation for a scan of `view`."""
        key = fam.class_of(*view, self.variant.layout)
        hit = self._by_key.get(key)
        if hit is not None:
            return hit[0], _with_view(hit[1], view)
        cfg, level, why, t = self._choose(key)
        if level != "exact":  # never build here what has not run right on this driver
            candidates = [(cfg, level), (self._builtin(), "builtin"),
                          (safest_config(self.info, self.variant.layout), "safest")]
            got, lvl, passed = first_usable(self.info, fam.NAME, str(self.variant), candidates,
                                            key, source_hash=source_hash(),
                                            element_bytes=self.acc_bytes)
            if got != cfg:
                warnings.warn(f"cltune: {passed}; serving the {lvl} config {got.short()}",
                              CltuneWarning, stacklevel=4)
                cfg, level, why, t = got, lvl, passed, None
        with self._lock:
            la = self._launchers.get(cfg)
            if la is None:
                la = ScanLauncher(self.ctx, self.dev, self.info, self.variant, cfg,
                                  serving_min_chunk(self.info))
                try:
                    la.built()
                except BuildError as e:
                    warnings.warn(f"cltune: scan config {cfg.short()} does not build here "
                                  f"({e}); using the safest config", CltuneWarning,
                                  stacklevel=4)
                    cfg, level, why, t = (safest_config(self.info, self.variant.layout),
                                          "safest", str(e), None)
                    la = ScanLauncher(self.ctx, self.dev, self.info, self.variant, cfg,
                                      serving_min_chunk(self.info))
                self._launchers[cfg] = la
            ex = ScanExplanation(str(self.variant), view, cfg, level, why,
                                 shapes.size_class(t.key) if t else None,
                                 t.gbps if t else None)
            if len(self._by_key) > 256:
                self._by_key.clear()
            self._by_key[key] = (la, ex)
        return la, ex


def _with_view(ex: ScanExplanation, view: tuple[int, int, int]) -> ScanExplanation:
    if ex.view == view:
        return ex
    return ScanExplanation(ex.variant, view, ex.config, ex.level, ex.why, ex.size_class,
                           ex.gbps)
