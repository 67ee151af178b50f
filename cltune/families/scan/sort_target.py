"""The sort's radix passes on one device as the tuner and `cltune verify` see a kernel family
(a `families.base.Target`): the space of shapes per device type, configs from trials and
stored mappings, a launcher per config (sort.py's program of that shape), and the benchmark
of a size class: 2^k keys sorted by the passes of the config's shape, checked first as the
runtime's vetting checks a shape (`sort.check_sort`) and then on the class's own size with
NaN, -0.0, infinities, extremes and ties, against numpy's stable order
(`sort.reference_order`), ascending and descending; then timed on plain random keys.

Sampled points: a group of one work-item walks tiles of `tile` elements (the config's
`items`); larger groups take `items` elements a work-item; so the trial asks for `tile` or
`items` by the group it drew (the space's values hold both)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.space import ValuesSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import MAX_SEEDS, Target, known_config
from cltune.families.scan import sort, sort_family
from cltune.families.scan.sort_config import RESERVE, SortConfig, SortConfigError
from cltune.opencl.build import BuildError
from cltune.opencl.measure import Timed
from cltune.opencl.sources import kernel_file, text_hash

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

#: the space per device type: groups, a group's items a work-item, a lone work-item's tile,
#: bits a pass, chunks a compute unit (points the device cannot hold are pruned: `check`)
CPU_VALUES = {"wg": (1, 8, 16, 32, 64), "items": (2, 4, 8, 16),
              "tile": (512, 1024, 2048, 4096, 8192), "bits": (4, 5, 6, 7, 8),
              "chunks_per_cu": (1, 2, 4, 8)}
GPU_VALUES = {"wg": (64, 128, 256, 512), "items": (2, 4, 6, 8, 12, 16), "bits": (4, 5, 6, 7, 8),
              "chunks_per_cu": (1, 2, 4, 8)}
#: the index width the passes are tuned with (below 2^32 elements)
IDX_BYTES = 4
#: the kernels of sort.py's program that the passes launch in groups of the shape's wg
#: (onesweep's two: the group form's only)
LAUNCHED_IN_GROUPS = ("hist", "scan", "scatter", "hist_all", "onesweep")


def params_of(cfg: SortConfig) -> dict[str, int]:
    """A config as the sampler's parameters (`tile` for one work-item, else `items`)."""
    return {"wg": cfg.wg, "tile" if cfg.wg == 1 else "items": cfg.items, "bits": cfg.bits,
            "chunks_per_cu": cfg.chunks_per_cu}


@dataclass(frozen=True)
class SortSpace(ValuesSpace):
    """Allowed values per sampled parameter on one device, for keys of `key_bytes`."""

    error: ClassVar[type[ValueError]] = SortConfigError

    device: DeviceInfo
    key_bytes: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def check(self, cfg: SortConfig) -> str:
        """'' when cfg is feasible here, else why not (nothing compiled)."""
        for k, v in params_of(cfg).items():
            if v not in self.values.get(k, ()):
                return f"{k}={v} not offered here"
        if cfg.wg > self.device.max_wg:
            return f"wg={cfg.wg} > device limit {self.device.max_wg}"
        need = cfg.local_bytes(self.key_bytes, IDX_BYTES, sort.split_local) + RESERVE
        if need > self.device.local_mem:
            return f"{need} bytes of __local memory > CL_DEVICE_LOCAL_MEM_SIZE"
        return ""

    def configs(self) -> list[SortConfig]:
        v = self.values
        out = []
        for w, b, c in itertools.product(v["wg"], v["bits"], v["chunks_per_cu"]):
            for items in v.get("tile" if w == 1 else "items", ()):
                cfg = SortConfig(w, items, b, c)
                if not self.check(cfg):
                    out.append(cfg)
        return out

    def size(self) -> int:
        return len(self.configs())

    def describe(self) -> str:
        return "radix passes over " + self.describe_values()


def make_space(info: DeviceInfo, key_bytes: int) -> SortSpace:
    """CPUs: one work-item walking its chunk (whole tiles of 512-8192), and groups of 8-64
    sorting tiles in __local memory; GPUs: groups of 64-512 (what the device allows) of 2-16
    items; 4- to 8-bit digits, 1-8 chunks a compute unit."""
    values = dict(CPU_VALUES if info.type == "cpu" else GPU_VALUES)
    wgs = tuple(w for w in values["wg"] if w <= info.max_wg)
    values["wg"] = wgs or (1 << (max(1, int(info.max_wg)).bit_length() - 1),)
    if 1 in values["wg"] and "tile" not in values:
        values["tile"] = CPU_VALUES["tile"]
    return SortSpace(info, key_bytes, values)


class SortLauncher:
    """One shape of the passes on one device: `built()` (BuildError with the compiler's
    words, or where a kernel's work-group limit is below the shape's group)."""

    def __init__(self, queue: cl.CommandQueue, dtype: np.dtype, cfg: SortConfig) -> None:
        self.queue, self.dtype, self.cfg = queue, dtype, cfg
        self.shape = cfg.shape()
        self.prg: Any = None

    def built(self) -> Any:  # noqa: ANN401
        if self.prg is None:
            # sort.py's own program of this shape, built as its check_sort builds one (in the
            # worker: this is where a driver crash is contained)
            try:
                prg, _ = sort._program(self.queue, self.dtype, False, self.shape, False)
                limit = min(getattr(prg, k).get_work_group_info(
                    cl.kernel_work_group_info.WORK_GROUP_SIZE, self.queue.device)
                    for k in LAUNCHED_IN_GROUPS if getattr(prg, k) is not None)
            except cl.Error as e:
                raise BuildError(str(e)[:2000]) from None
            if self.cfg.wg > limit:
                raise BuildError(f"a group of {self.cfg.wg} is above the passes' kernels' "
                                 f"work-group limit here ({limit})")
            self.prg = prg
        return self.prg


