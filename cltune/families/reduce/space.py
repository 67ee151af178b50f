"""The feasible design space for (device, op, dtype): allowed values and device constraints.

Allowed values are lists per `Config` field, derived from the device: work-group sizes are
power-of-two multiples of the real subgroup size up to min(device max, kernel max); tiles are
bounded by local memory minus the kernel's static local memory; strategies are offered only
where a probe build shows their feature path really compiles. `check` rejects infeasible points
before anything is compiled.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import pyopencl as cl

from cltune.core import strategies
from cltune.core.ops import DTYPES, OPS, OpSpec
from cltune.core.space import ValuesSpace
from cltune.device.info import DeviceInfo
from cltune.families.reduce.config import ACCUMULATORS, Config, ConfigError
from cltune.families.reduce.kernel import (
    build,
    build_defines,
    kernel_source,
    kernel_subgroup_size,
    preferred_multiple,
)
from cltune.opencl.build import BuildError

ITEMS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
VECS = (1, 2, 4, 8, 16)
TILE_FACTORS = (1, 2, 4, 8, 16)
GROUPS_PER_CU = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: bytes of __local memory the kernel declares itself (single-pass flag), a safe upper bound
STATIC_LOCAL_RESERVE = 64
ACC_BYTES = {"float": 4, "double": 8, "int": 4, "uint": 4, "long": 8, "ulong": 8}


@dataclass(frozen=True)
class Space(ValuesSpace):
    """Allowed values per field plus the device limits that couple them."""

    error: ClassVar[type[ValueError]] = ConfigError
    free: ClassVar[tuple[str, ...]] = ("tile_factor",)

    spec: OpSpec
    device: DeviceInfo
    base_multiple: int  # the real subgroup size (or warp / preferred multiple)
    kernel_max_wg: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)  # strategy -> why not offered

    def check(self, cfg: Config) -> str:
        """'' when cfg is feasible on this device, else the reason (no compilation)."""
        if cfg.strategy not in self.values["strategy"]:
            why = self.excluded.get(cfg.strategy, "")
            return f"strategy {cfg.strategy} not offered here: {why}"
        wg_limit = min(self.device.max_wg, self.kernel_max_wg)
        if cfg.wg > wg_limit:
            return f"wg={cfg.wg} > device/kernel limit {wg_limit}"
        mult = strategies.get(cfg.strategy).wg_multiple(self.base_multiple)
        if cfg.wg % mult:
            return f"wg={cfg.wg} is not a multiple of the subgroup size {mult}"
        wide = self.spec.accumulation(self.device.fp64, cfg.acc) == "wide"
        acc = ACC_BYTES[self.spec.acc_cl_type(wide)]
        local = max(cfg.tile, cfg.wg) * acc + STATIC_LOCAL_RESERVE
        if local > self.device.local_mem:
            return (f"{local} bytes of local memory > "
                    f"CL_DEVICE_LOCAL_MEM_SIZE={self.device.local_mem}")
        if cfg.acc not in self.values["acc"]:
            return f"accumulator {cfg.acc} not offered for {self.spec}"
        if cfg.passes == 1 and acc == 8 and not self.device.int64_atomics:
            return ("passes=1 with a 64-bit accumulator needs cl_khr_int64_base_atomics "
                    "(partials cross work-groups through atomics)")
        return ""

    def representative(self, strategy: str, op: str, dtype: str) -> Config:
        """One feasible config of `strategy` for matrix runs (portability tests and table):
        the second-smallest work-group size (at least the strategy's multiple), tile 2 x wg where
        it fits, items 3, groups_per_cu 2; passes 1 with vec 4 or passes 2 with vec 1,
        alternating over the op x dtype matrix so both finishing and load paths run."""
        odd = (OPS.index(op) + DTYPES.index(dtype)) % 2 == 1
        wgs = self.values["wg"]
        wg = wgs[min(1, len(wgs) - 1)]
        s = strategies.get(strategy)
        wg = max(wg, s.wg_multiple(self.base_multiple))
        passes, vec = (1, 4) if odd else (2, 1)
        why = ""
        for p in dict.fromkeys((passes, 2)):  # passes=2 where single pass is not offered
            for tf in (2, 1):
                tile = wg * tf if s.uses_tile else 0
                cfg = Config(strategy, wg, tile, 3, vec, 2, p, "native")
                why = self.check(cfg)
                if not why:
                    return cfg
        raise ConfigError(f"no feasible {strategy} config: {why}")

    def configs(self) -> list[Config]:
        """Every feasible config (for exhaustive sweeps of a restricted space)."""
        out = []
        v = self.values
        for strat, wg, tf, items, vec, gpc, passes, acc in itertools.product(
                v["strategy"], v["wg"], v["tile_factor"], v["items"], v["vec"],
                v["groups_per_cu"], v["passes"], v["acc"]):
            tiled = strategies.get(strat).uses_tile
            if not tiled and tf != v["tile_factor"][0]:
                continue
            tile = wg * tf if tiled else 0
            try:
                cfg = Config(strat, wg, tile, items, vec, gpc, passes, acc)
            except ConfigError:
                continue
            if not self.check(cfg):
                out.append(cfg)
        return out

    def size(self) -> int:
        """Number of feasible configs, counted without listing the independent fields."""
        v = self.values
        free = len(v["items"]) * len(v["vec"]) * len(v["groups_per_cu"])
        n = 0
        for strat, wg, tf, acc in itertools.product(v["strategy"], v["wg"], v["tile_factor"],
                                                    v["acc"]):
            tiled = strategies.get(strat).uses_tile
            if not tiled and tf != v["tile_factor"][0]:
                continue
            tile = wg * tf if tiled else 0
            try:
                cfg = Config(strat, wg, tile, 1, 1, 1, 2, acc)
            except ConfigError:
                continue
            if not self.check(cfg):
                n += free * sum(not self.check(replace(cfg, passes=p)) for p in v["passes"])
        return n


def accumulators_for(spec: OpSpec, device: DeviceInfo, *, extended: bool) -> tuple[str, ...]:
    """native always; kahan for float sums/dots; wide where fp64 exists (and the input is not
    already double). Without `extended` only native (the fast default). A float16/float32
    sum or product's native accumulator is already double where fp64 exists, so there nothing
    else is offered (kahan in float would be less accurate than numpy's pairwise sum)."""
    accs = ["native"]
    if spec.widened and device.fp64:
        return ("native",)
    if extended and spec.is_float and spec.op in ("sum", "dot"):
        accs.append("kahan")
    if extended and spec.is_float and spec.is_arith and spec.dtype != "float64" and device.fp64:
        accs.append("wide")
    return tuple(a for a in ACCUMULATORS if a in accs)


def _offered(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec,
             base: int) -> tuple[tuple[str, ...], dict[str, str]]:
    """The registered strategies that may run here; for the others, why not. A strategy whose
    path must be compiled to be known (`needs` / own `source`) is built once to find out."""
    offered, excluded = [], {}
    for s in strategies.all_strategies():
        why = s.offered(spec, info)
        if not why and s.needs_probe_build:
            wg = s.wg_multiple(base)
            cfg = Config(strategy=s.name, wg=wg, tile=wg if s.uses_tile else 0, items=1, vec=1,
                         groups_per_cu=1)
            try:
                build(ctx, dev, info, spec, cfg)
            except BuildError as e:
                why = f"probe build failed: {e}"
        if why:
            excluded[s.name] = why
        else:
            offered.append(s.name)
    return tuple(offered), excluded


def make_space(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, *,
               extended_acc: bool = False) -> Space:
    """The feasible space of `spec` on one device, asking the device (never assuming)."""
    if spec.needs_fp64 and not info.fp64:
        raise ConfigError(f"{info.name} has no cl_khr_fp64: {spec} cannot run there")
    base = 0
    if info.subgroups:
        base = kernel_subgroup_size(ctx, dev, info, min(64, info.max_wg))
    base = base or info.warp_size or preferred_multiple(ctx, dev) or 1
    base = 1 << int(math.log2(base)) if base & (base - 1) else base
    kernel_wg = _kernel_max_wg(ctx, dev, info, spec)
    wg_max = min(info.max_wg, kernel_wg, 1024)
    wgs = tuple(w for w in (2**k for k in range(11)) if base <= w <= wg_max and w % base == 0)
    strategies, excluded = _offered(ctx, dev, info, spec, base)
    values = {
        "strategy": strategies,
        "wg": wgs,
        "tile_factor": TILE_FACTORS,
        "items": ITEMS,
        "vec": tuple(v for v in VECS if v <= info.vector_cap(spec.vector_element_bytes)),
        "groups_per_cu": GROUPS_PER_CU,
        "passes": (1, 2),
        "acc": accumulators_for(spec, info, extended=extended_acc),
    }
    return Space(spec, info, base, kernel_wg, values, excluded)


def _kernel_max_wg(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec) -> int:
    """CL_KERNEL_WORK_GROUP_SIZE of our stage-1 kernel built without a required size."""
    cfg = Config(strategy="local_tree", wg=1, tile=1, items=1, vec=1, groups_per_cu=1)
    opts = [*build_defines(spec, cfg, index64=False), "-DCLT_REQD_WG=0"]
    try:
        prg = cl.Program(ctx, kernel_source()).build(options=opts, devices=[dev])
        k = cl.Kernel(prg, "clt_stage1")
        return int(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev))
    except cl.Error:
        return info.max_wg
