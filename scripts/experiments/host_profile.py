# ruff: noqa  (one-off experiment, kept terse)
"""Where the host time of a warm call goes: wall per call back to back (one wait at the end)
of `r(x)` and `r(x, axis=k)` on small arrays, of their prepared launch alone, and cProfile's
top functions (by own time) over a block of warm calls.

    python scripts/experiments/host_profile.py --device NVIDIA --calls 3000
"""
import argparse, cProfile, io, pstats, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="0")
ap.add_argument("--calls", type=int, default=3000)
ap.add_argument("--top", type=int, default=14)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
from cltune.families.axis.api import axis_engine

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
r = cltune.get_reducer(q, "sum", np.float32)
eng = axis_engine(r)


def per_call(fn, n):
    fn(); q.finish()
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        q.finish()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


cases = [("1-D 4096", np.random.rand(4096).astype(np.float32), None),
         ("31x31 axis 1", np.random.rand(31, 31).astype(np.float32), 1),
         ("31x31 axis 0", np.random.rand(31, 31).astype(np.float32), 0),
         ("500x500 axis 0", np.random.rand(500, 500).astype(np.float32), 0),
         ("123x45678 axis 1", np.random.rand(123, 45678).astype(np.float32), 1)]
for name, h, axis in cases:
    x = cla.to_device(q, h)
    call = (lambda: r(x)) if axis is None else (lambda: r(x, axis=axis))
    call(); q.finish()
    line = f"{name:18s} call {per_call(call, a.calls // 5):7.2f} us"
    if axis is not None:
        kept, order, launch = eng.warm[(x.shape, x.strides, x.offset, axis, False, q.int_ptr)]
        out = cla.empty(q, kept, np.float32)
        line += f"  prepared launch {per_call(lambda: launch(x.base_data, out.base_data, None, None), a.calls // 5):7.2f} us"
    print(line, flush=True)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(a.calls):
        call()
    q.finish()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(a.top)
    body = s.getvalue().splitlines()
    start = next(i for i, l in enumerate(body) if "ncalls" in l)
    print("\n".join(body[start:start + a.top + 1]), flush=True)
