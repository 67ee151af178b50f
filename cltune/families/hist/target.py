"""The histogram family's tuning target: one variant (`kind/dtype[/weights]`) on one device,
with the methods the tuner and `cltune verify` use (see families/many/target.py).

Size keys are (a, b): the tuning input of a class is 2^a elements in 2^b bins (uniform
values; bincount's within the dtype's range); validation first runs the awkward inputs of
reference.validate.
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
from cltune.families.hist import family as hist_family
from cltune.families.hist.config import ITEMS, REPS, HistConfig
from cltune.families.hist.defaults import builtin_config
from cltune.families.hist.kernel import HistSpec, source_hash, spec_for
from cltune.families.hist.launch import HistLauncher
from cltune.families.hist.reference import compare, reference, sample, validate
from cltune.opencl.measure import Timed

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class HistSpace(GridSpace):
    """Allowed values per HistConfig field on one device."""

    layout: str = "hist"


def make_space(info: DeviceInfo) -> HistSpace:
    gpu = info.type != "cpu"
    top = min(info.max_wg, 512 if gpu else 64)
    wgs = tuple(v for v in POW2 if (32 if gpu else 1) <= v <= top) or (1,)
    return HistSpace(info, {
        "strategy": ("local", "global") if gpu else ("private", "local", "global"),
        "wg": wgs, "reps": REPS, "groups_per_cu": (1, 2, 4, 8, 16, 32), "items": ITEMS})


def fitted(strategy: str, wg: int, reps: int, groups_per_cu: int, items: int) -> HistConfig:
    """A sampled point as a valid config: global keeps one copy, private runs one work-item,
    local at most wg copies (private's loads a step are its copies: items 1)."""
    if strategy == "global":
        reps = 1
    elif strategy == "private":
        wg, items = 1, 1
    else:
        reps = min(reps, wg)
    return HistConfig(strategy, wg, reps, groups_per_cu, items)


class HistBench(Timed):
    """The tuning input of one class on the device (2^a elements in 2^b bins) and the
    validation inputs; timed like every family's (measure.Timed)."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, spec: HistSpec,
                 key: tuple[int, int]) -> None:
        self.ctx, self.queue, self.spec = ctx, queue, spec
        self._app_queue = None
        self.n, self.nbins = 1 << key[0], 1 << key[1]
        self._inputs: Any = None
        self.nbytes = self.n * (spec.dtype.itemsize
                                + (spec.weights.itemsize if spec.weights is not None else 0))

    def _prepare(self, la: HistLauncher) -> Any:
        if self._inputs is None:
            h, w, bins = sample(la, self.n, self.nbins, np.random.default_rng(7), False)
            self._inputs = (h, w, bins, cla.to_device(self.queue, h),
                            cla.to_device(self.queue, w) if w is not None else None,
                            cla.empty(self.queue, self.nbins, la.spec.out_dtype),
                            reference(la, h, w, self.nbins, bins))
        return self._inputs

    def run(self, la: HistLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        _, _, bins, x, w, out, _ = self._prepare(la)
        return la.run(queue or self.queue, x, 0, self.n, w, 0, self.nbins, bins, out)

    def validate(self, la: HistLauncher, max_rel_error: float | None) -> tuple[str, float | None]:
        """Awkward inputs first (reference.validate), then the class's own input."""
        if not la.fits(self.nbins):
            return (f"{self.nbins} bins do not fit {la.cfg.short()}'s __local memory "
                    f"({la.info.local_mem} bytes)"), None
        chk = validate(la, self.queue)
        if not chk.ok:
            return chk.reason, None
        h, w, _, _, _, out, want = self._prepare(la)
        self.run(la)
        why, err = compare(out.get(), want, w, la.spec.out_dtype)
        if why:
            return f"wrong answer on the class's input: {why}", None
        err = max(err, chk.max_rel_error)
        if max_rel_error is not None and err > max_rel_error:
            return f"error {err:.3g} > --max-rel-error {max_rel_error:.3g}", err
        return "", err


@dataclass
class HistTarget(Target):
    """One variant of the histogram family on one device. `restrict` limits the space."""

    family: ClassVar[str] = hist_family.NAME
    config_type: ClassVar[type] = HistConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        self.hist = hist_family.variant_of(self.variant)
        self.spec = spec_for(self.hist, self.info)
        self.source_hash = source_hash()

    def make_space(self) -> Any:
        return make_space(self.info)

    def suggest(self, trial: optuna.Trial) -> HistConfig:
        v = self.space.values
        return fitted(**{name: trial.suggest_categorical(name, v[name]) for name in v})

    def builtin_for(self, key: tuple[int, int]) -> HistConfig | None:
        """What an untuned device runs for this class (hist/defaults.py), if in this space."""
        cfg = builtin_config(self.info, 1 << key[1], self.spec.acc_bytes)
        return cfg if self._params(cfg) is not None else None

    def builtin(self) -> HistConfig | None:
        return self.builtin_for(hist_family.DEFAULT_CLASSES[0])

    def _params(self, cfg: HistConfig | None) -> dict | None:
        if cfg is None or self.space.check(cfg):
            return None
        return {k: getattr(cfg, k) for k in self.space.values}

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: HistConfig | None) -> list[dict]:
        """The known best of this class, the previous class's winner, the builtin config."""
        known = None
        for r in known_rows:
            if getattr(r, "size_class", None) == self.size_class(key):
                try:
                    known = HistConfig.from_mapping(r.config)  # type: ignore[attr-defined]
                except ValueError:
                    known = None
        out: list[dict] = []
        for cfg in (known, previous, builtin_config(self.info, 1 << key[1],
                                                    self.spec.acc_bytes)):
            p = self._params(cfg)
            if p is not None and p not in out:
                out.append(p)
        return out

    def make_launcher(self, cfg: HistConfig) -> HistLauncher:
        return HistLauncher(self.ctx, self.dev, self.info, self.spec, cfg)

    def bench(self, key: tuple[int, int]) -> HistBench:
        return HistBench(self.ctx, self.queue, self.spec, tuple(key))
