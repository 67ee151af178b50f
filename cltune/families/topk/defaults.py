"""The `builtin` level of the top-k kernels: a config from the device's limits for a k, for
devices (and k) never tuned, and the safest one.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152, compute_units=132)
    >>> builtin_config(gpu, 8, 4).short(), builtin_config(gpu, 8, 4, rows=4096).short()
    ('sample wg1024 g1 b11', 'lists wg32 g4 b8')
    >>> builtin_config(gpu, 10, 4, rows=4096, n=4096 * 4096).short()
    'rowsel wg128 g1 b8'
    >>> builtin_config(gpu, 10, 4, rows=65536, n=65536 * 256).short()
    'rowsel wg64 g1 b8'
    >>> builtin_config(gpu, 8, 4, n=65536).short()
    'lists wg128 g4 b8'
    >>> cpu = NS(type="cpu", max_wg=4096, local_mem=65536)
    >>> builtin_config(cpu, 8, 4).short(), builtin_config(cpu, 8, 4, n=4096).short()
    ('sample wg1 g2 b11', 'lists wg1 g4 b8')
"""

from __future__ import annotations

from typing import Any

from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import RESERVE

#: GPUs: the largest k the lists strategy serves untuned along many rows (a row a group; H100
#: 4096x4096 k=8: lists wg32 0.268 ms, radix 0.286; 65536x256: 0.460 against 0.961); one long
#: row is the radix select's (2^24 k=10: radix wg256 g8 b11 0.186 ms, lists 0.412 at best)
GPU_LIST_K = 32
#: CPUs: the same (random data: lists of 1000 at 14x numpy's argpartition at 2^24 on PoCL;
#: ascending data, every element sifted into a list: k = 64 at 1.4x, 1000 at 0.7x)
CPU_LIST_K = 256


#: GPUs: one row of up to 2^SMALL_LOG2 elements with k up to SMALL_LIST_K goes to the lists in
#: groups of 128 (H100, k = 10: 4096 elements 0.038 ms against the radix select's 0.135,
#: 65536 0.055 / 0.110, 2^18 0.062 / 0.080; torch 0.031 / 0.137 / 0.151; k = 100: the lists
#: 3-7x slower than the radix select; 2^24: 0.41 / 0.19)
SMALL_LOG2 = 18
SMALL_LIST_K = 16
#: one row of at least 2^SAMPLE_LOG2 elements (or of unknown length) goes to the sample
#: strategy, which hands rows too short or k too large for its sample to the radix select
#: with the same digits (2^24 float32, PoCL 3.1: k = 10 3.9 ms against the lists' 11.6,
#: k = 1000 4.2 against 13.4 and the radix select's 49.1; Intel's CPU runtime 2.0-2.2 against
#: 12.0-13.9; 2^16: 0.10 / 0.24 ms against 0.10 / 0.66 at best). On CPUs two groups a
#: compute unit (each selects in its own copy of the sample: 1, 2 and 4 measured 3.6-5.7 ms
#: at 2^24 on PoCL, 1.2-2.4 on Intel's runtime, 2 the best or near it on both)
#: GPUs: groups of 1024, one a compute unit (H100, 2026-12-06 19:3x UTC, float32, wall per
#: call, g1 / g2: 2^20 k = 10 / 1000 43.6 / 47.8 and 58.7 / 65.3 us, 2^24 71.0 / 74.1 and
#: 100.2 / 103.1, 2^27 k = 10 256.5 / 267.3; wg512 g4 and wg256 g8 slower at every size;
#: torch.topk 0.133 / 0.355 / 2.67 ms at 2^20 / 2^24 / 2^27, the radix select 0.079 / 0.180
#: at 2^20 / 2^24; before the 8-load unroll wg128-512 with 4-16 groups a unit took
#: 0.113-0.283 ms at 2^24)
SAMPLE_LOG2 = 16
#: GPUs, along at least a row per compute unit: rows of up to 2^ROWSEL_LOG2 elements with k
#: up to ROWSEL_K go to rowsel, one group a row of a work-item per ROWSEL_PER_ITEM elements
#: (64 to 1024). H100, float32, per call back to back (docs/logs/h100-topk-rowsel-2026-12-07.txt;
#: lists wg32 the builtin before, torch.topk beside), k = 8 / 10 / 32 / 100:
#: 4096x4096 rowsel wg128 0.136 / 0.140 / 0.147 / 0.166 ms, lists 0.265 / 0.431 / 1.132 /
#: 4.02, radix wg256 0.46-0.50, torch 0.33-0.36; 16384x1024 wg64 0.200 / 0.212 / 0.225 / 0.276,
#: lists 0.34-7.8, torch 0.53-0.62; 65536x256 wg64 0.486 / 0.525 / 0.589 / 0.756, lists 0.458 /
#: 0.957 / 2.82 / 19.8, torch 0.83-1.16; 256x65536 wg1024 0.171-0.181, radix 0.231-0.240, torch
#: 0.29. Groups of 64 to 1024 ran 1.2-10x slower away from that size.
ROWSEL_LOG2 = 16
ROWSEL_K = 128
ROWSEL_PER_ITEM = 32


