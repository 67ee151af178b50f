"""The interface of kernels/axis.cl: build options from a validated AxisConfig, argument lists
by name, and builds cached per context (cltune.opencl.build and .caches).

The program is kernels/reduce.cl's header (its 1-D kernels left out with -DCLT_NO_1D=1)
followed by kernels/axis.cl.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.core.ops import OpSpec
from cltune.device.info import DeviceInfo
from cltune.families.axis.config import AxisConfig
from cltune.opencl.build import BuildError, check_limits, compile_program, run_probe, std_options
from cltune.opencl.caches import ContextCache
from cltune.opencl.kernel_args import KernelArgs
from cltune.opencl.sources import acc_defines, kernel_file, text_hash

_ACC_SIZE = {"float": 4, "double": 8, "int": 4, "uint": 4, "long": 8, "ulong": 8}
_INDEX_NAMES = ("xoff", "yoff", "rows", "len", "chunk", "outer", "R", "inner", "ctiles", "n",
                "m")


def _args(names: tuple[str, ...]) -> KernelArgs:
    return KernelArgs(names)


def _y(spec: OpSpec) -> tuple[str, ...]:
    return ("y", "yoff") if spec.n_inputs == 2 else ()


def rows_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "rows", "len", "split", "chunk", "aligned",
                  "partials", "tickets", "out", "tile"))


def cols_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "outer", "R", "inner", "split", "chunk", "ctiles",
                  "aligned", "partials", "tickets", "out", "tile"))


def segs_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "n", "offs", "off64", "m", "init", "err",
                  "long_list", "long_count", "out", "tile"))


def segs_long_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "offs", "off64", "init", "long_list", "long_count",
                  "ticket", "out", "tile"))


ROWS_FIN = _args(("partials", "rows", "split", "out", "tile"))
def cols_stream_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "outer", "R", "inner", "split", "chunk", "ctiles",
                  "aligned", "partials", "out"))


def cols_narrow_args(spec: OpSpec) -> KernelArgs:
    return _args(("x", "xoff", *_y(spec), "outer", "R", "inner", "split", "chunk", "partials",
                  "out"))


COLS_FIN = _args(("partials", "outer", "inner", "split", "fcols", "out", "tile"))


def scalar_dtypes(args: KernelArgs, index_dtype: type, acc_dtype: np.dtype) -> list:
    """For `Kernel.set_scalar_arg_dtypes`: indices as index_dtype, counts as uint32."""
    out: list = []
    for n in args.names:
        if n in _INDEX_NAMES:
            out.append(index_dtype)
        elif n in ("split", "off64", "aligned", "fcols"):
            out.append(np.uint32)
        elif n == "init":
            out.append(acc_dtype)
        else:
            out.append(None)
    return out


def axis_source() -> str:
    return kernel_file("reduce.cl") + "\n" + kernel_file("axis.cl")


def source_hash() -> str:
    return text_hash(axis_source())


def acc_type(spec: OpSpec, fp64: bool = True) -> str:
    """The accumulator's OpenCL type on a device with or without fp64 (float16/float32 sums
    and products accumulate in double where it has fp64: `OpSpec.accumulation`)."""
    return spec.acc_cl_type(spec.accumulation(fp64) == "wide")


def acc_bytes(spec: OpSpec, fp64: bool = True) -> int:
    return _ACC_SIZE[acc_type(spec, fp64)]


def build_defines(spec: OpSpec, cfg: AxisConfig, *, index64: bool,
                  nv_ptx: bool = False, fp64: bool = True) -> list[str]:
    """The `-D` options of a build: produced here only, from validated values only."""
    if not isinstance(cfg, AxisConfig) or not isinstance(spec, OpSpec):
        raise TypeError("build_defines takes a validated OpSpec and AxisConfig")
    cfg.validate()  # frozen, but re-checked: this is the door to the compiler
    defs = {
        **acc_defines(spec, fp64),
        "CLT_NO_1D": 1,
        "CLT_WG": cfg.wg,
        "CLT_ITEMS": cfg.items,
        "CLT_VEC": cfg.vec,
        "CLT_AX_LANES": max(1, cfg.lanes),
        "CLT_AX_COLS": max(1, cfg.cols),
        "CLT_AX_WARP": cfg.warp,
        "CLT_AX_ONEPASS": cfg.onepass,
        "CLT_AX_LOCKSTEP": cfg.lockstep,
        "CLT_AX_STREAM": cfg.stream,
        "CLT_PASSES": 1 if cfg.onepass else 2,  # partials through atomics in one pass
        "CLT_INDEX64": int(index64),
        "CLT_NV_PTX": int(nv_ptx),
    }
    return [f"-D{k}={v}" for k, v in defs.items()]


def builds_packed(info: DeviceInfo, cfg: AxisConfig) -> bool:
    """Whether a build has clt_ax_packed (short rows packed into vectors): CPUs, a work-item
    a row, vectors of 2 or more. Other builds leave it out (it is compiled with every build
    that has it, launched or not)."""
    return info.type == "cpu" and cfg.lanes == 1 and cfg.vec >= 2


def builds_narrow(info: DeviceInfo, cfg: AxisConfig) -> bool:
    """Whether a build has clt_ax_cols_narrow (a few columns read as a flat array): CPUs,
    streamed columns, vectors of 2 or more."""
    return info.type == "cpu" and bool(cfg.stream) and cfg.vec >= 2


@dataclass(frozen=True, eq=False)
class AxisBuilt:
    """The kernels of one build and what launching them needs."""

    spec: OpSpec
    config: AxisConfig
    index64: bool
    rows: cl.Kernel
    rows_fin: cl.Kernel
    cols: cl.Kernel
    cols_fin: cl.Kernel
    cols_stream: cl.Kernel
    segs: cl.Kernel
    segs_long: cl.Kernel
    packed: cl.Kernel | None  # None: not built (builds_packed)
    narrow: cl.Kernel | None  # None: not built (builds_narrow)
    acc_dtype: np.dtype
    warp_active: bool

    @property
    def tile_bytes(self) -> int:
        return self.config.wg * max(1, self.config.vec if self.config.cols else 1) * \
            self.acc_dtype.itemsize


_builds: ContextCache[AxisBuilt] = ContextCache()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: AxisConfig,
          *, index64: bool = False) -> AxisBuilt:
    key = (dev.int_ptr, spec, cfg, index64, info.fp64, axis_source())  # fp64: the accumulator
    return _builds.get(ctx, key, lambda: _build(ctx, dev, info, spec, cfg, index64))


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, spec: OpSpec, cfg: AxisConfig,
           index64: bool) -> AxisBuilt:
    if spec.needs_fp64 and not info.fp64:
        raise BuildError("needs cl_khr_fp64, which the device lacks")
    if cfg.onepass and info.type == "cpu":
        # the pthread CPU device of PoCL 3.1 hangs in one-pass builds of small work-groups
        # (wg 4 and 8; seen on Debian's PoCL), and on a CPU a second kernel costs little
        raise BuildError("onepass is offered on GPUs only (a second kernel is cheap on a CPU)")
    if cfg.onepass and acc_bytes(spec, info.fp64) == 8 and not info.int64_atomics:
        raise BuildError("onepass with a 64-bit accumulator needs cl_khr_int64_base_atomics")
    if cfg.warp and not info.is_nvidia:
        raise BuildError("warp shuffles need NVIDIA's OpenCL (inline PTX)")
    packed = builds_packed(info, cfg)
    narrow = builds_narrow(info, cfg)
    opts = [*build_defines(spec, cfg, index64=index64, nv_ptx=info.is_nvidia, fp64=info.fp64),
            *(["-DCLT_AX_PACKED=1"] if packed else []),
            *(["-DCLT_AX_NARROW=1"] if narrow else []),
            *(["-DCLT_AX_BLOCKED=1"] if info.type == "cpu" else []),  # rows in memory order
            *std_options(info)]
    prg = compile_program(ctx, dev, axis_source(), opts)
    acc = np.dtype({"float": np.float32, "double": np.float64, "int": np.int32,
                    "uint": np.uint32, "long": np.int64, "ulong": np.uint64}[
                        acc_type(spec, info.fp64)])
    kernels = {k: getattr(prg, k) for k in ("clt_ax_rows", "clt_ax_rows_fin", "clt_ax_cols",
                                             "clt_ax_cols_fin", "clt_ax_cols_stream",
                                             "clt_ax_segs", "clt_ax_segs_long",
                                             *(("clt_ax_packed",) if packed else ()),
                                             *(("clt_ax_cols_narrow",) if narrow else ()))}
    tile = cfg.wg * (cfg.vec if cfg.cols else 1) * acc.itemsize
    mine = ("clt_ax_cols", "clt_ax_cols_fin") if cfg.cols else (
        "clt_ax_rows", "clt_ax_rows_fin", "clt_ax_segs", "clt_ax_segs_long", "clt_ax_packed")
    for name, k in kernels.items():
        if name not in mine:  # the other layout's kernels are never launched with this config
            continue
        check_limits(k, dev, info, cfg.wg, tile)
    warp = bool(run_probe(ctx, dev, prg.clt_ax_probe, 3)[2])
    if cfg.warp and not warp:
        raise BuildError("warp shuffle path not compiled (no inline PTX here)")
    return AxisBuilt(spec, cfg, index64, kernels["clt_ax_rows"], kernels["clt_ax_rows_fin"],
                     kernels["clt_ax_cols"], kernels["clt_ax_cols_fin"],
                     kernels["clt_ax_cols_stream"], kernels["clt_ax_segs"],
                     kernels["clt_ax_segs_long"], kernels.get("clt_ax_packed"),
                     kernels.get("clt_ax_cols_narrow"), acc, warp)
