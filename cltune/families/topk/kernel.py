"""kernels/topk.cl's builds: what a top-k kernel is built for (`TopkSpec`: the dtype and k's
power of two, from a variant, k and the device), its `-D` options from a validated TopkConfig
(house rule 2), and the build."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from cltune.core.pow2 import pow2_at_least
from cltune.device.info import DeviceInfo
from cltune.families.topk.config import TopkConfig
from cltune.opencl.build import compile_program
from cltune.opencl.sources import kernel_file, text_hash

#: CLT_T_TYPE of each input dtype (kernels/topk.cl)
TYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
     np.int64, np.uint64, np.float16))}  # float16 as its bits: no cl_khr_fp16 needed
#: the most pairs clt_tk_sort sorts in one group's __local memory
MAX_LOCAL_SORT = 4096
#: __local bytes left to the kernel's own needs
RESERVE = 1024


@dataclass(frozen=True)
class TopkSpec:
    """dtype: the input's; kp: the power of two >= k (lists: a list's length; radix: the
    pairs a row's sort takes); local_sort: radix sorts its kp pairs in __local memory (else
    in global memory, step by step)."""

    dtype: np.dtype
    kp: int
    local_sort: bool = True

    def __post_init__(self) -> None:
        if self.dtype not in TYPE_CODES:
            raise ValueError(f"topk: unsupported dtype {self.dtype}")
        if self.kp < 1 or self.kp & (self.kp - 1):
            raise ValueError(f"topk: kp {self.kp} is not a power of two")

    @property
    def key_bytes(self) -> int:
        return 8 if self.dtype.itemsize == 8 else 4

    @property
    def key_dtype(self) -> np.dtype:
        return np.dtype(np.uint64 if self.key_bytes == 8 else np.uint32)

    @property
    def key_bits(self) -> int:
        """The bits of a key that vary (8- and 16-bit values: their own width)."""
        return 8 * self.dtype.itemsize

    def flip(self, largest: bool) -> np.generic:
        """The XOR that turns the smallest into the largest keys."""
        return self.key_dtype.type(0 if largest else (1 << self.key_bits) - 1)


def source() -> str:
    return kernel_file("topk.cl")


def source_hash() -> str:
    return text_hash(source())


def build_options(spec: TopkSpec, cfg: TopkConfig) -> list[str]:
    """The `-D` integers of a build (from a validated config and spec)."""
    cfg.validate()
    kp = spec.kp if cfg.strategy == "lists" or spec.local_sort else 0
    return [f"-DCLT_T_TYPE={TYPE_CODES[spec.dtype]}", f"-DCLT_WG={int(cfg.wg)}",
            f"-DCLT_T_KP={int(kp)}", f"-DCLT_T_BITS={int(cfg.bits)}"]


@dataclass(eq=False)
class TopkBuilt:
    """The program of one build (its kernels made once); arguments are shared state
    (launches take lock)."""

    spec: TopkSpec
    config: TopkConfig
    program: cl.Program
    kernels: dict[str, cl.Kernel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def kernel(self, name: str) -> cl.Kernel:
        k = self.kernels.get(name)
        if k is None:
            k = self.kernels[name] = getattr(self.program, name)
        return k


def build(ctx: cl.Context, dev: cl.Device, spec: TopkSpec, cfg: TopkConfig) -> TopkBuilt:
    """Compile kernels/topk.cl for spec and cfg (BuildError with the compiler's words)."""
    prg = compile_program(ctx, dev, source(), build_options(spec, cfg))
    return TopkBuilt(spec, cfg, prg)


def spec_for(dtype: np.dtype, k: int, info: DeviceInfo) -> TopkSpec:
    """The build spec of k of dtype on a device: a radix sort in __local memory where kp
    pairs fit it."""
    kp = pow2_at_least(max(1, k))
    key_bytes = 8 if np.dtype(dtype).itemsize == 8 else 4
    local = kp <= MAX_LOCAL_SORT and kp * (key_bytes + 4) + RESERVE <= int(info.local_mem)
    return TopkSpec(np.dtype(dtype), kp, local)
