# ruff: noqa  (one-off experiment, kept terse)
"""Host time of one call (the call alone, the queue drained between calls) of statistics along
an axis beside r(x, axis=1), the whole-array statistic and r(x), on a 200x200 float32 array.
Usage: python scripts/experiments/stats_axis_host.py DEVICE"""
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune
from cltune.device.select import select
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
x = cla.to_device(q, np.random.default_rng(1).random((200, 200), dtype=np.float32))
r = cltune.get_reducer(q, "sum", np.float32)
calls = {"r(x, axis=1)": lambda: r(x, axis=1),
         "cltune.var(x, axis=1)": lambda: cltune.var(x, axis=1),
         "cltune.argmax(x, axis=1)": lambda: cltune.argmax(x, axis=1),
         "cltune.mean(x, axis=0)": lambda: cltune.mean(x, axis=0),
         "cltune.var(x)": lambda: cltune.var(x),
         "r(x)": lambda: r(x)}
for name, f in calls.items():
    f(); q.finish()
    ts = []
    for _ in range(1000):
        t0 = time.perf_counter(); f(); t1 = time.perf_counter(); q.finish()
        ts.append((t1 - t0) * 1e6)
    print(f"{name:28s} host us per call {statistics.median(ts):7.2f}")
