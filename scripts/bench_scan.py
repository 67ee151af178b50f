#!/usr/bin/env python
"""Scans side by side, in one process (#21): cltune's served `cumsum` (and, with --sweep, the
best of a grid of configs launched directly: what tuning would find) against the device's
copy of the same bytes (the ceiling: a scan reads n and writes n), pyopencl's
InclusiveScanKernel, numpy.cumsum on the host, cltune's served sum of the same array (n <=
2^20: a scan's per call beside a reduction's) and, when torch sees CUDA, torch.cumsum.

Every answer is checked against numpy (float64) first. A sample is a block of --calls calls
back to back and one wait at the end; the contenders' blocks follow each other (never call by
call: two CUDA contexts time-slice), round after round; each figure is the median over
--repeats rounds. GB/s count 2n bytes (read + write). Ratio = other / cltune (> 1: faster).

    python scripts/bench_scan.py --device 0
    python scripts/bench_scan.py --device 0 --sizes 2^20,2^24,2^28 --sweep --axis
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.core.buckets import count_label, parse_counts
from cltune.device.select import select
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher


def _sizes(text: str) -> list[int]:
    return list(parse_counts(text))


def block(call: Callable[[], object], finish: Callable[[], object], calls: int,
          ) -> Callable[[], float]:
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


def sweep_configs(info, layout: str) -> list[ScanConfig]:
    gpu = info.type != "cpu"
    if layout == "cols":
        wgs = (64, 128, 256) if gpu else (1, 4, 16)
        strips = (1, 2, 4) if gpu else (4, 16)
        return [ScanConfig("cols", wg=w, items=i, stage=0, group_scan=0, groups_per_cu=g)
                for w, i, g in itertools.product(wgs, strips, (4, 16))]
    wgs = (128, 256, 512) if gpu else (4, 8)
    items = (8, 16, 32) if gpu else (16, 32)
    stages = (1,) if gpu else (0,)
    fits = [(w, i, s) for w, i, s in itertools.product(wgs, items, stages)
            if not gpu or w * i * 4 * 33 // 32 + w * 8 + 1536 <= info.local_mem]
    out = [ScanConfig("rows", wg=w, items=i, stage=s, group_scan=0, groups_per_cu=g)
           for (w, i, s), g in itertools.product(fits, (2, 8))]
    if info.int64_atomics:  # the one-pass chained scan (groups_per_cu has no effect there)
        # on NVIDIA also its volatile look-back loads (chain=2) and warp-shuffle group scans
        nv = info.is_nvidia
        out += [ScanConfig("rows", wg=w, items=i, stage=s, group_scan=gs, chain=c)
                for (w, i, s), gs, c in itertools.product(fits, (0, 2) if nv else (0,),
                                                          (1, 2) if nv else (1,))]
        # the chained pass over reduce-then-scan's chunks (each read twice while in cache)
        out += [ScanConfig("rows", wg=w, items=i, stage=s, groups_per_cu=g, chain=3)
                for (w, i, s), g in itertools.product(fits, (2, 8))]
    if not gpu:  # a work-item a chunk in vector registers (chained where there are atomics)
        out += [ScanConfig("rows", wg=1, items=i, stage=2, groups_per_cu=g,
                           chain=3 if info.int64_atomics else 0)
                for i, g in itertools.product((8, 16), (32, 128, 256))]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^12,2^16,2^20,2^24")
    ap.add_argument("--axis", action="store_true", help="also the issue's axis shapes")
    ap.add_argument("--shapes", default="1048576x16,65536x256,4096x4096")
    ap.add_argument("--sweep", action="store_true", help="also the best of a config grid")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
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
    from pyopencl.scan import InclusiveScanKernel
    pyo = InclusiveScanKernel(ctx, np.float32, "a+b", neutral="0")
    print(f"# {info.name} ({info.platform}); float32; per call, median of {a.repeats} rounds "
          f"of {a.calls} calls")
    cases = [((n,), None) for n in _sizes(a.sizes)]
    if a.axis:
        for s in a.shapes.split(","):
            r, c = (int(v) for v in s.lower().split("x"))
            cases += [((r, c), 0), ((r, c), 1)]
    s = cltune.get_scanner(q, "sum", np.float32)
    for shape, axis in cases:
        run_case(a, info, dev, ctx, q, s, pyo, torch, shape, axis)


def run_case(a, info, dev, ctx, q, s, pyo, torch, shape, axis) -> None:
    """Measure one case (a whole array, or one axis of a 2-D shape) and print its line."""
    rng = np.random.default_rng(0)
    h = rng.random(shape, dtype=np.float32)
    n = h.size
    x = cla.to_device(q, h)
    y = cla.empty(q, shape, np.float32)
    want = np.cumsum(h.astype(np.float64), axis=axis).reshape(shape) if axis is not None \
        else np.cumsum(h.astype(np.float64))
    got = s(x, axis=axis, out=y if axis is not None else None).get().reshape(want.shape)
    rel = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))
    assert rel < 1e-3, (shape, axis, rel)
    label = f"n={count_label(n)}" if axis is None else f"{shape[0]}x{shape[1]} axis {axis}"
    ex = s.explain(shape, axis)
    sam: dict[str, Callable[[], float]] = {}
    sam["copy"] = block(lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=n * 4),
                        q.finish, a.calls)
    out = cla.empty(q, (n,) if axis is None else shape, np.float32)
    sam["cltune"] = block(lambda: s(x, axis=axis, out=out), q.finish, a.calls)
    if a.sweep:
        view, layout = s.view(shape, axis)
        v = ScanVariant("sum", "float32", layout)
        best = None
        for cfg in sweep_configs(info, layout):
            la = ScanLauncher(ctx, dev, info, v, cfg)
            try:
                la.enqueue(q, x.data, 0, out.data, 0, view)
            except Exception:  # noqa: BLE001 - a config that does not build here
                continue
            g = out.get().reshape(want.shape)
            if np.max(np.abs(g - want) / np.maximum(np.abs(want), 1)) > 1e-3:
                print("  wrong:", cfg.short())
                continue
            t = rounds({"c": block(lambda la=la: la.enqueue(q, x.data, 0, out.data, 0,
                                                                view), q.finish, a.calls)},
                       3)["c"]
            if best is None or t < best[0]:
                best = (t, cfg)
        if best:
            la = ScanLauncher(ctx, dev, info, v, best[1])
            sam["cltune-best"] = block(lambda: la.enqueue(q, x.data, 0, out.data, 0, view),
                                       q.finish, a.calls)
    if axis is None:
        sam["pyopencl"] = block(lambda: pyo(x, out), q.finish, a.calls)
        if n <= 1 << 20:  # the small-call anchor: a scan per call beside a sum's
            r = cltune.get_reducer(q, "sum", np.float32)
            sam["reduce"] = block(lambda: r(x), q.finish, a.calls)
    if info.type == "cpu" or n <= 1 << 20:
        ho = np.empty(shape if axis is not None else (n,), np.float32)
        sam["numpy"] = block(lambda: np.cumsum(h, axis=axis, out=ho), lambda: None,
                             max(1, a.calls // 4))
    med = rounds(sam, a.repeats)
    if torch is not None:
        t = torch.from_numpy(h).cuda()
        to = torch.empty_like(t)
        dim = 0 if axis is None else axis
        tt = t.reshape(-1) if axis is None else t
        to = to.reshape(-1) if axis is None else to
        med.update(rounds({"torch": block(lambda: torch.cumsum(tt, dim=dim, out=to),
                                          torch.cuda.synchronize, a.calls)}, a.repeats))
    c = med["cltune"]
    parts = [f"{k} {v * 1e6:9.1f} us ({2 * n * 4 / v / 1e9:7.1f} GB/s, x{v / c:5.2f})"
             for k, v in med.items()]
    print(f"{label:>22}: " + " | ".join(parts))
    print(f"{'':>22}  served: {ex.config.short()} [{ex.level}]"
          + (f"; best of sweep: {best[1].short()}" if a.sweep and best else ""))


if __name__ == "__main__":
    main()
