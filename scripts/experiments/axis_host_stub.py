# ruff: noqa  (one-off experiment, kept terse)
"""The host side of a warm prepared axis launch with the kernel enqueue stubbed out (the Python
and clSetKernelArg side only): best of 9 blocks of 5000 launches per shape.
    python scripts/experiments/axis_host_stub.py DEVICE LABEL
"""
import sys, time, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
import cltune.families.axis.launch as L
import cltune.opencl.kernel_args as KA
from cltune.families.axis.api import axis_engine
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
r = cltune.get_reducer(q, "sum", np.float32)
eng = axis_engine(r)
out = []
for shape, axis in (((300, 300), 1), ((300, 300), 0), ((64, 100000), 1)):
    x = cla.to_device(q, np.random.rand(*shape).astype(np.float32))
    r(x, axis=axis); q.finish()
    kept, order, launch = eng.warm[(x.shape, x.strides, x.offset, axis, False, q.int_ptr)]
    o = cla.empty(q, kept, np.float32)
    ev = cl.enqueue_marker(q); ev.wait()
    real = cl.enqueue_nd_range_kernel
    cl.enqueue_nd_range_kernel = lambda *a, **k: ev
    try:
        best = 1e9
        for _ in range(9):
            t0 = time.perf_counter()
            for _ in range(5000):
                launch(x.base_data, o.base_data, None, None)
            best = min(best, (time.perf_counter() - t0) / 5000)
    finally:
        cl.enqueue_nd_range_kernel = real
    out.append(f"{shape} ax{axis}: {best*1e6:.2f} us")
print(sys.argv[2], "; ".join(out))
