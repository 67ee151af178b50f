"""What serves a top-k: the database's answer for a variant (`topk/dtype`) validated into
tuned classes, the nearest tuned class of a call whose config selects its k (else the builtin
config for its k), vetted before this process builds what was not tuned here (house rule 17),
and the launchers (a build per k's power of two). Never writes the database, never loads the
tuner.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.core import shapes
from cltune.families.serving import (
    Tuned,
    built_or_safest,
    nearest,
    remember,
    tuned_classes,
    vetted,
)
from cltune.families.topk import family as topk_family
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.defaults import builtin_config, safest_config
from cltune.families.topk.family import TopkVariant, class_of
from cltune.families.topk.kernel import source_hash, spec_for
from cltune.families.topk.launch import TopkLauncher


@dataclass(frozen=True)
class TopkExplanation:
    """Which config serves a top-k of k among `n` elements, and where it came from."""

    variant: str
    n: int
    k: int
    config: TopkConfig
    level: str  # a level of the fallback chain, or safest
    why: str
    size_class: str | None  # the tuned class that serves it (None: not a tuned one)
    gbps: float | None

    def __str__(self) -> str:
        where = f"tuned class {self.size_class}" if self.size_class else "untuned"
        return (f"{self.variant}, k={self.k} of {self.n}: {self.config.short()} "
                f"[{self.level}, {where}] {self.why}")


class TopkEngine:
    """The configs and launchers of one (context, device, variant, database)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: Any, variant: TopkVariant,
                 db: str | None) -> None:
        self.ctx, self.dev, self.info, self.variant = ctx, dev, info, variant
        self.key_bytes = 8 if variant.dtype.itemsize == 8 else 4
        self.level, self.why, self.tuned = tuned_classes(info, db, topk_family.NAME,
                                                         str(variant), TopkConfig.from_mapping)
        self._lock = threading.Lock()
        self._by_key: dict[tuple[int, int, int, int], tuple[TopkLauncher, TopkExplanation]] = {}
        self._launchers: dict[tuple[TopkConfig, int], TopkLauncher] = {}
        self._by_call: dict[tuple[int, int, int], tuple[TopkLauncher, TopkExplanation]] = {}

    def _builtin(self, n: int, k: int, rows: int) -> TopkConfig:
        return builtin_config(self.info, k, self.key_bytes, rows, n)

    def _choose(self, key: tuple[int, int], n: int, k: int, rows: int,
                ) -> tuple[TopkConfig, str, str, Tuned | None]:
        if rows > 1:  # tuned classes are of one row
            return (self._builtin(n, k, rows), "builtin",
                    "along rows: the builtin config (tuned classes are of one row)", None)
        spec = spec_for(self.variant.dtype, k, self.info)
        t = nearest(self.tuned, key,
                    lambda c: TopkLauncher(self.ctx, self.dev, self.info, spec, c).fits(k))
        if t is not None:
            return t.config, self.level, self.why, t
        why = self.why if not self.tuned else (
            f"no tuned class within 2^{shapes.MAX_CLASS_STEPS} of this call whose config "
            "selects its k: the builtin config")
        return self._builtin(n, k, 1), "builtin", why, None

    def served(self, n: int, k: int, rows: int = 1) -> tuple[TopkLauncher, TopkExplanation]:
        """The launcher and explanation for k of each of `rows` rows of n elements in all."""
        seen = self._by_call.get((n, k, rows))
        if seen is not None:  # this very call before: nothing to work out again
            return seen
        return remember(self._by_call, (n, k, rows), self._served(n, k, rows))

    def _served(self, n: int, k: int, rows: int) -> tuple[TopkLauncher, TopkExplanation]:
        key = class_of(n, k)
        spec = spec_for(self.variant.dtype, k, self.info)
        # as builtin_config tells calls apart: how many rows (up to a compute unit's worth)
        # and the rows' length (its power of two: rowsel's work-group follows it)
        many = (min(rows, int(self.info.compute_units)), (n // max(1, rows)).bit_length())
        hit = self._by_key.get((*key, spec.kp, many))
        if hit is not None and hit[0].fits(k):
            return hit
        # never build here what has not run right on this driver; vetted for k's build
        cfg, level, why, t = vetted(
            self.info, topk_family.NAME, str(self.variant), self._choose(key, n, k, rows),
            [(self._builtin(n, k, rows), "builtin"), (safest_config(self.info), "safest")],
            (key[0], spec.kp.bit_length() - 1), source_hash=source_hash(),
            element_bytes=self.variant.dtype.itemsize)
        with self._lock:
            la = self._launchers.get((cfg, spec.kp))
            if la is None:
                la, got, err = built_or_safest(
                    lambda c: TopkLauncher(self.ctx, self.dev, self.info, spec, c), cfg,
                    safest_config(self.info), "top-k")
                if err:
                    cfg, level, why, t = got, "safest", err, None
                self._launchers[(cfg, spec.kp)] = la
            ex = TopkExplanation(str(self.variant), n, k, cfg, level, why,
                                 shapes.size_class(t.key) if t else None, t.gbps if t else None)
            return remember(self._by_key, (*key, spec.kp, many), (la, ex))
