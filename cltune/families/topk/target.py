"""The top-k family's tuning target: one variant (`topk/dtype`) on one device, with the
methods the tuner and `cltune verify` use (see families/hist/target.py).

Size keys are (a, b): the tuning input of a class is the largest 2^b of 2^a uniform values;
validation first runs the awkward inputs of reference.validate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.space import GridSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import Target
from cltune.families.topk import family as topk_family
from cltune.families.topk.config import BITS, TopkConfig
from cltune.families.topk.defaults import builtin_config
from cltune.families.topk.kernel import source_hash, spec_for
from cltune.families.topk.launch import TopkLauncher
from cltune.families.topk.reference import compare, reference, sample, validate
from cltune.opencl.measure import Timed

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class TopkSpace(GridSpace):
    """Allowed values per TopkConfig field on one device."""

    layout: str = "topk"


def make_space(info: DeviceInfo) -> TopkSpace:
    gpu = info.type != "cpu"
    top = min(info.max_wg, 512 if gpu else 64)
    wgs = tuple(v for v in POW2 if (16 if gpu else 1) <= v <= top) or (1,)
    return TopkSpace(info, {"strategy": ("lists", "radix", "sample", "rowsel"), "wg": wgs,
                            "groups_per_cu": (1, 2, 4, 8, 16, 32), "bits": BITS})


def fitted(strategy: str, wg: int, groups_per_cu: int, bits: int) -> TopkConfig:
    """A sampled point as a valid config (lists have no digits, rowsel 8-bit ones: bits 8)."""
    return TopkConfig(strategy, wg, groups_per_cu,
                      8 if strategy in ("lists", "rowsel") else bits)


class TopkBench(Timed):
    """The tuning input of one class on the device (the best 2^b of 2^a uniform values) and
    the validation inputs; timed like every family's (measure.Timed)."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, dtype: np.dtype,
                 key: tuple[int, int]) -> None:
        self.ctx, self.queue, self.dtype = ctx, queue, dtype
        self._app_queue = None
        self.k = 1 << key[1]
        self.n = max(1 << key[0], self.k)
        self._inputs: Any = None
        self.nbytes = self.n * dtype.itemsize

    def _prepare(self) -> Any:
        if self._inputs is None:
            h = sample(self.dtype, 1, self.n, np.random.default_rng(7), False)
            self._inputs = (h, cla.to_device(self.queue, h.ravel()),
                            cla.empty(self.queue, self.k, self.dtype),
                            cla.empty(self.queue, self.k, np.int64), reference(h, self.k))
        return self._inputs

    def run(self, la: TopkLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        _, x, v, i, _ = self._prepare()
        return la.run(queue or self.queue, x, 0, self.n, 1, self.k, True, v, i)

    def validate(self, la: TopkLauncher, max_rel_error: float | None) -> tuple[str, float | None]:
        """Awkward inputs first (reference.validate), then the class's own input."""
        if not la.fits(self.k):
            return f"k={self.k} is not for {la.cfg.short()} here", None
        chk = validate(la, self.queue)
        if not chk.ok:
            return chk.reason, None
        _, _, v, i, want = self._prepare()
        self.run(la)
        why = compare(v.get().reshape(1, -1), i.get().reshape(1, -1), *want)
        if why:
            return f"wrong answer on the class's input: {why}", None
        return "", 0.0


@dataclass
class TopkTarget(Target):
    """One variant of the top-k family on one device. `restrict` limits the space."""

    family: ClassVar[str] = topk_family.NAME
    config_type: ClassVar[type] = TopkConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        self.topk = topk_family.variant_of(self.variant)
        self.dtype = self.topk.dtype
        self.source_hash = source_hash()
        self._kp: int = 1

    def make_space(self) -> Any:
        return make_space(self.info)

    def suggest(self, trial: optuna.Trial) -> TopkConfig:
        v = self.space.values
        return fitted(**{name: trial.suggest_categorical(name, v[name]) for name in v})

    def _key_bytes(self) -> int:
        return 8 if self.dtype.itemsize == 8 else 4

    def builtin_for(self, key: tuple[int, int]) -> TopkConfig | None:
        """What an untuned device runs for this class (topk/defaults.py), if in this space."""
        cfg = builtin_config(self.info, 1 << key[1], self._key_bytes(), 1, 1 << key[0])
        return cfg if self._params(cfg) is not None else None

    def builtin(self) -> TopkConfig | None:
        return self.builtin_for(topk_family.DEFAULT_CLASSES[0])

    def _params(self, cfg: TopkConfig | None) -> dict | None:
        if cfg is None or self.space.check(cfg):
            return None
        return {k: getattr(cfg, k) for k in self.space.values}

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: TopkConfig | None) -> list[dict]:
        """The known best of this class, the previous class's winner, the builtin config."""
        known = None
        for r in known_rows:
            if getattr(r, "size_class", None) == self.size_class(key):
                try:
                    known = TopkConfig.from_mapping(r.config)  # type: ignore[attr-defined]
                except ValueError:
                    known = None
        out: list[dict] = []
        for cfg in (known, previous, builtin_config(self.info, 1 << key[1], self._key_bytes(), 1,
                                                    1 << key[0])):
            p = self._params(cfg)
            if p is not None and p not in out:
                out.append(p)
        return out

    def make_launcher(self, cfg: TopkConfig) -> TopkLauncher:
        spec = spec_for(self.dtype, self._kp, self.info)
        return TopkLauncher(self.ctx, self.dev, self.info, spec, cfg)

    def launcher(self, cfg: TopkConfig) -> TopkLauncher:
        """The launcher of cfg for the k of the class benched last (a build per k's power
        of two)."""
        la = self._launchers.get((cfg, self._kp))
        if la is None:
            la = self._launchers[(cfg, self._kp)] = self.make_launcher(cfg)
        return la

    def bench(self, key: tuple[int, int]) -> TopkBench:
        b = TopkBench(self.ctx, self.queue, self.dtype, tuple(key))
        self._kp = b.k
        return b
