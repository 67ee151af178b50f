"""One custom expression (`cltune.ReductionKernel`) on one device, as the tuner sees a kernel
family (a `families.base.Target`, like the 1-D family's `ReduceTarget`): a space, configs from
trials and stored mappings, launchers, a benchmark input per size class with its host
reference, one evaluate call (check -> build -> validate -> time), starting points, result
keys.

The reference of a custom expression is pyopencl's own ReductionKernel on the same arguments; a
kernel with a `reference` (cltune.stats.api: numpy in float64) uses that instead."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl.array as cla

from cltune.core.space import ValuesSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import MAX_SEEDS, Target, known_config
from cltune.families.expr import family as expr_family
from cltune.families.expr.config import GROUPS_PER_CU, ITEMS, LAYOUTS, ExprConfig, ExprConfigError
from cltune.families.expr.defaults import builtin, builtin_near, single_pass_passes
from cltune.families.expr.kernel import kernel_wg_limit, template_hash
from cltune.families.expr.launch import ExprLauncher
from cltune.families.expr.reference import ExprBench, NoReference
from cltune.families.expr.serve import resolve
from cltune.opencl.build import BuildError
from cltune.opencl.expression import LOCAL_RESERVE, ExprSpec

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna

#: size classes up to 2^SMALL_BUCKET also start from a one-work-group config (launch-bound)
SMALL_BUCKET = 16


@dataclass(frozen=True)
class ExprSpace(ValuesSpace):
    """Allowed values per ExprConfig field on one device, and the limits that couple them."""

    error: ClassVar[type[ValueError]] = ExprConfigError

    device: DeviceInfo
    base_multiple: int
    kernel_max_wg: int
    itemsize: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def check(self, cfg: ExprConfig) -> str:
        """'' when cfg is feasible here, else why not (nothing compiled)."""
        for k, v in cfg.to_dict().items():
            if v not in self.values[k]:
                return f"{k}={v} not offered here"
        if cfg.wg > self.kernel_max_wg:
            return f"wg={cfg.wg} > device limit {self.kernel_max_wg}"
        if cfg.wg * self.itemsize + LOCAL_RESERVE > self.device.local_mem:
            return (f"{cfg.wg * self.itemsize} bytes of local memory > "
                    f"CL_DEVICE_LOCAL_MEM_SIZE={self.device.local_mem}")
        return ""

    def configs(self) -> list[ExprConfig]:
        v = self.values
        out = [ExprConfig(*p) for p in itertools.product(
            v["layout"], v["wg"], v["items"], v["groups_per_cu"], v["passes"])]
        return [c for c in out if not self.check(c)]

    def size(self) -> int:
        return len(self.configs())


def make_space(info: DeviceInfo, itemsize: int) -> ExprSpace:
    base = info.warp_size if info.type == "gpu" and info.warp_size else 1
    limit = min(info.max_wg, 1024)
    wgs = tuple(w for w in (2**k for k in range(11))
                if base <= w <= limit and w * itemsize + LOCAL_RESERVE <= info.local_mem)
    values = {"layout": LAYOUTS, "wg": wgs, "items": ITEMS, "groups_per_cu": GROUPS_PER_CU,
              "passes": single_pass_passes(info)}
    excluded = {} if 1 in values["passes"] else {
        "passes=1": "the single-pass finish exchanges struct partials with plain stores, "
                    "ordered across work-groups only by NVIDIA's membar.gl"}
    return ExprSpace(info, base, limit, itemsize, values, excluded)


def cap_wg(space: ExprSpace, limit: int) -> ExprSpace:
    """`space` without the work-group sizes above `limit` (the kernel's own maximum)."""
    if limit >= space.kernel_max_wg:
        return space
    wgs = tuple(w for w in space.values["wg"] if w <= limit) or space.values["wg"][:1]
    excluded = {**space.excluded, f"wg>{limit}": f"the kernel's CL_KERNEL_WORK_GROUP_SIZE is "
                                                f"{limit} here"}
    return replace(space, kernel_max_wg=limit, values={**space.values, "wg": wgs},
                   excluded=excluded)


def params_of(cfg: ExprConfig, space: ExprSpace) -> dict[str, object] | None:
    return None if space.check(cfg) else cfg.to_dict()


@dataclass
class ExprTarget(Target):
    """One expression (the variant is its fingerprint) on one device. `kernel` is the
    `cltune.ReductionKernel` (its spec, reference and sample inputs); `sample_args` the
    arguments to tune on (default: `kernel.sample_args` at 2^bucket elements)."""

    kernel: Any = None
    sample_args: tuple[Any, ...] | None = None
    db: str | None = None
    #: vetting only: a kernel without a reference (a `finish_expr` and no `reference`) is
    #: judged by building and launching it, its answers unchecked (tuning always checks)
    answers_optional: bool = False

    family: ClassVar[str] = expr_family.NAME
    config_type: ClassVar[type] = ExprConfig

    def setup(self) -> None:
        if self.kernel is None:
            raise ValueError("the expr family needs the kernel object (an expression is never "
                             "read from the database): tune it with knl.tune(...) or "
                             "`cltune tune --kernel module:attribute`")
        self.spec: ExprSpec = self.kernel.spec
        if self.spec.fingerprint != self.variant:
            raise ValueError(f"variant {self.variant!r:.40} is not this kernel's fingerprint "
                             f"{self.spec.fingerprint}")
        self.source_hash = template_hash()
        self._pyopencl_ref: Any = None

    def make_space(self) -> Any:
        """The device's space, its work-group sizes capped at what this expression's kernels
        take (one probe build at the largest offered, with one item per work-item: the fewest
        registers), so every offered config builds (the space is made in the worker)."""
        space = make_space(self.info, self.spec.dtype_out.itemsize)
        top = max(space.values["wg"], default=0)
        if top <= 1:
            return space
        probe = ExprConfig("strided", top, 1, space.values["groups_per_cu"][0],
                           max(space.values["passes"]))
        try:
            limit = kernel_wg_limit(self.ctx, self.dev, self.info, self.spec, probe)
        except BuildError:
            return space  # the expression itself does not build: every trial says so
        return cap_wg(space, limit)

    # ---- configs --------------------------------------------------------------------------
    def suggest(self, trial: optuna.Trial) -> ExprConfig:
        v = self.space.values
        return ExprConfig(**{k: trial.suggest_categorical(k, v[k]) for k in ExprConfig.names()})


    def builtin_for(self, bucket: int) -> ExprConfig | None:
        """What an untuned device runs for this size class (`builtin_by_size`), if in the
        space: the tuner's final re-measurement has it compete."""
        cfg = builtin_near(self.info, self.spec.dtype_out.itemsize, bucket)
        return cfg if params_of(cfg, self.space) is not None else None

    def builtin(self) -> ExprConfig | None:
        cfg = builtin(self.info, self.spec.dtype_out.itemsize)
        return cfg if params_of(cfg, self.space) is not None else None

    def seeds(self, known_rows: Iterable[object], bucket: int,
              previous: ExprConfig | None) -> list[dict]:
        """The stored best nearest this size class, the previous class's winner, for small
        inputs the builtin config as one work-group (one launch), the config derived from the
        device's tuned sum, the builtin one: those feasible here (the builtin config competes
        in the final re-measurement anyway)."""
        base = builtin(self.info, self.spec.dtype_out.itemsize)
        cands: list[Any] = [known_config(known_rows, bucket), previous]
        if bucket <= SMALL_BUCKET:
            cands.append(replace(base, groups_per_cu=0))
        derived = resolve(self.info, "0" * expr_family.FINGERPRINT_HEX,
                          self.spec.dtype_out.itemsize, self.db)
        cands += [c.config for c in derived.choices]
        cands.append(base)
        out: list[dict] = []
        for c in cands:
            try:
                cfg = c if isinstance(c, ExprConfig) else ExprConfig.from_mapping(c)
            except (ExprConfigError, TypeError, ValueError):
                continue
            p = params_of(cfg, self.space)
            if p is not None and p not in out:
                out.append(p)
        return out[:MAX_SEEDS]

    # ---- running --------------------------------------------------------------------------
    def make_launcher(self, cfg: ExprConfig) -> ExprLauncher:
        return ExprLauncher(self.ctx, self.dev, self.info, self.spec, cfg)

    def bench(self, bucket: int) -> ExprBench:
        args = self.sample_args
        if args is None:
            args = self.kernel.sample_args(self.queue, 1 << bucket)
        return ExprBench(self, tuple(args), 1 << bucket)

    def reference(self, args: tuple[Any, ...], lo: int, hi: int) -> Any:
        """The expected result over elements lo..hi-1 (host value of dtype_result)."""
        ref = getattr(self.kernel, "reference", None)
        if ref is not None:
            host = [a.get() if isinstance(a, cla.Array) else a for a in args]
            return ref(host, lo, hi)
        if self.spec.finish_expr != "a":
            raise NoReference("a kernel with finish_expr needs a `reference` to be tuned")
        if self._pyopencl_ref is None:
            from pyopencl.reduction import (
                # lazy: pyopencl's reduction module, only for a finish_expr reference
                ReductionKernel as PyopenclReductionKernel,
            )

            s = self.spec
            self._pyopencl_ref = PyopenclReductionKernel(
                self.ctx, s.dtype_out, s.neutral, s.reduce_expr, s.map_expr,
                list(s.arguments), preamble=s.preamble, options=list(s.options) or None)
        return self._pyopencl_ref(*args, queue=self.queue,
                                  range=slice(lo, hi, 1)).get()

    def rtol(self, la: ExprLauncher, n: int) -> float:
        """Tolerance for float results: elements one accumulator folds in sequence, plus the
        tree depth, in units of the result type's epsilon (twice: the reference rounds too)."""
        dt = self.spec.dtype_result
        floats = [dt.fields[k][0] for k in dt.names] if dt.names else [dt]
        eps = max((np.finfo(f).eps for f in floats if f.kind in "fc"), default=0.0)
        p = la.plan(max(n, 1))
        per_unit = 1 if la.cfg.layout == "contiguous" else la.cfg.wg
        seq = p.chunk // max(1, per_unit * la.cfg.items) + 1
        return float(2 * eps * (seq + 2 * math.log2(max(n, 2)) + 16))

