# ruff: noqa  (one-off experiment, kept terse)
"""A/B in one process: cltune.stats.api argmax/var as of commit 5cf1709 (struct pick / Welford per
element) against the fold_expr versions (compare / shifted sums). Usage:
    git show 5cf1709:cltune/stats/api.py > /tmp/old_stats.py
    python scripts/experiments/fold_ab.py DEVICE /tmp/old_stats.py
"""
import sys, time, statistics, importlib.util, numpy as np, pyopencl as cl, pyopencl.array as cla
from cltune.stats import api as new
spec = importlib.util.spec_from_file_location("cltune.old_stats", sys.argv[2])
old = importlib.util.module_from_spec(spec); sys.modules["cltune.old_stats"] = old; spec.loader.exec_module(old)
from cltune.device.select import select
info, dev = select(sys.argv[1])
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
for b in (20, 24):
    h = np.random.default_rng(0).standard_normal(2**b).astype(np.float32)
    x = cla.to_device(q, h)
    for op in ("argmax", "var"):
        ks = {"old": old.kernel(op, ctx, np.float32), "new": new.kernel(op, ctx, np.float32)}
        args = [x] + ([0.0] if op == "var" else [])
        want = np.argmax(h) if op == "argmax" else h.astype(np.float64).var()
        for name, k in ks.items():
            got = k(*args).get()
            assert (int(got) == want) if op == "argmax" else abs(float(got) - want) < 1e-5 * want, (name, got, want)
        ts = {n: [] for n in ks}
        for r in range(9):
            for n, k in ks.items():
                m = 20 if b == 20 else 3
                q.finish(); t = time.perf_counter()
                for _ in range(m): k(*args)
                q.finish(); ts[n].append((time.perf_counter() - t) / m * 1e6)
        md = {n: statistics.median(v) for n, v in ts.items()}
        print(f"{info.name[:24]} 2^{b} {op}: old {md['old']:.0f} us, new {md['new']:.0f} us, speed-up {md['old']/md['new']:.2f}x  ({ks['new'].explain(x.size).config.short()})")
