"""kernels/topk.cl's builds: what a top-k kernel is built for (`TopkSpec`: the dtype and k's
power of two, from a variant, k and the device), its `-D` options from a validated TopkConfig
(house rule 2), and the build."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from cltune.core.pow2 import pow2_at_least, pow2_at_most
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
#: the sample strategy: the most keys a group's sample takes (H100: 8192 float32 keys, 32
#: KiB of its 48), the bins of its 8-bit digits
MAX_SAMPLE = 8192
SAMPLE_BINS = 256


def bin_copies(nt: int) -> int:
    """The copies of the bins a group of nt counts a digit in (kernels/topk.cl COPIES)."""
    return 8 if nt >= 64 else 2 if nt >= 16 else 1


def bins_bytes(*groups: int) -> int:
    """__local bytes of the sample strategy's bins for groups of these sizes (each copy
    SAMPLE_BINS + 1 counters: kernels/topk.cl SBP)."""
    return 4 * (SAMPLE_BINS + 1) * max(bin_copies(nt) for nt in groups)


@dataclass(frozen=True)
class TopkSpec:
    """dtype: the input's; kp: the power of two >= k (lists: a list's length; radix: the
    pairs a row's sort takes); local_sort: radix sorts its kp pairs in __local memory (else
    in global memory, step by step); sample: the keys of the sample strategy's sample (a
    power of two in its groups' __local memory; 0: none); fin_wg: its finishing group's
    size (a power of two)."""

    dtype: np.dtype
    kp: int
    local_sort: bool = True
    sample: int = 1024
    fin_wg: int = 64

    def __post_init__(self) -> None:
        if self.dtype not in TYPE_CODES:
            raise ValueError(f"topk: unsupported dtype {self.dtype}")
        if self.kp < 1 or self.kp & (self.kp - 1):
            raise ValueError(f"topk: kp {self.kp} is not a power of two")
        if self.sample and (self.sample < 2 * SAMPLE_BINS or self.sample & (self.sample - 1)
                            or self.sample > MAX_SAMPLE):
            raise ValueError(f"topk: sample {self.sample} is not 0 or a power of two in "
                             f"{2 * SAMPLE_BINS}..{MAX_SAMPLE}")
        if self.fin_wg < 1 or self.fin_wg & (self.fin_wg - 1) or self.fin_wg > 1024:
            raise ValueError(f"topk: fin_wg {self.fin_wg} is not a power of two <= 1024")

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
            f"-DCLT_T_KP={int(kp)}", f"-DCLT_T_BITS={int(cfg.bits)}",
            f"-DCLT_T_SAMPLE={int(spec.sample) or 2 * SAMPLE_BINS}",
            f"-DCLT_WG_FIN={int(spec.fin_wg)}"]


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
    pairs fit it; the largest sample (up to MAX_SAMPLE keys, 32 KiB) that leaves room for the
    bins and a group of 1024's scan; a finishing group of up to 1024 on GPUs, 1 on CPUs (a
    work-group is a loop there)."""
    kp = pow2_at_least(max(1, k))
    key_bytes = 8 if np.dtype(dtype).itemsize == 8 else 4
    room = int(info.local_mem) - RESERVE
    local = kp <= MAX_LOCAL_SORT and kp * (key_bytes + 4) <= room
    fin = 1 if info.type == "cpu" else min(1024, pow2_at_most(max(1, int(info.max_wg))))
    keys = min(MAX_SAMPLE, min(32768, room - bins_bytes(fin) - 4 * 1028) // key_bytes)
    sample = pow2_at_most(keys) if keys >= 2 * SAMPLE_BINS else 0
    return TopkSpec(np.dtype(dtype), kp, local, sample, fin)
