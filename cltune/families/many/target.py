"""The many family's tuning target: one variant (`op/dtype`) on one device, with the methods
the tuner and `cltune verify` use (see families/reduce/target.py for the 1-D family).

Size keys are (a, b) pairs: the tuning input of a class is 2^a arrays of 2^b elements, each a
buffer of its own; validation adds arrays of awkward lengths and offsets, more than one
launch takes (reference.awkward).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl

from cltune.core.inputs import make_input
from cltune.core.space import GridSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import Target
from cltune.families.many import family as many_family
from cltune.families.many.config import SLOTS, ManyConfig
from cltune.families.many.defaults import builtin_config
from cltune.families.many.kernel import acc_type, source_hash
from cltune.families.many.launch import ManyLauncher
from cltune.families.many.reference import (
    Problem,
    bounds,
    compare,
    reference,
    run,
    upload,
    validate,
)
from cltune.opencl.measure import Timed

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: validation arrays of awkward lengths around the class's length, at most this long
VALIDATE_SIZE = 4099


@dataclass(frozen=True)
class ManySpace(GridSpace):
    """Allowed values per ManyConfig field on one device (GridSpace's checks), and the
    accumulator tile each work-item keeps in local memory."""

    acc_bytes: int = 8
    layout: str = "many"

    def check(self, cfg: ManyConfig) -> str:
        """'' when cfg is feasible here, else why (nothing compiled)."""
        why = super().check(cfg)
        if why:
            return why
        tile = cfg.wg * self.acc_bytes
        if tile + 256 > self.info.local_mem:
            return f"tile of {tile} bytes > local memory {self.info.local_mem}"
        return ""


def make_space(info: DeviceInfo, acc_bytes: int) -> ManySpace:
    gpu = info.type != "cpu"
    top = min(info.max_wg, 512 if gpu else 64)
    wgs = tuple(v for v in POW2 if (32 if gpu else 4) <= v <= top) or (1,)
    vals: dict[str, tuple] = {
        "wg": wgs,
        "vec": tuple(v for v in (1, 2, 4, 8) if v <= info.vector_cap(acc_bytes)),
        "items": (1, 2, 4),
        "steps": (1, 2, 4, 8, 16, 32, 64),
        "slots": SLOTS,
    }
    return ManySpace(info, vals, acc_bytes=acc_bytes)


class ManyBench(Timed):
    """The tuning input of one class on the device (2^a buffers of 2^b elements) and the
    validation arrays; timed like every family's (profiling events, and back to back on an
    ordinary queue: measure.Timed)."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, variant: Any,
                 key: tuple[int, int]) -> None:
        self.ctx, self.queue, self.variant = ctx, queue, variant
        self._app_queue = None
        k, n = 1 << key[0], 1 << key[1]
        self.problem = Problem((n,) * k, (0,) * k)
        flat = make_input(variant.spec, k * n)[0]
        self.hosts = [flat[i * n:(i + 1) * n] for i in range(k)]
        self.bufs = upload(ctx, self.hosts)
        self.n = k * n
        self.nbytes = self.n * variant.spec.itemsize
        self.out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(8, k * 8))
        self.size = min(n, VALIDATE_SIZE)
        self._want: tuple[np.ndarray, np.ndarray] | None = None

    def run(self, la: ManyLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        return la.enqueue(queue or self.queue, [(b, 0, n) for b, n in
                                                zip(self.bufs, self.problem.lengths,
                                                    strict=True)], self.out)

    def validate(self, la: ManyLauncher, max_rel_error: float | None) -> tuple[str, float | None]:
        """Awkward arrays first (reference.validate), then the class's own input."""
        chk = validate(la, self.queue, self.size)
        if not chk.ok:
            return chk.reason, None
        if self._want is None:
            self._want = reference(self.variant, self.hosts)
        want, scale = self._want
        got = run(la, self.queue, self.bufs, self.problem, self.out)
        tol = bounds(self.variant, la.cfg, bool(la.info.fp64), self.problem.lengths, scale)
        why, rel = compare(self.variant, got, want, tol, scale)
        if why:
            return why, None
        err = max(rel, chk.max_rel_error)
        if max_rel_error is not None and err > max_rel_error:
            return f"error {err:.3g} > --max-rel-error {max_rel_error:.3g}", err
        return "", err


@dataclass
class ManyTarget(Target):
    """One variant of the many family on one device. `restrict` limits the space."""

    family: ClassVar[str] = many_family.NAME
    config_type: ClassVar[type] = ManyConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        self.many = many_family.variant_of(self.variant)
        self.spec = self.many.spec
        self.source_hash = source_hash()

    def make_space(self) -> Any:
        acc = acc_type(self.many, bool(self.info.fp64))
        return make_space(self.info, 8 if acc in ("double", "long", "ulong") else 4)

    def suggest(self, trial: optuna.Trial) -> ManyConfig:
        v = self.space.values
        return ManyConfig(**{name: trial.suggest_categorical(name, v[name]) for name in v})

    def builtin_for(self, key: tuple[int, int]) -> ManyConfig | None:
        """What an untuned device runs for this class (many/defaults.py), if in this space."""
        cfg = builtin_config(self.info, key, self.spec.vector_element_bytes)
        return cfg if self._params(cfg) is not None else None

    def builtin(self) -> ManyConfig | None:
        return self.builtin_for((6, 12))

    def _params(self, cfg: ManyConfig | None) -> dict | None:
        if cfg is None or self.space.check(cfg):
            return None
        return {k: getattr(cfg, k) for k in self.space.values}

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: ManyConfig | None) -> list[dict]:
        """The known best of this class, the previous class's winner, the builtin config."""
        known = None
        for r in known_rows:
            if getattr(r, "size_class", None) == self.size_class(key):
                try:
                    known = ManyConfig.from_mapping(r.config)  # type: ignore[attr-defined]
                except ValueError:
                    known = None
        out: list[dict] = []
        for cfg in (known, previous, builtin_config(self.info, key,
                                                    self.spec.vector_element_bytes)):
            p = self._params(cfg)
            if p is not None and p not in out:
                out.append(p)
        return out

    def make_launcher(self, cfg: ManyConfig) -> ManyLauncher:
        return ManyLauncher(self.ctx, self.dev, self.info, self.many, cfg)

    def bench(self, key: tuple[int, int]) -> ManyBench:
        return ManyBench(self.ctx, self.queue, self.many, tuple(key))