def plain(dtype: np.dtype, n: int, seed: int = 11) -> np.ndarray:
    """n random keys of dtype (no NaN or -0.0: the values come back from their keys), the
    input a config is timed on."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    lim = np.iinfo(dtype)
    return rng.integers(lim.min, lim.max, n, dtype=dtype, endpoint=True)


class SortBench(Timed):
    """A size class's keys on the device (the checked and the timed ones), numpy's stable
    orders of the checked ones, and timing (from a marker to the last pass, which writes the
    sorted values)."""

    def __init__(self, target: SortTarget, bucket: int) -> None:
        self.target, self.queue, self.dtype = target, target.queue, target.dtype
        self._app_queue = None
        self.n = 1 << int(bucket)
        self.nbytes = self.n * self.dtype.itemsize
        self.awkward = sort.sample_keys(self.dtype, self.n)
        self.want = {d: sort.reference_order(self.awkward, d) for d in (False, True)}
        self.xa = cla.to_device(self.queue, self.awkward)
        self.xp = cla.to_device(self.queue, plain(self.dtype, self.n))

    def run(self, la: SortLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        """One cltune.sort of the timed keys in la's shape: the first event a marker."""
        q = queue or self.queue
        x = self.xp if queue is None else self.xp.with_queue(q)
        start = cl.enqueue_marker(q)
        out, _ = sort._sorted(q, x, 1, self.n, False, True, False, shape=la.shape, vet=False)
        return [start, out.events[-1]]

    def validate(self, la: SortLauncher, max_rel_error: float | None) -> tuple[str, float]:
        """('' or why not, 0.0): the runtime's vetting check of the shape, then the class's
        keys in numpy's stable order (positions and values' bits), both ways."""
        q, t = self.queue, self.target
        why = sort.check_sort(t.ctx, q, t.dev, t.info, self.dtype.str, False, la.shape)
        if why:
            return why, float("inf")
        for desc, want in self.want.items():
            how = f"{self.n} {self.dtype.name} ({'descending' if desc else 'ascending'})"
            for vals, pos in (sort._sorted(q, self.xa, 1, self.n, desc, True, True,
                                           shape=la.shape, vet=False),
                              sort._sorted(q, self.xa, 1, self.n, desc, False, True,
                                           shape=la.shape, vet=False)):
                if not np.array_equal(pos.get(), want):
                    return f"the argsort of {how} is not numpy's stable order", float("inf")
                if vals is not None and vals.get().tobytes() != self.awkward[want].tobytes():
                    return f"the sorted values of {how} are not numpy's", float("inf")
        return "", 0.0


@dataclass
class SortTarget(Target):
    """The radix passes for keys of one dtype (variant `sort/<key dtype>`) on one device."""

    family: ClassVar[str] = sort_family.NAME
    config_type: ClassVar[type] = SortConfig

    def setup(self) -> None:
        self.dtype = sort_family.dtype_of(self.variant)
        if self.dtype == np.float64 and not self.info.fp64:
            raise ValueError(f"{self.info.name} has no fp64 (cl_khr_fp64): float64 keys are "
                             "not sorted there")
        self.key_bytes = 8 if self.dtype.itemsize == 8 else 4
        self.source_hash = text_hash(kernel_file("sort.cl"))

    def make_space(self) -> SortSpace:
        return make_space(self.info, self.key_bytes)

    def suggest(self, trial: optuna.Trial) -> SortConfig:
        v = self.space.values
        wg = trial.suggest_categorical("wg", v["wg"])
        items = trial.suggest_categorical("tile" if wg == 1 else "items",
                                          v["tile" if wg == 1 else "items"])
        return SortConfig(wg, items, trial.suggest_categorical("bits", v["bits"]),
                          trial.suggest_categorical("chunks_per_cu", v["chunks_per_cu"]))

    def builtin(self) -> SortConfig | None:
        """The device's untuned shape (sort.device_shape), where it is a point of the space."""
        try:
            cfg = SortConfig(*sort.device_shape(self.dev, self.key_bytes, IDX_BYTES))
        except SortConfigError:
            return None
        return cfg if not self.space.check(cfg) else None

    def seeds(self, known_rows: Iterable[object], bucket: int,
              previous: SortConfig | None) -> list[dict]:
        """The stored best nearest this size class, the previous class's winner and the
        untuned shape: those feasible here, as the sampler's parameters."""
        out: list[dict] = []
        for c in (known_config(known_rows, bucket), previous, self.builtin()):
            try:
                cfg = c if isinstance(c, SortConfig) or c is None else \
                    SortConfig.from_mapping(c)
            except (SortConfigError, TypeError, ValueError):
                continue
            if cfg is not None and not self.space.check(cfg) and params_of(cfg) not in out:
                out.append(params_of(cfg))
        return out[:MAX_SEEDS]

    def make_launcher(self, cfg: SortConfig) -> SortLauncher:
        return SortLauncher(self.queue, self.dtype, cfg)

    def bench(self, bucket: int) -> SortBench:
        return SortBench(self, bucket)
