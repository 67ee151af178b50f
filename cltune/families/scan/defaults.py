"""The `builtin` level of the scan family: a config per layout from the device's limits, for
devices never tuned (measured starting points: scripts/bench_scan.py).

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152, subgroups=False)
    >>> builtin_config(gpu, "rows").short(), builtin_config(gpu, "cols").short()
    ('rows wg256 i8 stage tree g/cu4', 'cols wg256 i1 g/cu8')
    >>> atom = NS(**{**vars(gpu), "int64_atomics": True})
    >>> builtin_config(atom, "rows", 4).short(), builtin_config(atom, "rows", 8).short()
    ('rows wg256 i32 stage tree chain', 'rows wg128 i32 stage tree chain')
    >>> nv = NS(**{**vars(atom), "is_nvidia": True})
    >>> builtin_config(nv, "rows", 4).short(), builtin_config(nv, "rows", 8).short()
    ('rows wg128 i32 stage warp chain-vload', 'rows wg128 i32 stage warp chain-vload')
    >>> builtin_config(NS(**{**vars(atom), "type": "cpu"}), "rows").short()
    'rows wg1 i16 vector tree chunks g/cu128'
    >>> builtin_config(NS(**{**vars(atom), "type": "cpu", "max_vector_bytes": 32}), "rows").short()
    'rows wg1 i8 vector tree chunks g/cu128'
"""

from __future__ import annotations

from typing import Any

from cltune.core.pow2 import pow2_at_most
from cltune.families.scan.config import ScanConfig

#: CPUs, strided columns (along axis 0): work-items a group. Both CPU runtimes run a group's
#: work-items as vector lanes over their strips' already-vector code; groups of 4 ran 1.1-1.4x
#: the time of 1 (float32 cumsum along axis 0, ms a call, launches interleaved in one process,
#: 4 -> 1, docs/logs/cpu-scan-cols-2026-12-07.txt, this 2-core AMD EPYC host): Debian's PoCL
#: 33x100003 2.97 -> 2.48, 1000x4000 2.57 -> 2.25, 4096x4096 12.6 -> 11.0, 17x20011 0.22 ->
#: 0.16; Intel's runtime 1.69 -> 1.24, 2.58 -> 2.12, 10.4 -> 9.4, 0.10 -> 0.08 (64x131072 5.46
#: -> 5.54). 32 columns a work-item ran 1.2-1.3x faster still from 64 rows on and 2x slower at
#: 33 (the config is per layout, not per shape: tuning picks it)
CPU_COLS_WG = 1
#: CPUs, strided columns: a work-item's strip of columns, scanned a row at a time in vectors of
#: 16 (kernels/scan.cl's wide strips). A strip of 16 columns touched one cache line per row,
#: rows `inner` elements apart, which no prefetcher follows; a row of 512 is a run of 2 KiB.
#: float32 cumsum along axis 0, ms a call, strip 16 -> 512 (copy of the array), launched side by
#: side (scripts/experiments/scan_cols_cpu.py, 2-core Intel Xeon host, 2026-12-07, two runs in
#: docs/logs/cpu-scan-wide-2026-12-07.txt): Debian's PoCL 33x100003 2.92-3.36 -> 0.81-1.05
#: (0.98-1.00), 64x131072 7.3-7.5 -> 4.3-5.7 (2.5-4.2), 1000x4000 5.2-6.2 -> 1.5-3.2 (1.2-1.3),
#: 4096x4096 31-33 -> 8.6-13.1 (8.2-9.3); Intel's runtime 2.8-3.0 -> 0.66-0.74 (0.86-0.88),
#: 5.6-6.4 -> 2.2-3.0 (1.5), 5.0-5.2 -> 1.1-1.5 (0.63), 31 -> 7.8-10.7 (5.2-5.7). 1024 ran
#: within the noise of 512 (faster on 64x131072 in both runs, slower on 1000x4000 in one)
CPU_COLS_ITEMS = 512


