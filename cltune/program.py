"""Config -> build options -> built kernels, cached per (context, op, config, index width).

After building, the kernels' real limits are read back (`CL_KERNEL_WORK_GROUP_SIZE`,
`CL_KERNEL_LOCAL_MEM_SIZE`, the subgroup count) and a build whose limits the config breaks is
rejected with a reason instead of being launched. pyopencl keeps built binaries in its on-disk
cache, so a second process skips the compiler.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np
import pyopencl as cl

from . import strategies
from .config import Config
from .device_info import DeviceInfo
from .ops import OpSpec
from .reduce_kernel import build_defines


class BuildError(RuntimeError):
    """A config that does not build, or whose kernel limits it breaks, on this device."""


@lru_cache(maxsize=1)
def kernel_source() -> str:
    return resources.files("cltune.kernels").joinpath("reduce.cl").read_text()


def program_source(cfg: Config) -> str:
    """kernels/reduce.cl, plus the strategy's own OpenCL for a strategy that lives outside it
    (registry code the application trusts; never text from a database or a file it names)."""
    extra = strategies.get(cfg.strategy).source
    return kernel_source() + ("\n" + extra if extra else "")


def source_hash() -> str:
    return hashlib.sha256(kernel_source().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Built:
    """A built config: its kernels and the limits read back from them."""

    spec: OpSpec
    config: Config
    index64: bool
    stage1: cl.Kernel
    stage2: cl.Kernel
    partials_per_group: int  # partials one stage-1 group writes
    probe: dict[str, bool]  # which paths the build compiled (strategies.PROBE_FLAGS)
    acc_itemsize: int
    #: which prepared launch last set each kernel's arguments ("stage1"/"stage2"): kernel
    #: arguments are state shared by every Launcher of this build (launch.py)
    owners: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def local_elems(self) -> int:
        """__local elements a stage-1 group needs (tile, or one slot per work-item)."""
        return max(self.config.tile, self.config.wg)


#: builds per context: an entry lives as long as the Context object it was built for (the
#: Launchers, reducers and tuners that hold it), then its programs and kernels are released
_cache: weakref.WeakKeyDictionary[cl.Context, dict[tuple, Built]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_ACC_SIZE = {"float": 4, "double": 8, "int": 4, "uint": 4, "long": 8, "ulong": 8}


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: Config,
          *, index64: bool = False) -> Built:
    """Build (or fetch from the cache) the kernels of `cfg` for `spec` on `dev`."""
    key = (dev.int_ptr, spec, cfg, index64, program_source(cfg))
    with _lock:
        hit = _cache.get(ctx, {}).get(key)
    if hit is not None:
        return hit
    built = _build(ctx, dev, info, spec, cfg, index64)
    with _lock:
        return _cache.setdefault(ctx, {}).setdefault(key, built)


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: Config,
           index64: bool) -> Built:
    if spec.needs_fp64 or (cfg.acc == "wide" and spec.is_float):
        if not info.fp64:
            raise BuildError("needs cl_khr_fp64, which the device lacks")
    opts = [*build_defines(spec, cfg, index64=index64, nv_ptx=info.is_nvidia), *std_options(info)]
    try:
        prg = cl.Program(ctx, program_source(cfg)).build(options=opts, devices=[dev])
    except cl.Error as e:  # RuntimeError subclasses: build failure with the log
        msg = str(e).strip().splitlines()
        raise BuildError("build failed: " + " | ".join(msg[-6:])[:800]) from None
    stage1, stage2 = prg.clt_stage1, prg.clt_stage2
    acc_size = _ACC_SIZE[spec.acc_cl_type(cfg.acc == "wide")]
    for k in (stage1, stage2):
        kwg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
        if cfg.wg > kwg:
            raise BuildError(f"wg={cfg.wg} exceeds the kernel's CL_KERNEL_WORK_GROUP_SIZE={kwg}")
        static = k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev)
        if static + max(cfg.tile, cfg.wg) * acc_size > info.local_mem:
            raise BuildError(
                f"local memory {static} static + {max(cfg.tile, cfg.wg) * acc_size} tile bytes "
                f"exceeds CL_DEVICE_LOCAL_MEM_SIZE={info.local_mem}"
            )
    flags = probe_paths(ctx, dev, prg)
    strat = strategies.get(cfg.strategy)
    if strat.needs and not flags[strat.needs]:
        raise BuildError(strat.missing or f"{cfg.strategy}: {strat.needs} path not compiled")
    per_group = 1
    if strat.partials == "work-item":
        per_group = cfg.wg
    elif strat.partials == "subgroup":
        per_group = int(stage1.get_sub_group_info(
            dev, cl.kernel_sub_group_info.SUB_GROUP_COUNT_FOR_NDRANGE, (cfg.wg,)))
    return Built(spec, cfg, index64, stage1, stage2, per_group, flags, acc_size)


def std_options(info: DeviceInfo) -> list[str]:
    """`-cl-std=CL3.0` where the device's OpenCL C is 3.x (compilers default to 1.2, which
    hides `__opencl_c_subgroups`); the version is parsed to numbers, never passed as text."""
    m = re.search(r"OpenCL C (\d+)\.(\d+)", info.opencl_c)
    if m and int(m.group(1)) >= 3:
        return ["-cl-std=CL3.0"]
    return []


def probe_paths(ctx: cl.Context, dev: cl.Device, prg: cl.Program) -> dict[str, bool]:
    """Run the build's clt_probe kernel: which feature paths were really compiled, by name."""
    q = cl.CommandQueue(ctx, dev)
    flags = np.zeros(len(strategies.PROBE_FLAGS), np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, flags.nbytes)
    prg.clt_probe(q, (1,), (1,), buf)
    cl.enqueue_copy(q, flags, buf)
    q.finish()
    return {name: bool(v) for name, v in zip(strategies.PROBE_FLAGS, flags, strict=True)}


def kernel_subgroup_size(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, wg: int) -> int:
    """The real subgroup size of our kernel at local size `wg`; 0 where subgroups don't exist."""
    if not info.subgroups:
        return 0
    spec = OpSpec("sum", "float32")
    cfg = Config(strategy="subgroup", wg=wg, tile=0, items=1, vec=1, groups_per_cu=1)
    prg = cl.Program(ctx, kernel_source()).build(
        options=[*build_defines(spec, cfg, index64=False), *std_options(info)], devices=[dev])
    try:
        return int(prg.clt_stage1.get_sub_group_info(
            dev, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, (wg,)))
    except (cl.Error, AttributeError):
        return 0


def preferred_multiple(ctx: cl.Context, dev: cl.Device) -> int:
    """CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of our stage-1 kernel (last resort)."""
    cfg = Config(strategy="local_tree", wg=1, tile=1, items=1, vec=1, groups_per_cu=1)
    opts = [*build_defines(OpSpec("sum", "float32"), cfg, index64=False), "-DCLT_REQD_WG=0"]
    prg = cl.Program(ctx, kernel_source()).build(options=opts, devices=[dev])
    return int(prg.clt_stage1.get_work_group_info(
        cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, dev))
