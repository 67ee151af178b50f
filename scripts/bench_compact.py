#!/usr/bin/env python
"""Segmented scans and stream compaction side by side, in one process (#21), as
scripts/bench_scan.py times whole-array scans.

Segments: cltune's `Scanner.segments` (float32 inclusive sum restarting at CSR offsets: --segments
segments of random lengths, a reproducible seed) against pyopencl's segmented GenericScanKernel
(`across_seg_boundary`, a char flag per element) and the device's copy of the same bytes (the
ceiling: the scan reads n and writes n); torch has no segmented cumsum. Compaction:
`cltune.copy_if(x, "ary[i] > 0.5")` against pyopencl.algorithm.copy_if, numpy's `h[h > 0.5]`
(CPU devices) and, when torch sees CUDA, `torch.nonzero(t > 0.5)` and `t[t > 0.5]`.

Every answer is checked against numpy first (float64 for the scans). A sample is a block of
--calls calls back to back and one wait at the end; the contenders' blocks follow each other
(never call by call), round after round; each figure is the median over --repeats rounds.
GB/s count 2n * 4 bytes for segments (read + write), (n + kept) * 4 for compaction.
Ratio = other / cltune (> 1: cltune is faster).

    python scripts/bench_compact.py --device 0
    python scripts/bench_compact.py --device 1 --sizes 2^20,2^24,2^26 --segments 1024 --no-compact
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
import cltune.families.scan.compact as compact
from cltune.core.buckets import count_label, parse_counts
from cltune.device.select import select

PRED = "ary[i] > 0.5"


def _sizes(text: str) -> list[int]:
    return list(parse_counts(text))


def block(call: Callable[[], object], finish: Callable[[], object], calls: int,
          ) -> Callable[[], float]:  # as in bench_scan.py
    def sample() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        finish()
        return (time.perf_counter() - t0) / calls
    return sample


def rounds(samplers: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    for s in samplers.values():  # warm-up
        s()
    got: dict[str, list[float]] = {k: [] for k in samplers}
    for _ in range(repeats):
        for k, s in samplers.items():
            got[k].append(s())
    return {k: statistics.median(v) for k, v in got.items()}


def _line(label: str, med: dict[str, float], nbytes: int) -> None:
    c = med["cltune"]
    parts = [f"{k} {v * 1e6:9.1f} us ({nbytes / v / 1e9:7.1f} GB/s, x{v / c:5.2f})"
             for k, v in med.items()]
    print(f"{label:>24}: " + " | ".join(parts))


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))) if want.size else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--segments", type=int, default=1024, help="segments per array")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-segments", action="store_true")
    ap.add_argument("--no-compact", action="store_true")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    torch = None
    if info.is_nvidia:
        try:
            import torch as _t  # optional: only beside a CUDA device
            torch = _t if _t.cuda.is_available() else None
        except ImportError:
            torch = None
    print(f"# {info.name} ({info.platform}); float32; per call, median of {a.repeats} rounds "
          f"of {a.calls} calls")
    if not a.no_segments:
        from pyopencl.scan import GenericScanKernel
        pyo = GenericScanKernel(
            ctx, np.float32, arguments="float *ary, char *segflags, float *out",
            input_expr="ary[i]", scan_expr="across_seg_boundary ? b : (a+b)", neutral="0",
            is_segment_start_expr="segflags[i]", output_statement="out[i] = item;")
        s = cltune.get_scanner(q, "sum", np.float32)
        for n in _sizes(a.sizes):
            run_segments(a, q, s, pyo, n)
    if not a.no_compact:
        for n in _sizes(a.sizes):
            run_compact(a, info, q, torch, n)


def run_segments(a, q, s, pyo, n: int) -> None:
    """An inclusive sum restarting at m random CSR offsets, every contender on one input."""
    rng = np.random.default_rng(n + a.segments)
    m = max(1, min(a.segments, n))
    cuts = np.sort(rng.choice(n - 1, m - 1, replace=False) + 1) if m > 1 else []
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int32 if n < 2**31 else np.int64)
    h = rng.random(n, dtype=np.float32)
    flags = np.zeros(n, np.int8)
    flags[offsets[:-1]] = 1
    cs = np.cumsum(h, dtype=np.float64)
    want = cs - np.repeat(np.concatenate([[0.0], cs])[offsets[:-1]], np.diff(offsets))
    x, fd = cla.to_device(q, h), cla.to_device(q, flags)
    y, out = cla.empty(q, (n,), np.float32), cla.empty(q, (n,), np.float32)
    label = f"segments n={count_label(n)} m={m}"
    for who, run in (("cltune", lambda: s.segments(x, offsets, out=out)),
                     ("pyopencl", lambda: pyo(x, fd, out))):
        out.fill(np.float32(np.nan))
        run()
        rel = _rel(out.get(), want)
        assert rel < 1e-3, (label, who, rel)
    sam = {"copy": block(lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=n * 4),
                         q.finish, a.calls),
           "cltune": block(lambda: s.segments(x, offsets, out=out), q.finish, a.calls),
           "pyopencl": block(lambda: pyo(x, fd, out), q.finish, a.calls)}
    _line(label, rounds(sam, a.repeats), 2 * n * 4)
    print(f"{'':>24}  served: {s.explain((n,)).config.short()}")


def run_compact(a, info, q, torch, n: int) -> None:
    """The elements above 0.5 of n uniform floats (about half kept), in order."""
    from pyopencl.algorithm import copy_if as pyo_copy_if
    h = np.random.default_rng(n).random(n, dtype=np.float32)
    want = h[h > 0.5]
    x = cla.to_device(q, h)
    label = f"copy_if n={count_label(n)}"
    for who, f in (("cltune", cltune.copy_if), ("pyopencl", pyo_copy_if)):
        res, count = f(x, PRED)[:2]
        k = int(count.get())
        assert k == want.size and np.array_equal(res[:k].get(), want), (label, who, k)
    assert np.array_equal(cltune.nonzero(x > 0.5)[0].get(), np.flatnonzero(h > 0.5))
    mask = x > 0.5
    sam = {"cltune": block(lambda: cltune.copy_if(x, PRED), q.finish, a.calls),
           "pyopencl": block(lambda: pyo_copy_if(x, PRED), q.finish, a.calls),
           # numpy's/torch's nonzero: the comparison, the indices, the count read back
           "cltune-nonzero": block(lambda: cltune.nonzero(x > 0.5), q.finish, a.calls),
           # where nonzero's time goes: the mask made once, and pyopencl's comparison alone
           "cltune-nonzero-mask": block(lambda: cltune.nonzero(mask), q.finish, a.calls),
           # the count not read back (size=, jax.numpy.nonzero's form): the call only enqueues
           "cltune-nonzero-sized": block(lambda: cltune.nonzero(mask, size=want.size),
                                         q.finish, a.calls),
           "cltune-nonzero-sized-i32": block(
               lambda: cltune.nonzero(mask, size=want.size, index_dtype=np.int32),
               q.finish, a.calls),
           "pyopencl-compare": block(lambda: x > 0.5, q.finish, a.calls)}
    sized = cltune.nonzero(mask, size=want.size, index_dtype=np.int32)[0].get()
    assert np.array_equal(sized, np.flatnonzero(h > 0.5)), label
    if info.type == "cpu":
        sam["numpy"] = block(lambda: h[h > 0.5], lambda: None, a.calls)
    med = rounds(sam, a.repeats)
    if torch is not None:
        t = torch.from_numpy(h).cuda()
        tm = t > 0.5
        assert np.array_equal(t[t > 0.5].cpu().numpy(), want)
        assert np.array_equal(torch.nonzero(t > 0.5).cpu().numpy().ravel(),
                              np.flatnonzero(h > 0.5))
        med.update(rounds({
            "torch-nonzero": block(lambda: torch.nonzero(t > 0.5), torch.cuda.synchronize,
                                   a.calls),
            "torch-nonzero-mask": block(lambda: torch.nonzero(tm), torch.cuda.synchronize,
                                        a.calls),
            "torch-mask": block(lambda: t[t > 0.5], torch.cuda.synchronize, a.calls)},
            a.repeats))
        if hasattr(torch, "nonzero_static"):  # torch's fixed-size nonzero: no read back
            k = want.size
            med.update(rounds({"torch-nonzero-static": block(
                lambda: torch.nonzero_static(tm, size=k), torch.cuda.synchronize, a.calls)},
                a.repeats))
    _line(label, med, (n + want.size) * 4)
    ballot = compact._use_ballot(q.device)
    wg, items, per_cu = compact._shape_of(q.device, 4, bool(ballot))
    how = ", warp ballots" if ballot and wg % 32 == 0 else ""
    print(f"{'':>24}  kernels/compact.cl: groups of {wg} x {items}, {per_cu} chunks a "
          f"compute unit{how}")


if __name__ == "__main__":
    main()
