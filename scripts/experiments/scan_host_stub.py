# ruff: noqa  (one-off experiment, kept terse)
"""The host side of a warm 1-D scan call s(x) at 2^20 with the kernel enqueue stubbed out (the
Python and clSetKernelArg side only), best of 7 blocks of 3000 calls, then cProfile's top 14.
    python scripts/experiments/scan_host_stub.py   (device 0)
"""
import sys, time, warnings, cProfile, pstats, io, numpy as np, pyopencl as cl, pyopencl.array as cla
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
import cltune.families.scan.launch as L
info, dev = select("0"); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
s = cltune.get_scanner(q, "sum", np.float32)
n = 1 << 20
x = cla.to_device(q, np.random.rand(n).astype(np.float32))
y = s(x); q.finish()
ev = cl.enqueue_marker(q); ev.wait()
cl.enqueue_nd_range_kernel = lambda *a, **k: ev
def run(k):
    for _ in range(k): s(x)
run(100)
best = 1e9
for _ in range(7):
    t0 = time.perf_counter(); run(3000); best = min(best, (time.perf_counter() - t0) / 3000)
print(f"whole s(x) call, enqueue stubbed: {best*1e6:.2f} us")
pr = cProfile.Profile(); pr.enable(); run(3000); pr.disable()
st = io.StringIO(); pstats.Stats(pr, stream=st).sort_stats("tottime").print_stats(14); print(st.getvalue()[-2600:])
