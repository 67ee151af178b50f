"""The interface of kernels/reduce.cl, in one place: the `-D` build options a validated config
becomes, the kernels' argument lists by name (never by position), and the build: kernels
cached per (context, op, config, index width), the limits read back from them (the subgroup
count of a subgroup strategy's partials) and the probe of which paths were compiled.

    >>> STAGE1_PLAIN.out, STAGE1_DOT.y
    (7, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from cltune.core import strategies
from cltune.core.ops import OpSpec
from cltune.device.info import DeviceInfo
from cltune.families.reduce.config import Config
from cltune.opencl.build import BuildError, check_limits, compile_program, run_probe, std_options
from cltune.opencl.caches import ContextCache
from cltune.opencl.kernel_args import KernelArgs
from cltune.opencl.sources import acc_defines, kernel_file, text_hash


def _stage1(two_inputs: bool) -> KernelArgs:
    """`clt_stage1`'s arguments; `y`/`yoff` exist for two inputs (dot) only."""
    y = ("y", "yoff") if two_inputs else ()
    return KernelArgs(("x", "xoff", *y, "n", "chunk", "partials", "tile", "ticket", "out"))


STAGE1_PLAIN = _stage1(False)
STAGE1_DOT = _stage1(True)
#: `clt_stage2(partials, m, out, tile)`
STAGE2 = KernelArgs(("partials", "m", "out", "tile"))
STAGE2_DTYPES = [None, np.uint32, None, None]


def stage1_args(spec: OpSpec) -> KernelArgs:
    return STAGE1_DOT if spec.n_inputs == 2 else STAGE1_PLAIN


def acc_mode(spec: OpSpec, cfg: Config, fp64: bool) -> str:
    """How `cfg` accumulates `spec` on a device with or without fp64: `OpSpec.accumulation`
    (a float16/float32 sum or product's `native` is double there, else compensated)."""
    return spec.accumulation(fp64, cfg.acc)


def build_defines(spec: OpSpec, cfg: Config, *, index64: bool, nv_ptx: bool = False,
                  fp64: bool = True) -> list[str]:
    """The `-D` options for a kernel build: produced here only, from validated values only."""
    if not isinstance(cfg, Config) or not isinstance(spec, OpSpec):
        raise TypeError("build_defines takes a validated OpSpec and Config")
    cfg.validate()  # a Config is frozen, but re-check: this is the door to the compiler

    defs = {
        **acc_defines(spec, fp64, cfg.acc),
        "CLT_STRATEGY": strategies.get(cfg.strategy).kernel_id,
        "CLT_HOOK": int(bool(strategies.get(cfg.strategy).source)),
        "CLT_WG": cfg.wg,
        "CLT_LANES": cfg.lanes,
        "CLT_ITEMS": cfg.items,
        "CLT_VEC": cfg.vec,
        "CLT_PASSES": cfg.passes,
        "CLT_INDEX64": int(index64),
        "CLT_NV_PTX": int(nv_ptx),
    }
    return [f"-D{k}={v}" for k, v in defs.items()]


def kernel_source() -> str:
    return kernel_file("reduce.cl")


def program_source(cfg: Config) -> str:
    """kernels/reduce.cl, plus the strategy's own OpenCL for a strategy that lives outside it
    (registry code the application trusts; never text from a database or a file it names)."""
    extra = strategies.get(cfg.strategy).source
    return kernel_source() + ("\n" + extra if extra else "")


def source_hash() -> str:
    return text_hash(kernel_source())


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


_builds: ContextCache[Built] = ContextCache()
_ACC_SIZE = {"float": 4, "double": 8, "int": 4, "uint": 4, "long": 8, "ulong": 8}


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: Config,
          *, index64: bool = False) -> Built:
    """Build (or fetch from the cache) the kernels of `cfg` for `spec` on `dev`."""
    key = (dev.int_ptr, spec, cfg, index64, info.fp64, program_source(cfg))  # fp64: acc
    return _builds.get(ctx, key, lambda: _build(ctx, dev, info, spec, cfg, index64))


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: Config,
           index64: bool) -> Built:
    if spec.needs_fp64 or (cfg.acc == "wide" and spec.is_float):
        if not info.fp64:
            raise BuildError("needs cl_khr_fp64, which the device lacks")
    opts = [*build_defines(spec, cfg, index64=index64, nv_ptx=info.is_nvidia, fp64=info.fp64),
            *std_options(info)]
    prg = compile_program(ctx, dev, program_source(cfg), opts)
    stage1, stage2 = prg.clt_stage1, prg.clt_stage2
    acc_size = _ACC_SIZE[spec.acc_cl_type(acc_mode(spec, cfg, info.fp64) == "wide")]
    for k in (stage1, stage2):
        check_limits(k, dev, info, cfg.wg, max(cfg.tile, cfg.wg) * acc_size)
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


def probe_paths(ctx: cl.Context, dev: cl.Device, prg: cl.Program) -> dict[str, bool]:
    """Run the build's clt_probe kernel: which feature paths were really compiled, by name."""
    flags = run_probe(ctx, dev, prg.clt_probe, len(strategies.PROBE_FLAGS))
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
