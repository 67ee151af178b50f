"""What serves a reduction along an axis or over segments: the database's answer per variant
(`op/dtype/rows|cols|segs`) and size class, vetted, and the engine per reducer that holds the
launchers (the nearest tuned class serving a shape; shapes never tuned get the builtin config
for their shape). Never writes the database, never loads the tuner.
"""

from __future__ import annotations

import math
import threading
import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core import shapes
from cltune.core.serving import CltuneWarning
from cltune.core.shapes import Geometry
from cltune.families.axis import family as axis_family
from cltune.families.axis.config import AxisConfig, AxisConfigError
from cltune.families.axis.defaults import builtin_axis_config, safest_axis_config
from cltune.families.axis.family import NO_ERROR
from cltune.families.axis.kernel import source_hash
from cltune.families.axis.launch import AxisLauncher
from cltune.isolation.vetting import first_usable
from cltune.opencl.arrays import device_array as opencl_array
from cltune.opencl.build import BuildError
from cltune.opencl.prepared import PreparedCalls
from cltune.tuning_db.answer import answer


def _log2(v: int) -> int:
    return max(0, round(math.log2(max(1, v))))


@dataclass(frozen=True)
class AxisExplanation:
    """Which config serves a shape, and where that answer came from."""

    variant: str
    shape: tuple[int, int]  # the (a, b) this call is, in its layout's terms
    config: AxisConfig
    level: str  # exact | driver-changed | same-device | shipped | vendor-default | builtin
    why: str
    size_class: str | None  # the tuned class that serves it (None: builtin)
    gbps: float | None

    def __str__(self) -> str:
        cls = f"class {self.size_class}" if self.size_class else "no tuned class"
        perf = f", {self.gbps:.1f} GB/s when tuned" if self.gbps else ""
        return (f"{self.variant} {self.shape[0]}x{self.shape[1]}: {self.config.short()} "
                f"[{self.level}: {self.why}; {cls}{perf}]")


@dataclass(frozen=True)
class _Tuned:
    key: tuple[int, int]
    config: AxisConfig
    gbps: float | None


class _Kind:
    """What the database knows for one variant (op/dtype/kind) on this device."""

    def __init__(self, level: str, why: str, tuned: list[_Tuned]) -> None:
        self.level, self.why, self.tuned = level, why, tuned
        self.keys = [t.key for t in tuned]


class AxisEngine:
    """Per 1-D engine (context, device, op/dtype, database): configs per kind, launchers,
    error flags of the segments kernel per queue, offsets arrays already validated."""

    def __init__(self, eng: Any) -> None:
        self.ctx, self.dev, self.info, self.spec = eng.ctx, eng.dev, eng.info, eng.spec
        self.db = getattr(eng, "db", None)
        self.allocator = eng.allocator
        self._kinds: dict[str, _Kind] = {}
        self._launchers: dict[AxisConfig, AxisLauncher] = {}
        self._errs: dict[int, cl.Buffer] = {}
        self.checked: OrderedDict[tuple, None] = OrderedDict()
        self._chosen: dict[tuple, tuple[AxisConfig, _Tuned | None]] = {}
        self.notes: dict[tuple, tuple[str, str]] = {}  # (kind, a, b) -> vetting's (level, why)
        self.geometries: dict[tuple, Geometry] = {}  # (shape, strides, axis, keepdims)
        # (shape, strides, offset, axis, keepdims, queue) -> api.AxisCall: what a call seen
        # before launches (api.reduce_axis' warm path)
        self.warm: PreparedCalls = PreparedCalls(256)
        self._lock = threading.Lock()

    def kind(self, kind: str) -> _Kind:
        k = self._kinds.get(kind)
        if k is None:
            k = self._kinds[kind] = _load(self.info, f"{self.spec.op}/{self.spec.dtype}/{kind}",
                                          self.db)
        return k

    def choose(self, kind: str, a: int, b: int) -> tuple[AxisConfig, _Tuned | None]:
        hit = self._chosen.get((kind, a, b))
        if hit is None:
            hit = self._vetted(kind, a, b, *self._choose(kind, a, b))
            if len(self._chosen) > 1024:
                self._chosen.clear()
                self.notes.clear()
            self._chosen[(kind, a, b)] = hit
        return hit

    def _vetted(self, kind: str, a: int, b: int, cfg: AxisConfig,
                t: _Tuned | None) -> tuple[AxisConfig, _Tuned | None]:
        """`cfg` unless it has not run right on this driver (vetting): then the builtin or
        the safest config, with the reason in `notes` (explain shows it)."""
        level = self.kind(kind).level if t is not None else "builtin"
        if level == "exact":
            return cfg, t  # tuned on this fingerprint and driver: it ran in the tuner's worker
        layout = "cols" if kind == "cols" else "rows"
        candidates = [(cfg, level),
                      (builtin_axis_config(self.info, kind, a, b,
                                           self.spec.vector_element_bytes), "builtin"),
                      (safest_axis_config(self.info, layout), "safest")]
        got, lvl, why = first_usable(self.info, axis_family.NAME,
                                     f"{self.spec.op}/{self.spec.dtype}/{kind}", candidates,
                                     (_log2(a), _log2(b)), source_hash=source_hash(),
                                     element_bytes=self.spec.vector_element_bytes)
        if got == cfg:
            return cfg, t
        warnings.warn(f"cltune: {why}; serving the {lvl} config {got.short()}", CltuneWarning,
                      stacklevel=5)
        self.notes[(kind, a, b)] = (lvl, why)
        return got, None

    def _choose(self, kind: str, a: int, b: int) -> tuple[AxisConfig, _Tuned | None]:
        k = self.kind(kind)
        key = shapes.log2_key(a, b)
        best = shapes.nearest(key, k.keys, class_steps(self.info))
        if best is not None and not narrow_fits(self.info, kind, b, best[1] - key[1]):
            best = None
        for t in k.tuned:
            if t.key == best and fits(self.info, kind, t.config, b):
                return t.config, t
        return builtin_axis_config(self.info, kind, a, b, self.spec.vector_element_bytes), None

    def launcher(self, cfg: AxisConfig, layout: str) -> AxisLauncher:
        with self._lock:
            la = self._launchers.get(cfg)
            if la is None:
                la = AxisLauncher(self.ctx, self.dev, self.info, self.spec, cfg)
                try:
                    la.built(False)
                except BuildError as e:
                    warnings.warn(f"cltune: axis config {cfg.short()} does not build here "
                                  f"({e}); using the safest config", CltuneWarning,
                                  stacklevel=4)
                    la = AxisLauncher(self.ctx, self.dev, self.info, self.spec,
                                      safest_axis_config(self.info, layout))
                self._launchers[cfg] = la
                if len(self._launchers) > 64:
                    self._launchers.pop(next(iter(self._launchers)))
            return la

    def err(self, queue: cl.CommandQueue) -> cl.Buffer:
        with self._lock:
            b = self._errs.get(queue.int_ptr)
            if b is None:
                b = self._errs[queue.int_ptr] = cl.Buffer(
                    self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=np.full(1, NO_ERROR, np.uint32))
            return b


