# ruff: noqa  (one-off experiment, kept terse)
"""A warm `GenericScanKernel` call of 1000 int32 (an exclusive sum) on a device: wall per call of
back-to-back calls and the host part (the enqueue stubbed), medians of 5 blocks of 3000.

    python scripts/experiments/gscan_host.py 1      # the cltune device selector
"""
import time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune, warnings, sys
warnings.simplefilter("ignore")
from cltune.device.select import select
from cltune.opencl.host_part import stubbed_enqueue
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
knl = cltune.GenericScanKernel(ctx, np.int32, "__global int *x, __global int *y", "x[i]", "a+b", "0", "y[i] = prev_item")
x = cla.to_device(q, np.arange(1000, dtype=np.int32)); y = cla.empty_like(x)
for _ in range(20): knl(x, y)
q.finish()
def t(f, n=3000):
    out=[]
    for _ in range(5):
        t0=time.perf_counter()
        for _ in range(n): f()
        q.finish()
        out.append((time.perf_counter()-t0)/n*1e6)
    return statistics.median(out)
wall = t(lambda: knl(x, y))
c=[0]
with stubbed_enqueue(q, c):
    st = t(lambda: knl(x, y))
print(f"{cltune.__file__.split('/cltune/')[0]}: wall {wall:.1f} us, stubbed {st:.1f} us a call")
