"""What the tuner and `cltune verify` see of every family: its tuning target, made from its
descriptor (`core.family.Family.target`, so that they name no family's modules), and `judge`,
the one evaluate path of every target: check -> build -> validate -> time (nothing is timed
before it validated, house rule 5; the outcome says which step stopped it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyopencl as cl

from cltune.core import buckets, shapes
from cltune.core.buckets import class_bucket
from cltune.core.family import entry
from cltune.core.outcome import Outcome, Timing
from cltune.device.info import DeviceInfo
from cltune.opencl.build import BuildError
from cltune.opencl.measure import profiling_queue

#: `space=LATER`: the target is made without its space, which the caller sets afterwards (the
#: tuner takes it from the worker, where the 1-D family's probe builds run)
LATER = object()
#: `space=ON_USE`: the space is made when something first reads it (`DeferredSpace`): the
#: worker's vetting of one config never does, and some spaces cost probe builds (the
#: expressions' along axes: a minute of NVIDIA's compiler for float64 `var`)
ON_USE = object()


class DeferredSpace:
    """A target's space, made on the first attribute read (then every read goes to it)."""

    __slots__ = ("_make", "_space")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] = make
        self._space: Any = None

    def get(self) -> Any:  # noqa: ANN401
        if self._space is None:
            self._space = self._make()
        return self._space

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self.get(), name)


def make_target(family: str, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: str,
                **options: Any) -> Any:
    """The family's target for one variant on one device (e.g. `ReduceTarget`)."""
    return entry(family, "target")(ctx, dev, info, variant, **options)


@dataclass
class Target:
    """What every family's tuning target shares: the device, the variant, the space (made by
    `make_space()` unless the caller hands one over: the tuner takes it from the worker;
    `restrict` limits it for sweeps and tests; `space=ON_USE` defers it to its first use), a
    profiling queue, the launcher per config
    (`make_launcher`), the size-class keys (`2^k`, or `2^ax2^b` with `shapes_2d`) and the
    validation of a stored config (`config_type`). A family's target adds `setup()` (what it
    reads from its variant), `suggest`, `bench` and `evaluate` (through `judge`)."""

    ctx: cl.Context
    dev: cl.Device
    info: DeviceInfo
    variant: str
    extended_acc: bool = False
    restrict: dict[str, tuple] = field(default_factory=dict)
    #: the space, when the caller made it already (the tuner hands its own to the worker)
    space: Any = None

    family: ClassVar[str] = ""
    config_type: ClassVar[Any] = None
    shapes_2d: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.queue = profiling_queue(self.ctx, self.dev)
        self._launchers: dict[Any, Any] = {}
        self.setup()
        if self.space is ON_USE:
            self.space = DeferredSpace(self._made_space)
        elif self.space is None:
            self.space = self._made_space()

    def _made_space(self) -> Any:  # noqa: ANN401
        space = self.make_space()
        return space.restrict(**self.restrict) if self.restrict else space

    def real_space(self) -> Any:  # noqa: ANN401
        """The space itself (made now if it was deferred), e.g. to send it to the caller."""
        return self.space.get() if isinstance(self.space, DeferredSpace) else self.space

    def setup(self) -> None:
        """Read the variant (and the family's own options) before the space is made."""

    def make_space(self) -> Any:
        raise NotImplementedError

    def make_launcher(self, cfg: Any) -> Any:
        raise NotImplementedError

    def launcher(self, cfg: Any) -> Any:
        la = self._launchers.get(cfg)
        if la is None:
            la = self._launchers[cfg] = self.make_launcher(cfg)
        return la

    @classmethod
    def size_class(cls, key: Any) -> str:
        return shapes.size_class(key) if cls.shapes_2d else buckets.size_class(key)

    @classmethod
    def bucket_of(cls, size_class: str) -> Any:
        return shapes.shape_key_of(size_class) if cls.shapes_2d else \
            buckets.class_bucket(size_class)

    def evaluate(self, cfg: Any, bench: Any, *, check: bool = True,
                 max_rel_error: float | None = None) -> Outcome:
        """check (against this space, unless `check` is off) -> build -> validate -> time,
        for a family whose bench validates and times a launcher (`bench.validate(la,
        max_rel_error)` -> (why not, error), `bench.time(la, budget_s)`)."""
        why = self.space.check(cfg) if check else ""
        la = self.launcher(cfg) if not why else None  # nothing made for an infeasible point
        return judge(cfg, bench.n, bench.nbytes, infeasible=why,
                     build=lambda: la.built(), build_errors=(BuildError,),
                     validate=lambda: bench.validate(la, max_rel_error),
                     time=lambda: bench.time(la, budget_s=0.2))

    @classmethod
    def config_of(cls, mapping: Mapping[str, object]) -> Any:
        """A stored mapping as a validated config (a ConfigError, a ValueError, otherwise)."""
        return cls.config_type.from_mapping(mapping)


def judge(cfg: Any, n: int, nbytes: int, *, infeasible: str, build: Callable[[], object],
          build_errors: tuple[type[Exception], ...],
          validate: Callable[[], tuple[str, float | None]],
          time: Callable[[], Timing]) -> Outcome:
    """The steps of `evaluate` for a family that brings its own: `infeasible` ('' when cfg
    is a point of the space), `build()` (raising one of `build_errors`), `validate()` -> (why
    not, measured error), and `time()`, called only after the rest passed."""
    if infeasible:
        return Outcome(cfg, "check", n, nbytes, infeasible)
    try:
        build()
    except build_errors as e:
        return Outcome(cfg, "build", n, nbytes, str(e))
    why, err = validate()
    if why:
        return Outcome(cfg, "validate", n, nbytes, why)
    return Outcome(cfg, "timed", n, nbytes, "", time(), err)


#: starting points a new study evaluates first (Optuna `enqueue_trial`), at most this many
MAX_SEEDS = 3


def known_config(rows: Iterable[object], bucket: int) -> Mapping | None:
    """The config of the stored row for `bucket`, else of the nearest bucket (log scale)."""
    known = []
    for r in rows:
        try:
            known.append((class_bucket(getattr(r, "size_class", "")), r))
        except ValueError:
            continue
    if not known:
        return None
    return min(known, key=lambda kr: (abs(kr[0] - bucket), -kr[0]))[1].config


def tuned_shape_classes(info: Any, db: str | None, family: str, variant: str,
                        parse: Callable[[Mapping[str, object]], Any], *,
                        keep: Callable[[Any], bool] | None = None, stacklevel: int = 2,
                        ) -> tuple[str, str, list[tuple[tuple[int, int], Any, float | None]]]:
    """(level, why, [(size key, config, GB/s)]) of a shape-keyed family's variant along the
    fallback chain: only rows whose size class and config validate (`parse`, then `keep`),
    so nothing stored that does not reaches the compiler; none left: the builtin level."""
    from cltune.tuning_db.answer import answer  # lazy: the database layer, only when serving

    ans = answer(info, db, family, variant, stacklevel=stacklevel + 1)
    tuned = []
    for r in ans.rows:
        try:
            cfg = parse(r.config)
            key = shapes.shape_key_of(r.size_class)
        except ValueError:
            continue
        if keep is None or keep(cfg):
            tuned.append((key, cfg, r.gbps))
    if not tuned:
        return "builtin", ans.why if ans.level == "builtin" else "stored configs invalid", []
    return ans.level, ans.why, tuned
