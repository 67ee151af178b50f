"""The `builtin` level of the histogram kernels: a config from the device's limits for a
number of bins, for devices (and bin counts) never tuned, and the safest one.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152)
    >>> builtin_config(gpu, 256, 4).short(), builtin_config(gpu, 65536, 4).short()
    ('local wg512 r8 g4 i4', 'global wg256 r1 g8 i4')
    >>> builtin_config(NS(type="cpu", max_wg=4096, local_mem=65536), 256, 4).short()
    'private wg1 r8 g4 i1'
"""

from __future__ import annotations

from typing import Any

from cltune.core.pow2 import pow2_at_most
from cltune.families.hist.config import HistConfig

#: __local bytes a group leaves to the kernel's own needs
RESERVE = 1024
#: GPUs: the most copies of a group's histogram (hot bins: fewer collisions on each copy)
MAX_REPS = 8
#: GPUs: groups a compute unit of the local strategy (groups of 512)
GPU_GROUPS_PER_CU = 4


def builtin_config(info: Any, nbins: int, acc_bytes: int) -> HistConfig:
    """CPUs: a work-item a group with up to MAX_REPS copies of its histogram to itself (plain
    increments), 4 a compute unit, where it fits __local memory; GPUs: groups of 512, 4 a
    compute unit, with up to MAX_REPS copies of the histogram in __local memory; bins that
    do not fit: atomics on the result (groups of 256, 8 a compute unit).

    GPUs: on an H100, 256 and 4096 bins, 2^16, 2^20 and 2^24 int32 and float32 values, groups
    of 512 four a compute unit took 1.15x less time than groups of 256 eight a compute unit
    (geometric mean of the 12 cases; none slower; 1.37-1.50x at 4096 bins from 2^20 on),
    the best rule of the 48 swept (`scripts/experiments/hist_configs.py --small`)."""
    room = int(info.local_mem) - RESERVE
    if info.type == "cpu":
        # copies taken in turn break the store-to-load chain of a run of one value: 8 the
        # best at 2^24 int32 in 256 bins on PoCL (11.8 ms against 13.9 for one; skewed data
        # 11.8 / 15.1; float32 uniform bins 31.4 / 43.3), scripts/experiments/hist_configs.py
        reps = MAX_REPS
        while reps > 1 and reps * nbins * acc_bytes > room:
            reps //= 2
        if nbins * acc_bytes <= room:
            return HistConfig("private", 1, reps, 4, 1)
        return HistConfig("global", min(64, pow2_at_most(int(info.max_wg))), 1, 4)
    reps = MAX_REPS
    while reps > 1 and reps * nbins * acc_bytes > room:
        reps //= 2
    if nbins * acc_bytes > room:
        return HistConfig("global", min(256, pow2_at_most(int(info.max_wg))), 1, 8)
    wg = min(512, pow2_at_most(int(info.max_wg)))
    return HistConfig("local", wg, min(reps, wg), GPU_GROUPS_PER_CU)


def safest_config(info: Any) -> HistConfig:
    """Global atomics from small groups: when nothing else builds or runs."""
    return HistConfig("global", min(32, pow2_at_most(max(1, int(info.max_wg)))), 1, 4)
