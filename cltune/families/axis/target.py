"""The axis family's tuning target: one variant (`op/dtype/rows|cols|segs`) on one device, with
the methods the tuner and `cltune verify` use (see families/reduce/target.py for the 1-D family).

Size keys are (a, b) pairs (axis_family): the tuning input of a class is a random array of
2^a x 2^b elements (rows: 2^a rows of 2^b; cols: 2^a rows reduced, 2^b kept; segments: 2^a
segments of log-normal ragged lengths (sigma 1.5), mean about 2^b).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl

from cltune.core.inputs import make_input
from cltune.core.outcome import Outcome
from cltune.core.space import LayoutSpace
from cltune.device.info import DeviceInfo
from cltune.families.axis import family as axis_family
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.family import NO_ERROR, identity
from cltune.families.axis.kernel import acc_bytes, source_hash
from cltune.families.axis.launch import AxisLauncher
from cltune.families.axis.reference import Problem, validate
from cltune.families.base import Target
from cltune.opencl.build import BuildError
from cltune.opencl.measure import Bench

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class AxisSpace(LayoutSpace):
    """Allowed values per AxisConfig field for one layout on one device."""

    error: ClassVar[type[ValueError]] = ValueError

    layout: str  # rows (rows and segments) | cols
    info: DeviceInfo
    acc_bytes: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def size(self) -> int:
        return math.prod(len(v) for v in self.values.values())

    def check(self, cfg: AxisConfig) -> str:
        """'' when cfg is feasible here, else why (nothing compiled)."""
        why = self.check_offered(cfg, self.info.max_wg)
        if why:
            return why
        tile = cfg.wg * (cfg.vec if cfg.cols else 1) * self.acc_bytes
        if cfg.onepass and self.acc_bytes == 8 and not self.info.int64_atomics:
            return "onepass with a 64-bit accumulator needs cl_khr_int64_base_atomics"
        if tile + 256 > self.info.local_mem:
            return f"tile of {tile} bytes > local memory {self.info.local_mem}"
        return ""


def make_space(info: DeviceInfo, layout: str, acc_bytes: int) -> AxisSpace:
    gpu = info.type != "cpu"
    # GPUs: above 256 the kernels' own limit (registers) refused every build on the H200
    top = min(info.max_wg, 256)
    wgs = tuple(v for v in POW2 if (32 if gpu else 4) <= v <= top) or (1,)
    if layout == "rows" and not gpu and wgs[0] != 1:
        # a work-item a group: short rows packed into vectors (clt_ax_packed) run twice as
        # fast as with 4 or 8, whose work-item loop PoCL vectorises across vector code
        wgs = (1, *wgs)
    vals: dict[str, tuple] = {"wg": wgs}
    if layout == "rows":
        vals["lanes"] = tuple(v for v in POW2 if v <= max(wgs))
    else:
        vals["cols"] = tuple(v for v in POW2 if v <= max(wgs))
    vals["vec"] = tuple(v for v in ((1, 2, 4, 8) if gpu else (1, 2, 4, 8, 16))
                        if v <= info.vector_cap(acc_bytes))
    vals["items"] = (1, 2, 4)
    vals["groups_per_cu"] = (1, 2, 4, 8, 16, 32, 64)
    excluded = {}
    vals["onepass"] = (0, 1) if gpu else (0,)
    if layout == "cols":  # lock step and streaming pay where work-items run one by one
        vals["lockstep"] = (0,) if gpu else (0, 1)
        vals["stream"] = (0,) if gpu else (0, 1)
    if not gpu:
        excluded["onepass"] = "GPUs only (a second kernel is cheap on a CPU)"
    if layout == "rows":
        if info.is_nvidia:
            vals["warp"] = (0, 1)
        else:
            vals["warp"] = (0,)
            excluded["warp"] = "warp shuffles need NVIDIA's OpenCL (inline PTX)"
    return AxisSpace(layout, info, acc_bytes, vals, excluded)


class AxisBench(Bench):
    """The tuning input of one class on the device; timed like the 1-D family's (device time
    by profiling events, and back to back on an ordinary queue: measure.Bench)."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, spec: object, p: Problem,
                 xs: list[np.ndarray]) -> None:
        rdt = spec.result_dtype  # type: ignore[attr-defined]
        super().__init__(ctx, queue, xs, rdt)
        mf = cl.mem_flags
        self.problem, self.spec = p, spec
        self.out = cl.Buffer(ctx, mf.READ_WRITE, max(8, p.outputs * rdt.itemsize))
        self.offs = self.err = None
        if p.offsets is not None:
            self.offs = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=p.offsets)
            self.err = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                 hostbuf=np.full(1, NO_ERROR, np.uint32))

    def run(self, la: AxisLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        q, p = queue or self.queue, self.problem
        y = self.bufs[1] if len(self.bufs) > 1 else None
        if p.offsets is not None:
            init = la.built().acc_dtype.type(identity(la.spec))
            return la.segs(q, self.bufs[0], 0, p.n, self.offs, p.offsets.dtype == np.int64,
                           p.outputs, init, self.err, self.out)
        if la.cfg.lanes:
            return la.rows(q, self.bufs[0], 0, p.outer, p.r, self.out, y=y)
        return la.cols(q, self.bufs[0], 0, p.outer, p.r, p.inner, self.out, y=y)


def problem_of(kind: str, key: tuple[int, int], seed: int = 0) -> Problem:
    a, b = 1 << key[0], 1 << key[1]
    if kind == "rows":
        return Problem(a, b, 1)
    if kind == "cols":
        return Problem(1, a, b)
    # ragged like real CSR data: log-normal lengths (heavy tail) with mean b
    rng = np.random.default_rng(seed + a + b)
    lens = np.minimum(rng.lognormal(math.log(b) - 1.125, 1.5, a).round().astype(np.int64),
                      b << 8)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64 if lens.sum() >= 2**31
                                                          else np.int32)
    return Problem(1, int(offs[-1]), 1, offs)


