#!/usr/bin/env python3
"""Histogram kernel configs side by side on one device (#41): bincount of int32 values in
`--bins` bins (uniform and skewed data) and a uniform float32 histogram, every config of a
small grid launched directly (HistLauncher.run: the histogram, a window of bins at a time
where it is larger than __local memory, and the result), blocks alternating over the configs,
medians of --repeats blocks; every answer checked against numpy first.

    python scripts/experiments/hist_configs.py --device 1 --n 2^24 --bins 256
    python scripts/experiments/hist_configs.py --device 1 --n 2^24 --bins 65536
"""
# ruff: noqa: B023 - the timing lambdas run within their loop iteration

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.device.select import select
from cltune.families.hist.config import HistConfig
from cltune.families.hist.defaults import builtin_config
from cltune.families.hist.kernel import HistSpec
from cltune.families.hist.launch import HistLauncher, UniformBins


def _n(text: str) -> int:
    return 2 ** int(text[2:]) if text.startswith("2^") else int(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="1")
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--bins", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--small", action="store_true",
                    help="GPUs: local wg 256/512, reps 1/2/8, groups 4/8/16, items 4/8 only")
    ap.add_argument("--cases", default="uniform,skewed,float32 uniform bins",
                    help="which inputs (comma-separated)")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept (Intel's CPU runtime frees a context nobody holds)
    q = cl.CommandQueue(ctx, dev)
    n, nb = _n(a.n), a.bins
    rng = np.random.default_rng(0)
    cpu = info.type == "cpu"
    grid = ([HistConfig("private", 1, r, g) for r in (1, 2, 4, 8) for g in (2, 4, 16)]
            + [HistConfig("local", 8, r, 4) for r in (1, 4)] + [HistConfig("global", 64, 1, 4)]
            if cpu else
            [HistConfig("local", wg, r, g, i) for wg in (256, 512) for r in (1, 2, 8)
             for g in (4, 8, 16) for i in (4, 8)] if a.small else
            [HistConfig("local", wg, r, g, i) for wg in (256, 512) for r in (1, 4, 8, 16)
             for g in (2, 8, 32) for i in (1, 4, 8)]
            + [HistConfig("global", 256, 1, g, i) for g in (8, 32) for i in (1, 4)])
    cases = {"uniform": rng.integers(0, nb, n).astype(np.int32),
             "skewed": np.where(rng.random(n) < 2 / 3, rng.integers(0, 3, n),
                                rng.integers(0, nb, n)).astype(np.int32)}
    f = rng.random(n).astype(np.float32)
    edges = np.linspace(0.0, 1.0, nb + 1, dtype=np.float32)
    print(f"device: {info.name}; n = {n}, {nb} bins; ms per call (medians)")
    for name, h in [*cases.items(), ("float32 uniform bins", f)]:
        if name not in a.cases.split(","):
            continue
        uniform = h.dtype.kind == "f"
        spec = HistSpec(h.dtype, uniform, None, bool(info.fp64))
        x = cla.to_device(q, h)
        out = cla.empty(q, nb, np.int64)
        bins = UniformBins(edges, 1.0) if uniform else None
        want = np.histogram(h, nb, (0.0, 1.0))[0] if uniform else np.bincount(h, minlength=nb)
        las = {}
        for cfg in grid:
            try:
                la = HistLauncher(q.context, dev, info, spec, cfg)
            except Exception as e:  # a config that does not build here
                print(f"  {cfg.short()}: {str(e)[:80]}")
                continue
            if not la.fits(nb):
                continue
            la.run(q, x, 0, n, None, 0, nb, bins, out)
            assert np.array_equal(out.get(), want), (name, cfg.short())
            las[cfg] = la
        ts: dict[HistConfig, list[float]] = {c: [] for c in las}
        for _ in range(a.repeats):
            for c, la in las.items():
                q.finish()
                t = time.perf_counter()
                la.run(q, x, 0, n, None, 0, nb, bins, out)
                q.finish()
                ts[c].append(time.perf_counter() - t)
        t0 = time.perf_counter()
        np.histogram(h, nb, (0.0, 1.0)) if uniform else np.bincount(h, minlength=nb)
        tn = time.perf_counter() - t0
        med = sorted((statistics.median(v), c) for c, v in ts.items())
        b = builtin_config(info, nb, 4)
        if b not in ts and b not in grid:  # the builtin timed too, outside the grid
            la = HistLauncher(q.context, dev, info, spec, b)
            la.run(q, x, 0, n, None, 0, nb, bins, out)
            assert np.array_equal(out.get(), want), (name, b.short())
            tb_ = []
            for _ in range(a.repeats):
                q.finish()
                t = time.perf_counter()
                la.run(q, x, 0, n, None, 0, nb, bins, out)
                q.finish()
                tb_.append(time.perf_counter() - t)
            ts[b] = tb_
        tb = statistics.median(ts[b]) if b in ts else float("nan")
        print(f"{name}: numpy {tn * 1e3:.2f}; builtin {tb * 1e3:.3f} [{b.short()}]; best: " +
              "; ".join(f"{c.short()} {t * 1e3:.3f}" for t, c in med[:6]), flush=True)
        if a.small:  # every config's median, for picking a rule across sizes
            print("  all: " + "; ".join(f"{c.short()} {t * 1e3:.3f}" for t, c in med))


if __name__ == "__main__":
    main()
