"""What the side-by-side benchmark scripts (bench_hist.py, bench_topk.py, bench_sort.py) share:
sizes as 2^k or counts, the per-call time of blocks of back-to-back calls, and torch on CUDA
where it is importable. Imported by those scripts (their folder is on sys.path when run)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def size_of(text: str) -> int:
    """'2^24' or '3e6' or '1000003' as a count."""
    return 2 ** int(text[2:]) if text.startswith("2^") else int(float(text))


def per_call_us(sync: Callable[[], Any], fn: Callable[[], Any], calls: int,
                repeats: int) -> float:
    """µs per call: the median over `repeats` blocks of `calls` back-to-back calls and one
    `sync()` (after one warm call)."""
    fn()
    sync()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        ts.append((time.perf_counter() - t) / calls)
    return statistics.median(ts) * 1e6


def cuda_torch() -> Any:  # noqa: ANN401
    """torch where it is importable and sees a CUDA device, else None (the GPU baseline)."""
    try:
        import torch  # optional: the GPU baseline
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None