def builtin_config(info: Any, layout: str, acc_bytes: int = 8) -> ScanConfig:
    """GPUs: a chained pass of groups of 256 staging tiles of 32 elements a work-item through
    __local memory (coalesced), or reduce-then-scan by 256 x 8 without 64-bit atomics; CPUs: a
    work-item a chunk, scanned in vector registers."""
    cpu = info.type == "cpu"
    if layout == "cols":  # CPUs: a wide strip a work-item (CPU_COLS_ITEMS)
        # CPUs: a work-item a group (CPU_COLS_WG); strips of 16 where the device's health
        # allows no vector of 16 accumulators (the wide strips' steps)
        wg = min(pow2_at_most(info.max_wg), CPU_COLS_WG if cpu else 256)
        cap = int(getattr(info, "max_vector_bytes", 0) or 0)
        items = (CPU_COLS_ITEMS if not cap or 16 * acc_bytes <= cap else 16) if cpu else 1
        return ScanConfig("cols", wg=wg, items=items, stage=0, group_scan=0,
                          groups_per_cu=4 if cpu else 8)
    if cpu:
        # a work-item scans its chunk 16 elements at a time in vector registers (8 where the
        # device's health allows no vector of 16 accumulators), 4 vectors a step; with 64-bit
        # atomics in one chained pass over 128 chunks a compute unit (each read twice while in
        # cache: 2^24 float32, chunks of 256 KiB). 2^24 float32 on this 2-core AMD host (L2 of
        # 1 MiB a core), scripts/experiments/scan_cpu_chunks.py side by side: 8 wide a vector
        # a step 0.71 / 0.86 of the copy on Intel's runtime / Debian's PoCL, 16 wide 4 a step
        # with streaming stores 1.11 / 1.36 (docs/logs/benchmarks-2026-11-30-to-2026-12-06.md)
        atom = bool(getattr(info, "int64_atomics", False))
        cap = int(getattr(info, "max_vector_bytes", 0) or 0)
        items = 16 if not cap or 16 * acc_bytes <= cap else 8
        return ScanConfig("rows", wg=1, items=items, stage=2, group_scan=0,
                          groups_per_cu=128 if atom else 4, chain=3 if atom else 0)
    chain = int(bool(getattr(info, "int64_atomics", False)))
    # the chained pass (H200, scripts/bench_scan.py --sweep: groups of 256 x 32 the best at
    # 2^16, 2^24 and 2^28, 2^28 in 800 us against 890 for 128 x 32 and 1232 for the
    # reduce-then-scan builtin); else reduce-then-scan, groups of 256 x 8. NVIDIA, since the
    # look-back walks by a warp (scripts/experiments/scan_lookback_ab.py, H200): groups of
    # 128 x 32 scanned by warp shuffles, looking back by volatile loads, 13.1 / 49.7 / 595 us
    # at 2^20 / 2^24 / 2^28 against 15.5 / 53.7 / 658 for 256 x 32 by the tree
    nv = chain and bool(getattr(info, "is_nvidia", False))
    wg, items = (min(128 if nv else 256, pow2_at_most(info.max_wg)), 32 if chain else 8)
    while wg > 1 and (wg * items * 33 // 32 + 2 * wg) * acc_bytes + 1024 > info.local_mem:
        wg //= 2
    nv = nv and wg % 32 == 0
    return ScanConfig("rows", wg=wg, items=items, stage=1, group_scan=2 if nv else 0,
                      groups_per_cu=4, chain=2 if nv else chain)


def safest_config(info: Any, layout: str) -> ScanConfig:
    """Small groups, one element a work-item, no subgroups: when nothing else builds."""
    wg = pow2_at_most(min(32, max(1, info.max_wg)))
    if layout == "cols":
        return ScanConfig("cols", wg=wg, items=1, stage=0, group_scan=0, groups_per_cu=4)
    return ScanConfig("rows", wg=wg, items=1, stage=0, group_scan=0, groups_per_cu=4)
