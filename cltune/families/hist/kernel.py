"""kernels/hist.cl's builds: what a histogram kernel is built for (`HistSpec`, from a variant
and the device), its `-D` options from a validated HistConfig (house rule 2), and the build."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.hist.config import STRATEGIES, HistConfig
from cltune.opencl.build import compile_program
from cltune.opencl.sources import kernel_file, text_hash

#: CLT_H_TYPE of each input dtype (kernels/hist.cl)
TYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
     np.int64, np.uint64))}
#: CLT_H_WEIGHTS of each weights dtype (None: counts)
WEIGHT_CODES = {None: 0, np.dtype(np.float32): 1, np.dtype(np.float64): 2}


@dataclass(frozen=True)
class HistSpec:
    """dtype: the input's; uniform: uniform bins of floats (else bincount of integers);
    weights: the weights' dtype (float32/float64) or None (counts); double: the device's
    fp64 (and, with weights, 64-bit atomics): index arithmetic and sums in double; searched:
    the bins' edges are given (any increasing edges, a binary search), uniform too."""

    dtype: np.dtype
    uniform: bool
    weights: np.dtype | None
    double: bool
    searched: bool = False  # bins of given edges (a binary search), not uniform ones

    def __post_init__(self) -> None:
        if self.dtype not in TYPE_CODES:
            raise ValueError(f"hist: unsupported dtype {self.dtype}")
        if self.uniform != (self.dtype.kind == "f"):
            raise ValueError("hist: uniform bins take floats, bincount integers")
        if self.weights not in WEIGHT_CODES:
            raise ValueError(f"hist: unsupported weights dtype {self.weights}")

    @property
    def acc_bytes(self) -> int:
        """Bytes of one scratch cell: uint counts, double or float sums."""
        return 4 if self.weights is None or not self.double else 8

    @property
    def acc_dtype(self) -> np.dtype:
        if self.weights is None:
            return np.dtype(np.uint32)
        return np.dtype(np.float64 if self.double else np.float32)

    @property
    def out_dtype(self) -> np.dtype:
        """The result cells: int64 counts, or sums in the weights' dtype."""
        return np.dtype(np.int64) if self.weights is None else self.weights

    @property
    def real_dtype(self) -> np.dtype:
        return np.dtype(np.float64 if self.double else np.float32)


def source() -> str:
    return kernel_file("hist.cl")


def source_hash() -> str:
    return text_hash(source())


def build_options(spec: HistSpec, cfg: HistConfig) -> list[str]:
    """The `-D` integers of a build (from a validated config and spec)."""
    cfg.validate()
    mode = 2 if spec.searched else int(spec.uniform)
    return [f"-DCLT_H_TYPE={TYPE_CODES[spec.dtype]}", f"-DCLT_H_UNIFORM={mode}",
            f"-DCLT_H_WEIGHTS={WEIGHT_CODES[spec.weights]}",
            f"-DCLT_H_STRATEGY={STRATEGIES[cfg.strategy]}", f"-DCLT_H_REPS={int(cfg.reps)}",
            f"-DCLT_WG={int(cfg.wg)}", f"-DCLT_H_DOUBLE={int(spec.double)}",
            f"-DCLT_H_ITEMS={int(cfg.items)}"]


@dataclass(eq=False)
class HistBuilt:
    """The kernels of one build; their arguments are shared state (launches take lock)."""

    spec: HistSpec
    config: HistConfig
    hist: cl.Kernel
    out: cl.Kernel
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    extremes: cl.Kernel | None = None  # bincount's (integers only)
    fin: cl.Kernel | None = None  # clt_hist and clt_hist_out in one launch (counts only)
    once: cl.Kernel | None = None  # clt_hist_fin and the extremes (bincount's counts only)


def build(ctx: cl.Context, dev: cl.Device, spec: HistSpec, cfg: HistConfig) -> HistBuilt:
    """Compile kernels/hist.cl for spec and cfg (BuildError with the compiler's words)."""
    prg = compile_program(ctx, dev, source(), build_options(spec, cfg))
    return HistBuilt(spec, cfg, prg.clt_hist, prg.clt_hist_out,
                     extremes=None if spec.uniform else prg.clt_hist_extremes,
                     fin=prg.clt_hist_fin if spec.weights is None else None,
                     once=prg.clt_hist_once if spec.weights is None and not spec.uniform
                     else None)


def sums_in_double(info: DeviceInfo, weighted: bool) -> bool:
    """Index arithmetic (and weighted sums) in double: the device has fp64 (and, with
    weights, the 64-bit atomics their compare-and-swap needs)."""
    return bool(info.fp64 and (not weighted or info.int64_atomics))


def spec_for(variant: Any, info: DeviceInfo) -> HistSpec:
    """The build spec of a variant (`family.HistVariant`) on a device (`sums_in_double`)."""
    weighted = variant.weights is not None
    double = sums_in_double(info, weighted)
    return HistSpec(variant.dtype, variant.kind != "bincount", variant.weights, double,
                    variant.kind == "histogram_edges")
