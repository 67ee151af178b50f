"""The scan family's tuning target: one variant (`op/dtype/layout`) on one device, with the
methods the tuner and `cltune verify` use (see families/many/target.py).

Size keys are (a, b) pairs (core.shapes): rows: 2^a rows of 2^b elements (a whole array: a =
0); cols: a scanned length of 2^a and 2^b columns. Every candidate first passes the awkward
cases of reference.validate, then the class's own input against the float64/exact reference.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl

from cltune.core.space import LayoutSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import Target
from cltune.families.scan import family as fam
from cltune.families.scan.config import (
    CHAIN_GROUPS_PER_CU,
    GROUPS_PER_CU,
    ITEMS,
    VECTOR_ITEMS,
    WIDE_ITEMS,
    ScanConfig,
)
from cltune.families.scan.defaults import builtin_config
from cltune.families.scan.kernel import source_hash
from cltune.families.scan.launch import ScanLauncher, serving_min_chunk
from cltune.families.scan.reference import (
    compare,
    reference,
    roundings,
    sample,
    upload,
    validate,
)
from cltune.opencl.measure import Timed

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: the tuning input holds at most this many elements (the class's shape is cut to it)
MAX_TUNE_ELEMENTS = 1 << 28


@dataclass(frozen=True)
class ScanSpace(LayoutSpace):
    """Allowed values per ScanConfig field for one layout on one device."""

    info: DeviceInfo
    layout: str
    acc_bytes: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def size(self) -> int:
        return math.prod(len(v) for v in self.values.values())

    def local_bytes(self, cfg: ScanConfig) -> int:
        stage = (cfg.tile + cfg.tile // 32 + 1) * self.acc_bytes if cfg.stage == 1 else 0
        chain = 32 * 2 * 8 + 64 if cfg.chain else 0  # the look-back window and its state
        return stage + cfg.wg * (self.acc_bytes + 4) + chain

    def check(self, cfg: ScanConfig) -> str:
        """'' when cfg is feasible here, else why (nothing compiled)."""
        why = self.check_offered(cfg, self.info.max_wg)
        if why:
            return why
        if cfg.chain and not self.info.int64_atomics:
            return f"chain={cfg.chain}: no cl_khr_int64_base_atomics on this device"
        if cfg.chain == 2 and not self.info.is_nvidia:
            return "chain=2: volatile look-back loads are offered on NVIDIA only"
        if cfg.group_scan == 2 and not (self.info.is_nvidia and cfg.wg % 32 == 0):
            return "group_scan=2: warp shuffles need NVIDIA's inline PTX and whole warps"
        if cfg.stage == 2 and self.info.type != "cpu":
            return "stage=2: a work-item a chunk in vector registers is for CPUs"
        if cfg.stage == 1 and cfg.wg < 4:
            # a tile through __local memory for one or two work-items gains nothing (and
            # Debian's PoCL 3.1 miscompiles wg=2 staged: validation refuses its answers)
            return f"stage=1 with wg={cfg.wg}: staging needs wg >= 4"
        need = self.local_bytes(cfg)
        if need + 512 > self.info.local_mem:
            return f"{need} bytes of local memory > CL_DEVICE_LOCAL_MEM_SIZE={self.info.local_mem}"
        return ""


def make_space(info: DeviceInfo, layout: str, acc_bytes: int) -> ScanSpace:
    gpu = info.type != "cpu"
    lo = 32 if gpu and (info.warp_size or 32) >= 32 else 1
    top = min(info.max_wg, 1024 if gpu else 64)
    wgs = tuple(v for v in POW2 if lo <= v <= top) or (1,)
    if layout == "cols":
        items = (1, 2, 4, 8, 16) if gpu else (1, 4, 16, *WIDE_ITEMS)  # CPUs: wide strips
        vals = {"wg": wgs, "items": items, "stage": (0,), "group_scan": (0,),
                "groups_per_cu": GROUPS_PER_CU}
        return ScanSpace(info, layout, acc_bytes, {"layout": ("cols",), **vals, "chain": (0,)},
                         {"stage": "cols: a work-item scans its column alone",
                          "chain": "cols: reduce-then-scan"})
    nv = info.is_nvidia
    vals = {"wg": wgs, "items": ITEMS, "stage": (0, 1) if gpu else (0, 1, 2),
            "group_scan": (0, *((1,) if info.subgroups else ()), *((2,) if nv else ())),
            "groups_per_cu": GROUPS_PER_CU,
            "chain": (0, *((1, 2, 3) if nv else (1, 3))) if info.int64_atomics else (0,)}
    excluded = {} if info.subgroups else {"group_scan=1": "no subgroups on this device"}
    if not nv:
        excluded["group_scan=2"] = "warp shuffles: NVIDIA's inline PTX only"
    if not info.int64_atomics:
        excluded["chain=1"] = "no cl_khr_int64_base_atomics on this device"
    elif not nv:
        excluded["chain=2"] = "volatile look-back loads: offered on NVIDIA only"
    return ScanSpace(info, layout, acc_bytes, {"layout": ("rows",), **vals}, excluded)


def view_of(key: tuple[int, int], layout: str) -> tuple[int, int, int]:
    """The tuning input's (outer, r, inner) of a class, cut to MAX_TUNE_ELEMENTS."""
    a, b = key
    if layout == "rows":
        outer, r = 1 << a, 1 << b
        while outer * r > MAX_TUNE_ELEMENTS and outer > 1:
            outer //= 2
        return outer, min(r, MAX_TUNE_ELEMENTS), 1
    r, cols = 1 << a, 1 << b
    while r * cols > MAX_TUNE_ELEMENTS and r > 1:
        r //= 2
    return 1, r, cols