_engines: weakref.WeakKeyDictionary[Any, AxisEngine] = weakref.WeakKeyDictionary()
_engines_lock = threading.Lock()


def axis_engine(reducer: Any) -> AxisEngine:
    eng = reducer._eng
    a = _engines.get(eng)  # a dict read: safe without the lock (made once, under it)
    if a is not None:
        return a
    with _engines_lock:
        a = _engines.get(eng)
        if a is None:
            a = _engines[eng] = AxisEngine(eng)
        return a


#: GPUs: a tuned class serves shapes at most this many powers of two away in each dimension
#: (CPUs: shapes.MAX_CLASS_STEPS). On the H200 the classes shipped (tuned at 2^24 elements)
#: ran 1.34x (rows) and 1.38x (columns) the best launch of 15 untuned shapes in geometric
#: mean when they served up to 2^3 away; served up to 2^1 away, and only where the row
#: stride is a multiple of their vector width, with the builtin rule elsewhere: 1.13x / 1.15x
#: (docs/logs/benchmarks-2026-11-30-to-2026-12-06.md, "Axis sums on the H200: shapes nobody tuned")
GPU_CLASS_STEPS = 1


def class_steps(info: Any) -> float:
    """How far (powers of two per dimension) a tuned class serves on this device."""
    return shapes.MAX_CLASS_STEPS if info.type == "cpu" else GPU_CLASS_STEPS


def fits(info: Any, kind: str, cfg: AxisConfig, b: int) -> bool:
    """On GPUs a tuned config serves another shape only where its vector loads stay aligned
    there (the row length, or the kept axis's length, a multiple of its vector width): its
    class, a power of two, always was, and unaligned vector loads ran up to 2.4x slower on
    the H200 (rows of 678 floats: 31.1 us with the tuned v8 config, 13.5 with scalar loads)."""
    return info.type == "cpu" or kind == "segs" or b % cfg.vec == 0


#: GPUs: a kept axis narrower than this is served by its own power of two's tuned class only
NARROW_COLS = 64


def narrow_fits(info: Any, kind: str, b: int, steps: float) -> bool:
    """On GPUs a tuned class serves a strided reduction of fewer than NARROW_COLS kept columns
    only from its own power of two (`steps`: the class's log2 distance along the kept axis):
    the tile is shaped to the width (#40: 1048576 x 8 along axis 0 was served 2^20 x 2^4's
    C1 v8 i2 g2, 23.0 us on the H200, where the builtin C4 v2 i4 g4 takes 17.6 and torch
    23.5)."""
    return info.type == "cpu" or kind != "cols" or b >= NARROW_COLS or abs(steps) < 0.5


def _load(info: Any, variant: str, db: str | None) -> _Kind:
    """The validated tuned configs of a variant along the fallback chain (a stored config or
    class that does not validate never reaches the compiler)."""
    ans = answer(info, db, axis_family.NAME, variant, stacklevel=6)
    tuned = []
    for r in ans.rows:
        try:
            tuned.append(_Tuned(shapes.shape_key_of(r.size_class),
                                AxisConfig.from_mapping(r.config), r.gbps))
        except (AxisConfigError, ValueError):
            continue
    if not tuned:
        return _Kind("builtin", ans.why if ans.level == "builtin" else "stored configs invalid",
                     [])
    return _Kind(ans.level, ans.why, tuned)


# ---- arrays -------------------------------------------------------------------------------
def device_array(reducer: Any, a: Any, queue: cl.CommandQueue, name: str) -> cla.Array:
    return opencl_array(a, reducer.spec.np_dtype, reducer._eng.ctx, queue, name)


def explain(reducer: Any, kind: str, a: int, b: int) -> AxisExplanation:
    eng = axis_engine(reducer)
    cfg, t = eng.choose(kind, a, b)
    k = eng.kind(kind)
    spec = reducer.spec
    level, why = eng.notes.get((kind, a, b)) or (
        k.level if t else "builtin", k.why if t else
        "no tuned class for this variant" if not k.tuned else
        f"no tuned class within 2^{class_steps(eng.info):g} of this shape"
        f"{'' if eng.info.type == 'cpu' else ' whose vector loads stay aligned here'}: "
        "the builtin config")
    return AxisExplanation(f"{spec.op}/{spec.dtype}/{kind}", (a, b), cfg, level, why,
                           shapes.size_class(t.key) if t else None, t.gbps if t else None)
