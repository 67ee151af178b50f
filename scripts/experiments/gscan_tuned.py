# ruff: noqa  (one-off experiment, kept terse)
"""GenericScanKernel untuned against tuned (#42 item 3), beside pyopencl's own GenericScanKernel
of the same code, in one process: per size, `knl.tune(*args)` into a temporary database, then
blocks alternating over (pyopencl, cltune untuned, cltune tuned), wall per call of
back-to-back calls, medians; every answer checked against numpy first.

    python scripts/experiments/gscan_tuned.py --device 1 --sizes 2^16,2^20,2^22
"""
import argparse, statistics, tempfile, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import pyopencl.scan as pscan

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="1")
ap.add_argument("--sizes", default="2^16,2^20,2^22")
ap.add_argument("--trials", type=int, default=20)
ap.add_argument("--timeout", type=float, default=60)
ap.add_argument("--blocks", type=int, default=5)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
tmp = tempfile.mkdtemp()
db, st = f"sqlite:///{tmp}/t.db", f"sqlite:///{tmp}/s.db"
KERNELS = {
    "exclusive int32 sum": (np.int32, "__global int *x, __global int *y", "x[i]", "a+b", "0",
                            "y[i] = prev_item",
                            lambda h: np.concatenate([[0], np.cumsum(h)[:-1]]).astype(np.int32)),
    "inclusive float32 max": (np.float32, "__global float *x, __global float *y", "x[i]",
                              "fmax(a, b)", "-INFINITY", "y[i] = item",
                              lambda h: np.maximum.accumulate(h)),
}
print(f"# {info.name} | {dev.platform.version} | µs per call, medians of {a.blocks} blocks")
rng = np.random.default_rng(0)
for name, (dt, args, inp, scan, neutral, out, ref) in KERNELS.items():
    for s in a.sizes.split(","):
        n = 2 ** int(s[2:]) if s.startswith("2^") else int(s)
        h = (rng.integers(0, 9, n) if np.dtype(dt).kind == "i" else rng.random(n)).astype(dt)
        x, y = cla.to_device(q, h), cla.empty(q, n, dt)
        want = ref(h)
        py = pscan.GenericScanKernel(ctx, dt, args, inp, scan, neutral, out)
        un = cltune.GenericScanKernel(ctx, dt, args, inp, scan, neutral, out,
                                      db=f"sqlite:///{tmp}/empty.db")
        tu = cltune.GenericScanKernel(ctx, dt, args, inp, scan, neutral, out, db=db)
        t0 = time.perf_counter()
        res = tu.tune(x, y, trials=a.trials, timeout=a.timeout, storage=st)
        tune_s = time.perf_counter() - t0
        calls = {"pyopencl": lambda: py(x, y), "untuned": lambda: un(x, y),
                 "tuned": lambda: tu(x, y)}
        for k, f in calls.items():
            f(); q.finish()
            assert np.allclose(y.get(), want), (name, n, k)
        per = {k: [] for k in calls}
        reps = max(3, min(200, int(2e6 / max(n, 1))))
        for b in range(a.blocks):
            for k, f in calls.items():
                q.finish(); t = time.perf_counter()
                for _ in range(reps):
                    f()
                q.finish(); per[k].append((time.perf_counter() - t) / reps * 1e6)
        m = {k: statistics.median(v) for k, v in per.items()}
        print(f"{name:24s} n={n:>9}: pyopencl {m['pyopencl']:9.1f}  untuned {m['untuned']:9.1f} "
              f"[{un.explain(n).config.short()}]  tuned {m['tuned']:9.1f} [{tu.explain(n).config.short()}]"
              f"  untuned/tuned {m['untuned'] / m['tuned']:.2f}x  pyopencl/tuned {m['pyopencl'] / m['tuned']:.2f}x"
              f"  (tuning {tune_s:.0f} s)", flush=True)
