"""The interface of kernels/scan.cl: build options from a validated variant and ScanConfig
(plus the call's form: exclusive, segment mode, offset width), and builds cached per context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import CL_TYPES, OP_ID, ScanVariant
from cltune.opencl.build import BuildError, check_limits, compile_program, std_options
from cltune.opencl.caches import ContextCache
from cltune.opencl.sources import kernel_file, text_hash

#: segment modes of kernels/scan.cl: none, rows of one length (an axis), CSR offsets
SEG_NONE, SEG_ROWS, SEG_OFFSETS = 0, 1, 2
_NP = {"float": np.float32, "double": np.float64, "long": np.int64, "ulong": np.uint64,
       "int": np.int32, "uint": np.uint32, "short": np.int16, "ushort": np.uint16,
       "char": np.int8, "uchar": np.uint8}


def scan_source() -> str:
    return kernel_file("scan.cl")


def source_hash() -> str:
    return text_hash(scan_source())


@dataclass(frozen=True)
class Form:
    """What a call asks beside the config: exclusive, the segment mode, 64-bit offsets."""

    exclusive: bool = False
    seg: int = SEG_NONE
    off64: bool = False


#: GPUs, strided scans: rows loaded together before their stores (a work-item's strip of
#: CLT_ITEMS columns up to 4; CPUs, and wider strips, one row at a time)
COLS_BATCH = 8


def tiles_built(cfg: ScanConfig, gpu: bool) -> bool:
    """Whether a cols build has clt_scan_cols_tile (GPU builds that load rows in batches)."""
    return gpu and cfg.layout == "cols" and cfg.items <= 4


def build_defines(variant: ScanVariant, cfg: ScanConfig, form: Form, *,
                  nv_ptx: bool = False, gpu: bool = False) -> list[str]:
    """The `-D` options of a build: produced here only, from validated values only."""
    if not (isinstance(cfg, ScanConfig) and isinstance(variant, ScanVariant)
            and isinstance(form, Form)):
        raise TypeError("build_defines takes a validated ScanVariant, ScanConfig and Form")
    cfg.validate()  # frozen, but re-checked: this is the door to the compiler
    if form.seg not in (SEG_NONE, SEG_ROWS, SEG_OFFSETS):
        raise ValueError(f"segment mode {form.seg!r} is not 0, 1 or 2")
    acc, out = variant.acc_cl_type, variant.out_cl_type
    defs: dict[str, object] = {
        "CLT_OP": OP_ID[variant.op],
        "CLT_IN_T": CL_TYPES[variant.dtype],
        "CLT_ACC_T": acc,
        "CLT_OUT_T": out,
        "CLT_OUT_AS": int(acc != out),
        "CLT_IS_FLOAT": int(variant.is_float),
        "CLT_NEEDS_FP64": int(variant.needs_fp64),
        "CLT_WG": cfg.wg,
        "CLT_ITEMS": cfg.items,
        "CLT_STAGE": cfg.stage,
        "CLT_GROUP_SCAN": cfg.group_scan,
        "CLT_SEG": int(form.seg),
        "CLT_OFF64": int(bool(form.off64)),
        "CLT_EXCL": int(bool(form.exclusive)),
        "CLT_CHAIN": int(cfg.chain),
        "CLT_NV_PTX": int(bool(nv_ptx)),
        "CLT_ACC_BITS": 8 * np.dtype(_NP[acc]).itemsize,
        "CLT_COLS_BATCH": COLS_BATCH if tiles_built(cfg, gpu) else 1,
        "CLT_LAYOUT_COLS": int(cfg.layout == "cols"),  # a cols build: the cols kernels only
    }
    if not variant.is_float and variant.op in ("min", "max"):
        defs["CLT_IDENT_INT"] = variant.ident_int()  # a name from a fixed table
    return [f"-D{k}={v}" for k, v in defs.items()]


@dataclass(frozen=True, eq=False)
class ScanBuilt:
    """The kernels of one build (rows: reduce, top, down, and chain for a chained config;
    cols: the cols_ ones)."""

    variant: ScanVariant
    config: ScanConfig
    form: Form
    reduce: cl.Kernel
    top: cl.Kernel
    down: cl.Kernel
    acc_dtype: np.dtype
    paths: tuple[int, int]  # what the compiler took: (subgroup scan, warp shuffles)
    chain: cl.Kernel | None = None
    tile: cl.Kernel | None = None  # GPUs' cols builds: short columns with a group's carries


_builds: ContextCache[ScanBuilt] = ContextCache()


def build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: ScanVariant,
          cfg: ScanConfig, form: Form | None = None) -> ScanBuilt:
    form = form or Form()
    if cfg.chain and not info.int64_atomics:
        raise BuildError(f"chain={cfg.chain} needs cl_khr_int64_base_atomics, which the device "
                         "lacks")
    key = (dev.int_ptr, str(variant), cfg, form, scan_source())
    return _builds.get(ctx, key, lambda: _build(ctx, dev, info, variant, cfg, form))


def _probe(ctx: cl.Context, dev: cl.Device, k: cl.Kernel) -> tuple[int, int]:
    q = cl.CommandQueue(ctx, dev)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8)
    k(q, (1,), None, buf)
    got = np.zeros(2, np.int32)
    cl.enqueue_copy(q, got, buf)
    return int(got[0]), int(got[1])


def _build(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, variant: ScanVariant,
           cfg: ScanConfig, form: Form) -> ScanBuilt:
    if variant.needs_fp64 and not info.fp64:
        raise BuildError("needs cl_khr_fp64, which the device lacks")
    if cfg.layout != variant.layout:
        raise BuildError(f"a {cfg.layout} config for the {variant.layout} layout")
    opts = [*build_defines(variant, cfg, form, nv_ptx=info.is_nvidia, gpu=info.type != "cpu"),
            *std_options(info)]
    prg = compile_program(ctx, dev, scan_source(), opts)
    acc = np.dtype(_NP[variant.acc_cl_type])
    if cfg.layout == "rows":
        ks = (prg.clt_scan_reduce, prg.clt_scan_top, prg.clt_scan_down)
    else:
        ks = (prg.clt_scan_cols_reduce, prg.clt_scan_cols_top, prg.clt_scan_cols_down)
    # typed scalars: pyopencl then packs each argument directly (untyped, it inspected every
    # one: ~50 us of host time per launch of the scan kernels)
    i8, u4 = np.int64, np.uint32
    if cfg.layout == "rows":
        seg = [i8, None, i8]  # seglen, offs, m
        types = ([None, i8, i8, i8, *seg, None, None], [None, None, i8],
                 [None, i8, i8, i8, *seg, None, u4, None, i8])
    else:
        dims = [None, i8, i8, i8, i8, i8, u4]  # x, xoff, outer, R, inner, chunk, wc
        types = ([*dims, None], [None, i8, i8, u4], [*dims, None, u4, None, i8])
    chain = None
    if cfg.chain:  # x, xoff, n, chunk, seg, status, ticket, base, epoch, out, ooff
        chain = prg.clt_scan_chunks if cfg.chain == 3 else prg.clt_scan_chain
        ks, types = (*ks, chain), (*types, [None, i8, i8, i8, *seg, None, None, u4, u4, None,
                                           i8])
    tile = None
    if cfg.layout == "cols" and f"-DCLT_COLS_BATCH={COLS_BATCH}" in opts:  # tiles_built
        tile = prg.clt_scan_cols_tile  # x, xoff, outer, R, inner, chunk, wc, out, ooff
        ks, types = (*ks, tile), (*types, [*dims, None, i8])
    for k, t in zip(ks, types, strict=True):
        k.set_scalar_arg_dtypes(t)
        check_limits(k, dev, info, cfg.wg)
    return ScanBuilt(variant, cfg, form, *ks[:3], acc, _probe(ctx, dev, prg.clt_scan_probe),
                     chain, tile)
