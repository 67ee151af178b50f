"""An expression reduction along an axis (`cltune.ReductionKernel` run by kernels/expr_axis.cl,
cltune.stats.api' `axis=`) as the tuner sees a kernel family: variant `<fingerprint>/<layout>`,
size classes `2^ax2^b` (core.shapes); a space per device, configs from trials and stored
mappings (always through `AxisExprConfig`'s validation), a bench per size class
(expr_axis/reference.py: validated against the kernel's reference and the heuristic's outputs),
one evaluate call (check -> build -> validate -> time), starting points, and the heuristic
(`expr_axis/defaults.choose`) as the builtin config that competes in every run.

`tune_along` is the library side of `knl.tune(x, axis=k)`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from cltune.core.shapes import nearest
from cltune.core.space import LayoutSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import Target
from cltune.families.expr_axis import family as fam
from cltune.families.expr_axis.api import AxisReducer
from cltune.families.expr_axis.config import (
    GROUPS_PER_CU,
    GROUPS_PER_CU_VALUES,
    ITEMS,
    MAX_WG,
    STREAM_STRIPS,
    STRIPS,
    AxisExprConfig,
)
from cltune.families.expr_axis.defaults import STREAM_PRIVATE_BYTES, choose, stream_bytes
from cltune.families.expr_axis.kernel import (
    CASCADE_BLOCK,
    CASCADE_DEPTH,
    CASCADE_FAN,
    kernel_wg_limit,
    restarts,
    streams,
    template_hash,
)
from cltune.families.expr_axis.launch import device_plan
from cltune.families.expr_axis.reference import AxisLaunch, ExprAxisBench, View
from cltune.opencl.build import BuildError
from cltune.opencl.expression import LOCAL_RESERVE, ExprSpec

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

#: a work-item's accumulators (strip x items) stay within this many bytes
MAX_ACC_BYTES = 2048
#: starting points per study (the stored best, the previous class's, the heuristic and its
#: neighbours); the sampler's own trials follow
MAX_SEEDS = 8


@dataclass(frozen=True)
class AxisExprSpace(LayoutSpace):
    """Allowed values per AxisExprConfig field for one layout on one device."""

    error: ClassVar[type[ValueError]] = ValueError

    info: DeviceInfo
    layout: str
    itemsize: int  # accumulator bytes
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def check(self, cfg: AxisExprConfig) -> str:
        """'' when cfg is feasible here, else why not (nothing compiled)."""
        why = self.check_offered(cfg, self.info.max_wg)
        if why:
            return why
        if cfg.lanes > 1 and cfg.wg * self.itemsize + LOCAL_RESERVE > self.info.local_mem:
            return (f"{cfg.wg * self.itemsize} bytes of local memory > "
                    f"CL_DEVICE_LOCAL_MEM_SIZE={self.info.local_mem}")
        if cfg.streamed:
            if cfg.strip not in self.values.get("strip", ()):
                return "streamed strips: CPUs, within the private bytes of a strip"
            if cfg.lanes != 1:
                return "a streamed strip has one lane"
            return ""
        if cfg.strip * cfg.items * self.itemsize > MAX_ACC_BYTES:
            return f"strip x items x {self.itemsize} bytes of accumulators > {MAX_ACC_BYTES}"
        return ""

    def configs(self) -> list[AxisExprConfig]:
        names = list(self.values)
        out = []
        for p in itertools.product(*self.values.values()):
            kw = dict(zip(names, p, strict=True))
            if kw["lanes"] <= kw["wg"] and (kw["lanes"] == 1 or kw["strip"] <= STRIPS[-1]):
                cfg = AxisExprConfig(self.layout, **kw)
                if not self.check(cfg):
                    out.append(cfg)
        return out

    def size(self) -> int:
        return len(self.configs())


def make_space(info: DeviceInfo, layout: str, itemsize: int,
               stream: bool = False, cascade: bool = False) -> AxisExprSpace:
    """Work-groups of every power of two the device allows (up to 128 on CPUs, where a group
    runs on one core; GPUs keep the small ones: the heuristic narrows groups to short axes),
    lanes up to the group, strips for cols only; on CPUs with `stream` the streamed strips too
    (one lane each), those whose private accumulators (with the rounding cascade: `cascade`)
    fit defaults.STREAM_PRIVATE_BYTES."""
    top = min(info.max_wg, MAX_WG, 1024 if info.type == "gpu" else 128)
    pow2 = tuple(2**k for k in range(11) if 2**k <= top) or (1,)
    wide = tuple(s for s in STREAM_STRIPS
                 if stream_bytes(s, itemsize, cascade) <= STREAM_PRIVATE_BYTES)
    strips = STRIPS + (wide if stream and info.type == "cpu" else ())
    vals: dict[str, tuple] = {"wg": pow2, "lanes": pow2, "items": ITEMS,
                              "strip": strips if layout == "cols" else (1,),
                              "groups_per_cu": GROUPS_PER_CU_VALUES}
    excluded = {} if layout == "cols" else {"strip": "rows: one output per lane group"}
    return AxisExprSpace(info, layout, itemsize, vals, excluded)


def capped_space(ctx: Any, dev: Any, info: DeviceInfo, spec: Any,
                 layout: str) -> AxisExprSpace:
    """The device's space for `spec`, its work-group sizes capped at what the kernels of its
    heaviest config (the most accumulators a work-item may hold) take at the largest offered
    size: one probe build, so every offered config builds (the space is made in the worker);
    on CPUs the streamed strips whose heaviest config does not take the largest group left are
    dropped (a probe each, the widest first). Probes are kept per driver (`kept_limit`)."""
    space = make_space(info, layout, spec.dtype_out.itemsize, True, restarts(spec))
    top = max(space.values["wg"])
    if top <= 1:
        return space
    fits = [(s * i, s, i) for s in space.values["strip"] for i in space.values["items"]
            if s <= STRIPS[-1] and s * i * space.itemsize <= MAX_ACC_BYTES]
    _, strip, items = max(fits)
    limit = top
    for lanes in sorted({1, min(top, 32)}):  # without and with the lanes' __local tree
        probe = AxisExprConfig(layout, wg=top, lanes=lanes, items=items, strip=strip,
                               groups_per_cu=space.values["groups_per_cu"][0])
        try:
            limit = min(limit, kernel_wg_limit(ctx, dev, info, spec, probe))
        except BuildError:
            return space  # the expression itself does not build: every trial says so
    values, excluded = dict(space.values), dict(space.excluded)
    if limit < top:
        wgs = tuple(w for w in values["wg"] if w <= limit) or values["wg"][:1]
        values["wg"] = wgs
        values["lanes"] = tuple(v for v in values["lanes"] if v <= max(wgs))
        excluded[f"wg>{limit}"] = f"the kernel's CL_KERNEL_WORK_GROUP_SIZE is {limit} here"
    # streamed strips (CPUs): the widest first, dropped while its heaviest config does not take
    # the largest group left (Intel's CPU runtime packs 16 work-items into its vectors, so a
    # strip's private accumulators count 16 times: var's strip of 1024 gets a group of 1)
    wg_top = max(values["wg"])
    for wide in sorted((v for v in values["strip"] if v > STRIPS[-1]), reverse=True):
        probe = AxisExprConfig(layout, wg=wg_top, lanes=1, items=max(values["items"]),
                               strip=wide, groups_per_cu=values["groups_per_cu"][0])
        try:
            got = kernel_wg_limit(ctx, dev, info, spec, probe)
        except BuildError as e:
            got, why = 0, f"its probe build failed ({str(e)[:80]})"
        else:
            why = f"its kernel's CL_KERNEL_WORK_GROUP_SIZE is {got} here"
        if got >= wg_top:
            break
        values["strip"] = tuple(v for v in values["strip"] if v != wide)
        excluded[f"strip={wide}"] = f"a streamed strip of {wide}: {why}"
    if values == space.values:
        return space
    return replace(space, values=values, excluded=excluded)


@dataclass
class ExprAxisTarget(Target):
    """One expression along one layout (variant `<fingerprint>/<layout>`) on one device.
    `kernel` is the `cltune.ReductionKernel`; `sample_args` / `sample_view` the arguments to
    tune on and their (outer, r, inner) view (default: `kernel.sample_args` of the class)."""

    kernel: Any = None
    sample_args: tuple[Any, ...] | None = None
    sample_view: View | None = None
    db: str | None = None

    family: ClassVar[str] = fam.NAME
    config_type: ClassVar[type] = AxisExprConfig
    shapes_2d: ClassVar[bool] = True

    def setup(self) -> None:
        fp, self.layout = fam.split_variant(self.variant)
        if self.kernel is None:
            raise ValueError("the expr_axis family needs the kernel object (an expression is "
                             "never read from the database): tune it with "
                             "knl.tune(x, axis=...)")
        self.spec: ExprSpec = self.kernel.spec
        if self.spec.fingerprint != fp:
            raise ValueError(f"variant {self.variant!r:.60} is not of this kernel "
                             f"(fingerprint {self.spec.fingerprint})")
        self.reducer = AxisReducer(self.ctx, self.dev, self.spec)  # launches and scratch
        self.source_hash = template_hash()
        self._view: View | None = None  # the input of the class being tuned (set by bench)

    def make_space(self) -> Any:
        return capped_space(self.ctx, self.dev, self.info, self.spec, self.layout)

    # ---- configs --------------------------------------------------------------------------
    def suggest(self, trial: optuna.Trial) -> AxisExprConfig:
        v = self.space.values
        kw = {k: trial.suggest_categorical(k, v[k]) for k in v}
        kw["lanes"] = 1 if kw["strip"] > STRIPS[-1] else min(kw["wg"], kw["lanes"])
        return self._canonical(AxisExprConfig(self.layout, **kw), self._view)

    def _canonical(self, cfg: AxisExprConfig, view: View | None) -> AxisExprConfig:
        """One config per behaviour: groups_per_cu only matters where the axis is split."""
        if view is not None and cfg.groups_per_cu != GROUPS_PER_CU:
            top = replace(cfg, groups_per_cu=max(GROUPS_PER_CU_VALUES))
            if device_plan(top, self.info, *view).split == 1:
                return replace(cfg, groups_per_cu=GROUPS_PER_CU)
        return cfg

    @staticmethod
    def neighbours(cfg: AxisExprConfig) -> list[AxisExprConfig]:
        """Configs one step from cfg (narrower and wider groups, more or fewer accumulators,
        for cols narrower strips with more accumulators, more or fewer groups along a split
        axis, more or fewer lanes), nearest first: the heuristic is a good start, and a few
        trials near it find more than the sampler's first random points (on Intel's CPU
        runtime, argmax along 2^16 x 2^8 rows ran 1.5x faster at half the group; var along
        2^20 x 2^4 columns 1.6x faster with a quarter of the strip and twice the items)."""
        steps: list[dict[str, int]] = [
            {"wg": cfg.wg // 2, "lanes": min(cfg.lanes, max(1, cfg.wg // 2))},
            {"items": cfg.items * 2}, {"items": cfg.items // 2},
            {"strip": cfg.strip // 2, "items": cfg.items * 2},
            {"strip": cfg.strip // 4, "items": cfg.items * 2},
            {"wg": cfg.wg * 2}, {"groups_per_cu": cfg.groups_per_cu * 4},
            {"groups_per_cu": cfg.groups_per_cu // 4}, {"lanes": cfg.lanes * 2},
            {"lanes": cfg.lanes // 2}]
        out = []
        for kw in steps:
            try:
                out.append(replace(cfg, **kw))
            except ValueError:  # AxisExprConfigError: a step off the config's range
                continue
        return out


    def _params(self, cfg: AxisExprConfig | None) -> dict | None:
        if cfg is None or self.space.check(cfg):
            return None
        return {k: getattr(cfg, k) for k in self.space.values}

    def builtin_for(self, key: tuple[int, int]) -> AxisExprConfig | None:
        """The heuristic's config for this class (what an untuned device runs), if it is a
        point of this space."""
        view = self._view_of(key)
        cfg = choose(self.info, *view, self.spec.dtype_out.itemsize, *streams(self.spec))
        return cfg if self._params(cfg) is not None else None

    def _view_of(self, key: tuple[int, int]) -> View:
        """The view a class is tuned on: the sample arguments' when they are of the class."""
        v = self.sample_view
        if v is not None and fam.class_of_view(*v) == (self.layout, key):
            return v
        return fam.view_of(self.layout, key)

    def builtin(self) -> AxisExprConfig | None:
        return self.builtin_for((12, 12))

    def seeds(self, known_rows: Iterable[object], key: tuple[int, int],
              previous: AxisExprConfig | None) -> list[dict]:
        """The stored best of the class nearest this one, the previous class's winner, the
        heuristic's config for the class and its neighbours: those feasible here, at most
        MAX_SEEDS (they count against the trials)."""
        known = []
        for r in known_rows:
            try:
                k = fam.shape_key_of(getattr(r, "size_class", ""))
                known.append((k, AxisExprConfig.from_mapping(r.config)))  # type: ignore[attr-defined]
            except (ValueError, TypeError):
                continue
        best = nearest(key, [k for k, _ in known])
        heuristic = self.builtin_for(key)
        cands = [c for k, c in known if k == best][:1] + [previous, heuristic]
        if heuristic is not None:
            view = self._view_of(key)
            cands += [self._canonical(c, view) for c in self.neighbours(heuristic)]
        out: list[dict] = []
        for c in cands:
            p = self._params(c)
            if p is not None and p not in out:
                out.append(p)
        return out[:MAX_SEEDS]

    # ---- running --------------------------------------------------------------------------
    def make_launcher(self, cfg: AxisExprConfig) -> AxisLaunch:
        return AxisLaunch(self, cfg)

    def select(self, key: tuple[int, int]) -> None:
        """The class being tuned (suggestions are made canonical for its view)."""
        self._view = self._view_of(key)

    def bench(self, key: tuple[int, int]) -> ExprAxisBench:
        self.select(key)
        view = self._view
        if self.sample_args is not None and view == self.sample_view:
            args = self.sample_args
        else:
            args = self.kernel.sample_args(self.queue, math.prod(view))
        return ExprAxisBench(self, tuple(args), view)

    def rtol(self, la: AxisLaunch, view: View) -> float:
        """Tolerance for float results: the roundings an element meets on its way to the
        result (`chain`) in units of the accumulator's epsilon, plus the result's rounding
        (twice: the reference rounds too)."""
        def eps(dt: np.dtype) -> float:
            fl = [dt.fields[k][0] for k in dt.names] if dt.names else [dt]
            return max((float(np.finfo(f).eps) for f in fl if f.kind in "fc"), default=0.0)

        return 2 * (4 * eps(self.spec.dtype_out) * (chain(la.cfg, la.plan(view), self.spec)
                                                    + 16)
                    + 4 * eps(self.spec.dtype_result))


def chain(cfg: AxisExprConfig, plan: Any, spec: ExprSpec) -> int:
    """The most roundings an element meets (the depth of kernels/expr_axis.cl's summation
    tree, Higham's bound in units of eps): its accumulator's chain, the items combined, and
    where floating-point accumulators restart (`restarts`), level 1 and the binary counter's
    pairwise levels (the last slot's overflow in sequence); then the lanes' tree and the split's
    partials (pairwise too, or in sequence where nothing restarts)."""
    steps = -(-plan.chunk // max(1, cfg.lanes * cfg.items))
    lanes = math.ceil(math.log2(max(1, cfg.lanes)))
    if not restarts(spec):
        return steps + cfg.items + lanes + plan.split
    blocks = -(-steps // CASCADE_BLOCK)
    pushes = -(-blocks // CASCADE_FAN)
    top = 1 << (CASCADE_DEPTH - 1)
    pairwise = math.ceil(math.log2(max(1, min(pushes, top)))) + pushes // top
    split = math.ceil(math.log2(max(1, plan.split))) + plan.split // top
    return (min(steps, CASCADE_BLOCK) + cfg.items + min(blocks, CASCADE_FAN) + pairwise
            + CASCADE_DEPTH + lanes + split)
