"""An application's `GenericScanKernel` on one device as the tuner sees a kernel family (a
`families.base.Target`, like the expressions' `ExprTarget`): the space of work-group sizes and
chunks a compute unit, configs from trials and stored mappings, a launcher per config, a
benchmark input per size class, and the reference every config is checked against: the
one-work-item walk of the same expressions (`clt_gs_serial`), as vetting checks a call."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg

from cltune.core.pow2 import pow2_at_most
from cltune.core.space import ValuesSpace
from cltune.device.info import DeviceInfo
from cltune.families.base import MAX_SEEDS, Target, known_config
from cltune.families.scan import gscan_family
from cltune.families.scan.gscan_config import (
    GROUPS_PER_CU,
    ITEMS,
    LAYOUTS,
    MIN_TILED_WG,
    GScanConfig,
    GScanConfigError,
)
from cltune.families.scan.gscan_serve import RESERVE, builtin, fit, resolve
from cltune.opencl.build import BuildError
from cltune.opencl.measure import Timed
from cltune.opencl.sources import kernel_file, text_hash

if TYPE_CHECKING:  # the trial's type only: the worker's targets never import optuna
    import optuna


@dataclass(frozen=True)
class GScanSpace(ValuesSpace):
    """Allowed values per GScanConfig field on one device."""

    error: ClassVar[type[ValueError]] = GScanConfigError

    device: DeviceInfo
    itemsize: int
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def check(self, cfg: GScanConfig) -> str:
        """'' when cfg is feasible here, else why not (nothing compiled)."""
        for k, v in cfg.to_dict().items():
            if v not in self.values[k]:
                return f"{k}={v} not offered here"
        need = cfg.local_bytes(self.itemsize) + RESERVE
        if need > self.device.local_mem:
            return f"{need} bytes of __local memory > CL_DEVICE_LOCAL_MEM_SIZE"
        return ""

    def configs(self) -> list[GScanConfig]:
        v = self.values
        out = []
        for lay, w, g, k in itertools.product(v["layout"], v["wg"], v["groups_per_cu"],
                                              v["items"]):
            if (lay == "contiguous" and k != 1) or (lay == "tiled" and w < MIN_TILED_WG):
                continue
            c = GScanConfig(lay, w, g, k)
            if not self.check(c):
                out.append(c)
        return out

    def size(self) -> int:
        return len(self.configs())


def make_space(info: DeviceInfo, itemsize: int) -> GScanSpace:
    """Both layouts; work-groups from 1 (CPUs) or the warp (GPUs) to what the device allows
    (a config's tile must also fit its __local memory: `GScanSpace.check`), items 1-16
    (tiled), every GROUPS_PER_CU."""
    top = fit(GScanConfig("contiguous", pow2_at_most(min(1024, max(1, int(info.max_wg)))), 8,
                          1), info, itemsize).wg
    low = 1 if info.type == "cpu" else min(top, max(1, int(info.warp_size or 32)))
    wgs = tuple(w for w in (2 ** k for k in range(11)) if low <= w <= top)
    return GScanSpace(info, itemsize, {"layout": LAYOUTS, "wg": wgs,
                                       "groups_per_cu": GROUPS_PER_CU, "items": ITEMS})


class GScanLauncher:
    """One config of the kernel on one device: `built()` (BuildError with the compiler's
    words), `enqueue(queue, args, n)` -> the launches' last event."""

    def __init__(self, knl: Any, dev: cl.Device, cfg: GScanConfig) -> None:
        self.knl, self.dev, self.cfg = knl, dev, cfg
        self.b: Any = None

    def built(self) -> Any:
        if self.b is None:
            try:
                self.b = self.knl._built(self.dev, None, self.cfg)
            except cl.Error as e:  # the application's code (or this wg) does not build here
                raise BuildError(str(e)[:2000]) from None
        return self.b

    def enqueue(self, queue: cl.CommandQueue, args: tuple, n: int) -> list[cl.Event]:
        inv: list[Any] = []
        for d, v in zip(self.knl.parsed_args, args, strict=True):
            inv += [v.base_data, v.offset] if isinstance(d, VectorArg) else [v]
        return self.knl._enqueue(queue, self.built(), self.cfg, inv, args, n, None, [])


class GScanBench(Timed):
    """A size class's arguments on the device, what the serial walk leaves in them (the
    reference), and timing (the three launches, first start to last end)."""

    def __init__(self, target: GScanTarget, args: tuple[Any, ...], n: int) -> None:
        self.target, self.queue, self.n = target, target.queue, n
        knl = target.kernel
        if len(args) != len(knl.parsed_args):
            raise ValueError(f"sample arguments: expected {len(knl.parsed_args)}, "
                             f"got {len(args)}")
        self.vec = [i for i, d in enumerate(knl.parsed_args) if isinstance(d, VectorArg)]
        # the host copies every run starts from (an output statement may write its inputs)
        self.host = {i: args[i].get(queue=self.queue) for i in self.vec}
        self.args = [a.with_queue(self.queue) if isinstance(a, cla.Array) else a for a in args]
        self.nbytes = sum(int(self.host[i].nbytes) for i in self.vec)
        self.ref = self._serial()

    def _copies(self) -> list[Any]:
        out = list(self.args)
        for i in self.vec:
            out[i] = cla.to_device(self.queue, self.host[i])
        return out

    def _serial(self) -> dict[int, np.ndarray]:
        knl, q = self.target.kernel, self.queue
        mine = self._copies()
        b = knl._built(q.device, None, builtin(self.target.info, knl.dtype.itemsize))
        inv: list[Any] = []
        for d, v in zip(knl.parsed_args, mine, strict=True):
            inv += [v.base_data, v.offset] if isinstance(d, VectorArg) else [v]
        tmp = cla.empty(q, (max(1, self.n),), knl.dtype)
        tflag = cla.empty(q, (max(1, self.n),), np.uint8)
        with b.lock:
            b.serial.set_args(*inv, knl.index_dtype.type(self.n), tmp.data, tflag.data)
            cl.enqueue_nd_range_kernel(q, b.serial, (1,), (1,))
        return {i: mine[i].get() for i in self.vec}

    def run(self, la: GScanLauncher, queue: cl.CommandQueue | None = None) -> list[cl.Event]:
        q = queue or self.queue
        args = self.args if queue is None else [
            a.with_queue(q) if isinstance(a, cla.Array) else a for a in self.args]
        return la.enqueue(q, tuple(args), self.n)

    def validate(self, la: GScanLauncher, max_rel_error: float | None) -> tuple[str, float]:
        """('' or why not, 0.0): every array as the serial walk leaves it (floats within the
        rounding another order of combines may give)."""
        from cltune.families.scan.generic import (
            same_answers,  # lazy: generic imports this module's siblings
        )

        mine = self._copies()
        la.enqueue(self.queue, tuple(mine), self.n)
        bad = [self.target.kernel.parsed_args[i].name for i in self.vec
               if not same_answers(mine[i].get(), self.ref[i], self.n)]
        if bad:
            return f"arrays {', '.join(bad)} differ from the one-work-item walk's", float("inf")
        return "", 0.0


@dataclass
class GScanTarget(Target):
    """One GenericScanKernel (the variant is its fingerprint) on one device. `kernel` is the
    kernel object (its expressions are never read from the database); `sample_args` the
    arguments to tune on (default: `kernel.sample_args` at 2^bucket elements)."""

    kernel: Any = None
    sample_args: tuple[Any, ...] | None = None
    sample_size: int | None = None  # the element count of sample_args (default: the first
    # array's length)
    db: str | None = None

    family: ClassVar[str] = gscan_family.NAME
    config_type: ClassVar[type] = GScanConfig

    def setup(self) -> None:
        if self.kernel is None:
            raise ValueError("the gscan family needs the kernel object (its code is never read "
                             "from the database): tune it with knl.tune(...) or `cltune tune "
                             "--kernel module:attribute`")
        if self.kernel.fingerprint != self.variant:
            raise ValueError(f"variant {self.variant!r:.40} is not this kernel's fingerprint "
                             f"{self.kernel.fingerprint}")
        self.source_hash = text_hash(kernel_file("generic_scan.cl"))

    def make_space(self) -> GScanSpace:
        return make_space(self.info, self.kernel.dtype.itemsize)

    def suggest(self, trial: optuna.Trial) -> GScanConfig:
        v = self.space.values
        return GScanConfig(**{k: trial.suggest_categorical(k, v[k]) for k in GScanConfig.names()})

    def builtin(self) -> GScanConfig | None:
        cfg = builtin(self.info, self.kernel.dtype.itemsize)
        return cfg if not self.space.check(cfg) else None

    def seeds(self, known_rows: Iterable[object], bucket: int,
              previous: GScanConfig | None) -> list[dict]:
        """The stored best nearest this size class, the previous class's winner, the config
        derived from the device's tuned plain scan, the builtin one: those feasible here."""
        derived = resolve(self.info, "0" * len(self.variant), self.kernel.dtype.itemsize,
                          self.db)
        base = builtin(self.info, self.kernel.dtype.itemsize)
        cands: list[Any] = [known_config(known_rows, bucket), previous,
                            *(c.config for c in derived.choices), base,
                            replace(base, groups_per_cu=1)]
        out: list[dict] = []
        for c in cands:
            try:
                cfg = c if isinstance(c, GScanConfig) else GScanConfig.from_mapping(c)
            except (GScanConfigError, TypeError, ValueError):
                continue
            if not self.space.check(cfg) and cfg.to_dict() not in out:
                out.append(cfg.to_dict())
        return out[:MAX_SEEDS]

    def make_launcher(self, cfg: GScanConfig) -> GScanLauncher:
        return GScanLauncher(self.kernel, self.dev, cfg)

    def bench(self, bucket: int) -> GScanBench:
        args = self.sample_args
        if args is None:
            n = 1 << bucket
            args = self.kernel.sample_args(self.queue, n)
        else:
            n = self.sample_size or int(args[self.kernel.first_array_idx].shape[0])
        return GScanBench(self, tuple(args), n)