@dataclass
class AxisTarget(Target):
    """One variant of the axis family on one device. `restrict` limits the space."""

    family: ClassVar[str] = axis_family.NAME
    config_type: ClassVar[type] = AxisConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        av = axis_family.variant_of(self.variant)
        self.spec, self.kind = av.spec, av.kind
        self.layout = "cols" if self.kind == "cols" else "rows"
        self.source_hash = source_hash()
        self._key: tuple[int, int] | None = None  # the class being tuned (set by bench)

    def make_space(self) -> Any:
        return make_space(self.info, self.layout, acc_bytes(self.spec, self.info.fp64))

    def suggest(self, trial: optuna.Trial) -> AxisConfig:
        v = self.space.values
        wg = trial.suggest_categorical("wg", v["wg"])
        kw = {"wg": wg}
        if self.layout == "rows":
            kw["lanes"] = min(wg, trial.suggest_categorical("lanes", v["lanes"]))
            kw["cols"] = 0
        else:
            kw["cols"] = min(wg, trial.suggest_categorical("cols", v["cols"]))
            kw["lanes"] = 0
        for name in ("vec", "items", "groups_per_cu"):
            kw[name] = trial.suggest_categorical(name, v[name])
        if self._key is not None:  # vectors wider than a row (the kept columns) only waste
            kw["vec"] = max([x for x in v["vec"] if x <= kw["vec"] and x <= 1 << self._key[1]]
                            or [min(v["vec"])])
        kw["warp"] = trial.suggest_categorical("warp", v["warp"]) if "warp" in v else 0
        kw["onepass"] = trial.suggest_categorical("onepass", v["onepass"])
        if "lockstep" in v:
            kw["lockstep"] = trial.suggest_categorical("lockstep", v["lockstep"])
        if "stream" in v:
            kw["stream"] = trial.suggest_categorical("stream", v["stream"])
            if kw["stream"]:  # its own kernel: no lock step, a finish kernel
                kw["lockstep"] = kw["onepass"] = 0
        if kw["warp"] and not 2 <= kw["lanes"] <= 32:
            kw["warp"] = 0
        return AxisConfig(**kw)


    def builtin_for(self, key: tuple[int, int]) -> AxisConfig | None:
        """What an untuned device runs for this class (axis/defaults.py), if in this space."""
        cfg = builtin_axis_config(self.info, self.kind, 1 << key[0], 1 << key[1],
                                  self.spec.vector_element_bytes)
        return cfg if self._params(cfg) is not None else None

    def builtin(self) -> AxisConfig | None:
        return self.builtin_for((12, 12))

    def _params(self, cfg: AxisConfig | None) -> dict | None:
        """The trial parameters that make cfg, if it is a point of this space."""
        if cfg is None or self.space.check(cfg):
            return None
        return {k: getattr(cfg, k) for k in self.space.values}

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: AxisConfig | None) -> list[dict]:
        """The known best of this class, the previous class's winner, the builtin config."""
        known = None
        for r in known_rows:
            if getattr(r, "size_class", None) == self.size_class(key):
                try:
                    known = AxisConfig.from_mapping(r.config)  # type: ignore[attr-defined]
                except ValueError:
                    known = None
        out: list[dict] = []
        for cfg in (known, previous, builtin_axis_config(self.info, self.kind, 1 << key[0],
                                                         1 << key[1],
                                                         self.spec.vector_element_bytes)):
            p = self._params(cfg)
            if p is not None and p not in out:
                out.append(p)
        return out

    def make_launcher(self, cfg: AxisConfig) -> AxisLauncher:
        return AxisLauncher(self.ctx, self.dev, self.info, self.spec, cfg)

    def select(self, key: tuple[int, int]) -> None:
        """The class being tuned (suggestions trim vectors wider than its rows)."""
        self._key = key

    def bench(self, key: tuple[int, int]) -> AxisBench:
        self.select(key)
        p = problem_of(self.kind, key)
        return AxisBench(self.ctx, self.queue, self.spec, p, make_input(self.spec, p.n))

    def evaluate(self, cfg: AxisConfig, bench: AxisBench, *, check: bool = True,
                 max_rel_error: float | None = None) -> Outcome:
        """check -> build -> validate (awkward shapes and the class's shape plus a bit) ->
        time; the tuner's trials and `cltune verify` both come through here."""
        def stop(step: str, why: str) -> Outcome:
            return Outcome(cfg, step, bench.n, bench.nbytes, why)

        if check:
            why = self.space.check(cfg)
            if why:
                return stop("check", why)
        la = self.launcher(cfg)
        try:
            la.built(False)
            chk = validate(la, self.queue, bench.problem)
        except BuildError as e:
            return stop("build", str(e))
        if not chk.ok:
            return stop("validate", chk.reason)
        if max_rel_error is not None and chk.max_rel_error > max_rel_error:
            return stop("validate", f"error {chk.max_rel_error:.3g} > --max-rel-error "
                        f"{max_rel_error:.3g}")
        return Outcome(cfg, "timed", bench.n, bench.nbytes, "", bench.time(la),
                       chk.max_rel_error)