def builtin_config(info: Any, k: int, key_bytes: int, rows: int = 1,
                   n: int | None = None) -> TopkConfig:
    """One long row: the sample strategy (its radix select with 11-bit digits where its sample
    does not serve). CPUs: one work-item a group keeping its own list (4 groups a compute
    unit) up to CPU_LIST_K, else the radix select. GPUs: along at least a row per compute
    unit, rows of up to 2^ROWSEL_LOG2 with k up to ROWSEL_K rowsel (a group a row, its size
    by the rows' length), else lists in groups of up to 32 whose lists fit __local memory up
    to GPU_LIST_K; rows
    of n / rows up to 2^SMALL_LOG2 elements with k up to SMALL_LIST_K, lists in groups of 128
    (one launch where the radix select takes five); else the radix select in groups of 256
    with 11-bit digits (3 passes of 32-bit keys), 8-bit ones along several rows."""
    kp = pow2_at_least(max(1, k))
    room = int(info.local_mem) - RESERVE
    one_long = rows == 1 and (n is None or n >= 1 << SAMPLE_LOG2)
    if info.type == "cpu":
        if one_long:
            return TopkConfig("sample", 1, 2, 11)
        if k <= CPU_LIST_K and kp * (key_bytes + 4) <= room:
            return TopkConfig("lists", 1, 4, 8)
        # one work-item a group counts without atomics; 11-bit digits: 3 passes of float32
        # (radix wg1 g4 b11 49 ms against 61 for 8 bits, 160 for wg64, at 2^24 on PoCL)
        return TopkConfig("radix", 1, 4, 11)
    wg = min(32, pow2_at_most(int(info.max_wg)))
    while wg > 1 and wg * kp * (key_bytes + 4) > room:
        wg //= 2
    m = n // max(1, rows) if n is not None else None
    if rows >= int(info.compute_units) and m is not None and m <= 1 << ROWSEL_LOG2 \
            and k <= ROWSEL_K:
        rwg = min(pow2_at_most(int(info.max_wg)), 1024,
                  max(64, pow2_at_most(max(1, m // ROWSEL_PER_ITEM))))
        cfg = TopkConfig("rowsel", rwg, 1, 8)
        if cfg.local_bytes(kp, key_bytes) + RESERVE <= int(info.local_mem):
            return cfg
    if k <= GPU_LIST_K and wg >= 16 and rows >= int(info.compute_units):
        return TopkConfig("lists", wg, 4, 8)
    small = min(128, pow2_at_most(int(info.max_wg)))
    if (k <= SMALL_LIST_K and n is not None and n // max(1, rows) <= 1 << SMALL_LOG2
            and small * kp * (key_bytes + 4) <= room):
        return TopkConfig("lists", small, 4, 8)
    if one_long:
        return TopkConfig("sample", min(1024, pow2_at_most(int(info.max_wg))), 1, 11)
    # several rows: 8-bit digits. On an H100 along 1024x16384 (k = 8) 11-bit digits with the
    # groups' counts kept failed the queue (INVALID_COMMAND_QUEUE) in 3 of 5 runs, cause not
    # found; 8-bit digits ran, 0.213 ms against 0.375 (docs/logs/h100-topk-2026-12-07-late.txt)
    return TopkConfig("radix", min(256, pow2_at_most(int(info.max_wg))), 8,
                      11 if rows <= 1 else 8)


def safest_config(info: Any) -> TopkConfig:
    """The radix select from small groups: any k, when nothing else builds or runs."""
    return TopkConfig("radix", min(32, pow2_at_most(max(1, int(info.max_wg)))), 4, 8)
