# ruff: noqa  (one-off experiment, kept terse)
"""Where a warm `cltune.histogram` / `cltune.bincount` call's time goes on a device: wall per
call of back-to-back calls, the same with the enqueues stubbed (the host part), a cProfile of the
warm calls (top functions by own time), and the kernels' device time (a profiling queue).

    python scripts/experiments/hist_call_profile.py --device NVIDIA --n 1048576
"""
import argparse, cProfile, io, pstats, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--n", type=int, default=1 << 20)
ap.add_argument("--calls", type=int, default=200)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select

info, dev = select(a.device)
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, dev)
pq = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
rng = np.random.default_rng(0)
xf = cla.to_device(q, rng.random(a.n, dtype=np.float32))
xi = cla.to_device(q, rng.integers(0, 256, a.n).astype(np.int32))
calls = {"histogram(x, 256, (0, 1))": lambda x: cltune.histogram(x, 256, (0.0, 1.0))[0],
         "histogram(x, 256)": lambda x: cltune.histogram(x, 256)[0],
         "bincount(x)": lambda x: cltune.bincount(x)}
for name, f in calls.items():
    x = xi if name.startswith("bincount") else xf
    f(x); q.finish()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        f(x)
    q.finish()
    wall = (time.perf_counter() - t0) / a.calls * 1e6
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(a.calls):
        f(x)
    q.finish()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(8)
    xp = cla.to_device(pq, x.get())
    f(xp); pq.finish()
    evs = []
    real = cl.enqueue_nd_range_kernel

    def spy(*args, **kw):
        ev = real(*args, **kw)
        evs.append((args[1].function_name, ev))
        return ev
    cl.enqueue_nd_range_kernel = spy
    try:
        f(xp); pq.finish()
    finally:
        cl.enqueue_nd_range_kernel = real
    dev_us = [(k, (e.profile.end - e.profile.start) * 1e-3) for k, e in evs]
    print(f"=== {name} n={a.n}: wall {wall:.1f} us a call; kernels: "
          + ", ".join(f"{k} {t:.1f} us" for k, t in dev_us), flush=True)
    print("\n".join(s.getvalue().splitlines()[4:22]), flush=True)