class ScanBench(Timed):
    """The tuning input of one class on the device and its reference; timed like every
    family's. Bytes count a read and a write of every element (the copy's traffic)."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, variant: fam.ScanVariant,
                 key: tuple[int, int]) -> None:
        self.ctx, self.queue, self.variant = ctx, queue, variant
        self._app_queue = None
        self.view = view_of(key, variant.layout)
        outer, r, inner = self.view
        self.n = outer * r * inner
        self.shape = (outer, r, inner)
        self.host = sample(variant, (self.n,), seed=11)
        self.x = upload(ctx, self.host)
        self.out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, self.n * variant.result_dtype.itemsize)
        self.nbytes = self.n * (variant.in_dtype.itemsize + variant.result_dtype.itemsize)
        self._want: tuple[np.ndarray, Any] | None = None

    def run(self, la: ScanLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        return la.enqueue(queue or self.queue, self.x, 0, self.out, 0, self.view)

    def validate(self, la: ScanLauncher, max_rel_error: float | None,
                 ) -> tuple[str, float | None]:
        chk = validate(la.in_own_chunks(), self.queue, self.n)
        if not chk.ok:
            return chk.reason, None
        if self._want is None:
            self._want = reference(self.variant, self.host.reshape(self.shape), 1)
        want, scale = self._want
        evs = self.run(la)
        got = np.empty(self.n, self.variant.result_dtype)
        cl.enqueue_copy(self.queue, got, self.out, wait_for=evs)
        p = la.plan(*self.view)
        mine = compare(self.variant, got.reshape(self.shape), want, scale,
                       roundings(self.variant, la.cfg, p.groups, p.chunk, self.view[1],
                                 p.lanes))
        if not mine.ok:
            return f"class input: {mine.reason}", None
        err = max(mine.max_rel_error, chk.max_rel_error)
        if max_rel_error is not None and err > max_rel_error:
            return f"error {err:.3g} > --max-rel-error {max_rel_error:.3g}", err
        return "", err


@dataclass
class ScanTarget(Target):
    """One variant of the scan family on one device. `restrict` limits the space."""

    family: ClassVar[str] = fam.NAME
    config_type: ClassVar[type] = ScanConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        self.scan = fam.variant_of(self.variant)
        self.source_hash = source_hash()
        self.acc_bytes = self.scan.acc_bytes

    def make_space(self) -> Any:
        return make_space(self.info, self.scan.layout, self.acc_bytes)

    def suggest(self, trial: optuna.Trial) -> ScanConfig:
        v = self.space.values
        d = {k: trial.suggest_categorical(k, v[k]) for k in ScanConfig.names()}
        if d["stage"] == 2:  # a work-item its chunk in vector registers: one shape
            d.update(wg=1, items=d["items"] if d["items"] in VECTOR_ITEMS else 8,
                     group_scan=0, chain=3 if d["chain"] else 0)
        if d["chain"] in (1, 2):
            d["groups_per_cu"] = CHAIN_GROUPS_PER_CU  # no effect there: one config, not six
        return ScanConfig(**d)

    def builtin(self) -> ScanConfig | None:
        cfg = builtin_config(self.info, self.scan.layout, self.acc_bytes)
        return cfg if not self.space.check(cfg) else None

    def _params(self, cfg: ScanConfig | None) -> dict | None:
        if cfg is None or self.space.check(cfg):
            return None
        # every field: to_dict leaves chain=0 out (stable keys), and a trial enqueued without
        # a parameter has the sampler draw it
        return {**cfg.to_dict(), "chain": cfg.chain}

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: ScanConfig | None) -> list[dict]:
        """The known best of this class, the previous class's winner, the builtin config (and
        on GPUs with 64-bit atomics two more chained passes), each where the space offers it."""
        known = None
        for r in known_rows:
            if getattr(r, "size_class", None) == self.size_class(key):
                try:
                    known = ScanConfig.from_mapping(r.config)  # type: ignore[attr-defined]
                except ValueError:
                    known = None
        out: list[dict] = []
        extra: list[ScanConfig] = []
        if self.scan.layout == "rows" and self.info.int64_atomics and self.info.type != "cpu":
            # the H200 sweeps' other winners beside the builtin (docs/logs/benchmarks-*.md: chained
            # passes of 256 x 16 with warp shuffles at 2^20, 128 x 16 on rows of 16, 128 x 32,
            # 256 x 32 by the tree: the tuner's pick at 2^12 and 2^20 with the warp's
            # look-back): a few trials over a space of thousands of points rarely draw them
            extra = [ScanConfig("rows", wg=256, items=16, stage=1, chain=1, group_scan=2),
                     ScanConfig("rows", wg=128, items=16, stage=1, chain=1),
                     ScanConfig("rows", wg=128, items=32, stage=1, chain=1),
                     ScanConfig("rows", wg=256, items=32, stage=1, chain=1)]
        for cfg in (known, previous, builtin_config(self.info, self.scan.layout,
                                                    self.acc_bytes), *extra):
            p = self._params(cfg)
            if p is not None and p not in out:
                out.append(p)
        return out

    def make_launcher(self, cfg: ScanConfig) -> ScanLauncher:
        return ScanLauncher(self.ctx, self.dev, self.info, self.scan, cfg,
                            serving_min_chunk(self.info))  # timed as served

    def bench(self, key: tuple[int, int]) -> ScanBench:
        return ScanBench(self.ctx, self.queue, self.scan, tuple(key))
