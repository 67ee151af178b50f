# ruff: noqa  (one-off experiment, kept terse)
"""Host time of one call (`r(x, axis=k)`, the call alone, the queue drained between calls)
beside the 1-D `r(x)` on the same array, float32 sums. Usage:
    python scripts/experiments/axis_host.py DEVICE SHAPE[,SHAPE...]"""
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune
from cltune.device.select import select
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
r = cltune.get_reducer(q, "sum", np.float32)
for s in sys.argv[2].split(","):
    shape = tuple(int(v) for v in s.split("x"))
    x = cla.to_device(q, np.random.default_rng(1).random(shape, dtype=np.float32))
    for axis in (0, 1):
        r(x, axis=axis); q.finish()
        ts = []
        for _ in range(2000):
            t0 = time.perf_counter(); r(x, axis=axis); t1 = time.perf_counter(); q.finish()
            ts.append((t1 - t0) * 1e6)
        t1d = []
        for _ in range(2000):
            t0 = time.perf_counter(); r(x); t1 = time.perf_counter(); q.finish()
            t1d.append((t1 - t0) * 1e6)
        print(f"{s} axis {axis}: host us per call {statistics.median(ts):6.2f}   (1-D r(x) {statistics.median(t1d):5.2f})")
