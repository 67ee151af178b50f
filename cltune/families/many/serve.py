"""What serves many reductions in one launch: the database's answer for a variant (`op/dtype`)
validated into tuned classes, the nearest tuned class of a call (else the builtin config of
its own class), vetted before this process builds what was not tuned here, the launchers,
and the plan of each call's lengths and offsets (its launcher and layout, kept: the warm
call). Never writes the database, never loads the tuner.
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
from cltune.families.many import family as many_family
from cltune.families.many.config import ManyConfig
from cltune.families.many.defaults import builtin_config, safest_config
from cltune.families.many.family import ManyVariant, class_of
from cltune.families.many.kernel import source_hash
from cltune.families.many.launch import Layout, ManyLauncher
from cltune.isolation.vetting import first_usable
from cltune.opencl.build import BuildError
from cltune.opencl.prepared import PreparedCalls

#: plans (lengths and offsets of a call) kept per engine; more: they are forgotten and remade
MAX_PLANS = 256
#: (launcher, layout) of a call
Plan = tuple[ManyLauncher, Layout]


@dataclass(frozen=True)
class Tuned:
    key: tuple[int, int]
    config: ManyConfig
    gbps: float | None


@dataclass(frozen=True)
class ManyExplanation:
    """Which config serves a call of `k` arrays of mean length `n`, and where it came from."""

    variant: str
    shape: tuple[int, int]  # (k, mean length)
    config: ManyConfig
    level: str  # a level of the fallback chain, or safest
    why: str
    size_class: str | None  # the tuned class that serves it (None: not a tuned one)
    gbps: float | None

    def __str__(self) -> str:
        where = f"tuned class {self.size_class}" if self.size_class else "untuned"
        return (f"{self.variant} x{self.shape[0]} of ~{self.shape[1]}: {self.config.short()} "
                f"[{self.level}, {where}] {self.why}")


def load(info: Any, variant: str, db: str | None) -> tuple[str, str, list[Tuned]]:
    """(level, why, the validated tuned classes) of a variant along the fallback chain (a
    stored config or class that does not validate never reaches the compiler)."""
    level, why, rows = tuned_shape_classes(info, db, many_family.NAME, variant,
                                           ManyConfig.from_mapping,
                                           stacklevel=6)
    return level, why, [Tuned(k, c, g) for k, c, g in rows]


class ManyEngine:
    """The configs and launchers of one (context, device, variant, database)."""

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: Any, variant: ManyVariant,
                 db: str | None) -> None:
        self.ctx, self.dev, self.info, self.variant = ctx, dev, info, variant
        self.level, self.why, self.tuned = load(info, str(variant), db)
        self._lock = threading.Lock()
        self._by_key: dict[tuple[int, int], tuple[ManyLauncher, ManyExplanation]] = {}
        self._launchers: dict[ManyConfig, ManyLauncher] = {}
        # (offsets, lengths) -> (launcher, layout): the warm call's look-up
        self._plans: PreparedCalls = PreparedCalls(MAX_PLANS)
        self._isz = variant.spec.itemsize
        self.result_dtype = variant.result_dtype

    def plan(self, lengths: tuple[int, ...], offsets: tuple[int, ...]) -> Plan:
        """The launcher of a call's class and the layout of its arrays: `lengths` in elements,
        `offsets` in bytes (as pyopencl Arrays keep them); kept, so that the warm call of the
        same arrays (or any of the same lengths and offsets) neither classifies them nor
        looks up the served config again."""
        key = (lengths, offsets)
        hit = self._plans.hit(key)
        if hit is not None:
            return hit
        op = self.variant.op
        if op in ("min", "max") and 0 in lengths:
            raise ValueError(f"xs[{lengths.index(0)}]: zero-size array to reduction operation "
                             f"{'minimum' if op == 'min' else 'maximum'} which has no identity")
        la, _ = self.served(class_of(lengths))
        isz = self._isz
        lay = la.layout(tuple(o // isz for o in offsets), lengths)
        la.built(lay.index64)
        with self._lock:
            self._plans.keep(key, (la, lay))
        return la, lay

    def _choose(self, key: tuple[int, int]) -> tuple[ManyConfig, str, str, Tuned | None]:
        near = shapes.nearest(key, [t.key for t in self.tuned])
        t = next((t for t in self.tuned if t.key == near), None)
        if t is not None:
            return t.config, self.level, self.why, t
        why = self.why if not self.tuned else (
            f"no tuned class within 2^{shapes.MAX_CLASS_STEPS} of this call: the builtin "
            "config of its class")
        cfg = builtin_config(self.info, key, self.variant.spec.vector_element_bytes)
        return cfg, "builtin", why, None

    def served(self, key: tuple[int, int]) -> tuple[ManyLauncher, ManyExplanation]:
        """The launcher and explanation for a call of class `key`."""
        hit = self._by_key.get(key)
        if hit is not None:
            return hit
        cfg, level, why, t = self._choose(key)
        if level != "exact":  # never build here what has not run right on this driver
            candidates = [(cfg, level), (builtin_config(self.info, key,
                                                        self.variant.spec.vector_element_bytes),
                                         "builtin"), (safest_config(self.info), "safest")]
            got, lvl, passed = first_usable(self.info, many_family.NAME, str(self.variant),
                                            candidates, key, source_hash=source_hash(),
                                            element_bytes=self.variant.spec.vector_element_bytes)
            if got != cfg:
                warnings.warn(f"cltune: {passed}; serving the {lvl} config {got.short()}",
                              CltuneWarning, stacklevel=4)
                cfg, level, why, t = got, lvl, passed, None
        with self._lock:
            la = self._launchers.get(cfg)
            if la is None:
                la = ManyLauncher(self.ctx, self.dev, self.info, self.variant, cfg)
                try:
                    la.built(False)
                except BuildError as e:
                    warnings.warn(f"cltune: many config {cfg.short()} does not build here "
                                  f"({e}); using the safest config", CltuneWarning,
                                  stacklevel=4)
                    cfg, level, why, t = safest_config(self.info), "safest", str(e), None
                    la = ManyLauncher(self.ctx, self.dev, self.info, self.variant, cfg)
                self._launchers[cfg] = la
            ex = ManyExplanation(str(self.variant), (1 << key[0], 1 << key[1]), cfg, level,
                                 why, shapes.size_class(t.key) if t else None,
                                 t.gbps if t else None)
            if len(self._by_key) > 256:
                self._by_key.clear()
            self._by_key[key] = (la, ex)
        return la, ex
