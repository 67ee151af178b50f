"""What serves a histogram: the database's answer for a variant (`kind/dtype[/weights]`)
validated into tuned classes, the nearest tuned class of a call whose config fits its bins
(else the builtin config for its bin count), vetted before this process builds what was not
tuned here (house rule 17), and the launchers. Never writes the database, never loads the
tuner.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.core import shapes
from cltune.families.hist import family as hist_family
from cltune.families.hist.config import HistConfig
from cltune.families.hist.defaults import builtin_config, safest_config
from cltune.families.hist.family import HistVariant, class_of
from cltune.families.hist.kernel import source_hash, spec_for
from cltune.families.hist.launch import HistLauncher
from cltune.families.serving import (
    Tuned,
    built_or_safest,
    nearest,
    remember,
    tuned_classes,
    vetted,
)


@dataclass(frozen=True)
class HistExplanation:
    """Which config serves a call of `n` elements in `nbins` bins, and where it came from."""

    variant: str
    n: int
    nbins: int
    config: HistConfig
    level: str  # a level of the fallback chain, or safest
    why: str
    size_class: str | None  # the tuned class that serves it (None: not a tuned one)
    gbps: float | None

    def __str__(self) -> str:
        where = f"tuned class {self.size_class}" if self.size_class else "untuned"
        return (f"{self.variant} of {self.n} in {self.nbins} bins: {self.config.short()} "
                f"[{self.level}, {where}] {self.why}")


class HistEngine:
    """The configs and launchers of one (context, device, variant, database)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: Any, variant: HistVariant,
                 db: str | None) -> None:
        self.ctx, self.dev, self.info, self.variant = ctx, dev, info, variant
        self.spec = spec_for(variant, info)
        self.level, self.why, self.tuned = tuned_classes(info, db, hist_family.NAME,
                                                         str(variant), HistConfig.from_mapping)
        self._lock = threading.Lock()
        self._by_key: dict[tuple[int, int], tuple[HistLauncher, HistExplanation]] = {}
        self._launchers: dict[HistConfig, HistLauncher] = {}
        self._by_call: dict[tuple[int, int], tuple[HistLauncher, HistExplanation]] = {}

    def _fits(self, cfg: HistConfig) -> bool:
        """Whether cfg makes any bin count here (local/private: a window at a time of at
        least one bin)."""
        return cfg.local_bytes(1, self.spec.acc_bytes) + 1024 <= self.info.local_mem

    def _choose(self, key: tuple[int, int], nbins: int,
                ) -> tuple[HistConfig, str, str, Tuned | None]:
        t = nearest(self.tuned, key, self._fits)
        if t is not None:
            return t.config, self.level, self.why, t
        why = self.why if not self.tuned else (
            f"no tuned class within 2^{shapes.MAX_CLASS_STEPS} of this call whose config fits "
            "its bins: the builtin config")
        return builtin_config(self.info, nbins, self.spec.acc_bytes), "builtin", why, None

    def served(self, n: int, nbins: int) -> tuple[HistLauncher, HistExplanation]:
        """The launcher and explanation for a call of n elements in nbins bins."""
        seen = self._by_call.get((n, nbins))
        if seen is not None:  # this very call before: nothing to work out again
            return seen
        return remember(self._by_call, (n, nbins), self._served(n, nbins))

    def _served(self, n: int, nbins: int) -> tuple[HistLauncher, HistExplanation]:
        key = class_of(n, nbins)
        hit = self._by_key.get(key)
        if hit is not None and hit[0].fits(nbins):
            return hit
        # never build here what has not run right on this driver
        cfg, level, why, t = vetted(
            self.info, hist_family.NAME, str(self.variant), self._choose(key, nbins),
            [(builtin_config(self.info, nbins, self.spec.acc_bytes), "builtin"),
             (safest_config(self.info), "safest")], key, source_hash=source_hash(),
            element_bytes=self.spec.dtype.itemsize)
        with self._lock:
            la = self._launchers.get(cfg)
            if la is None:
                la, got, err = built_or_safest(
                    lambda c: HistLauncher(self.ctx, self.dev, self.info, self.spec, c), cfg,
                    safest_config(self.info), "histogram")
                if err:
                    cfg, level, why, t = got, "safest", err, None
                self._launchers[cfg] = la
            ex = HistExplanation(str(self.variant), n, nbins, cfg, level, why,
                                 shapes.size_class(t.key) if t else None, t.gbps if t else None)
            return remember(self._by_key, key, (la, ex))
