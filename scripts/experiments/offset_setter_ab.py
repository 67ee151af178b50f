# ruff: noqa  (one-off experiment, kept terse)
"""r(x[i:i+4096]) with the offset changing every call: scalar kernel arguments set through
pyopencl's Kernel.set_arg (cltune.opencl.kernel_args._FAST = False) against Kernel._set_arg_buf, interleaved
in one process.  python scripts/experiments/offset_setter_ab.py DEVICE"""
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune, cltune.opencl.kernel_args as ka
from cltune.device.select import select
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
r = cltune.get_reducer(q)
n = 4096
x = cla.to_device(q, np.random.rand(n + 64).astype(np.float32))
views = [x[i:i + n] for i in range(64)]
for v in views[:3]: r(v)
ts = {True: [], False: []}
for _ in range(15):
    for fast in (True, False):
        ka._FAST = fast
        q.finish(); t0 = time.perf_counter()
        for i in range(640): r(views[i % 64])
        q.finish(); ts[fast].append((time.perf_counter() - t0) / 640 * 1e6)
ka._FAST = True
h = x.get()
assert all(abs(float(r(views[i]).get()) - h[i:i+n].astype(np.float64).sum()) < 1e-3 for i in range(0, 64, 7))
m = {k: statistics.median(v) for k, v in ts.items()}
print(f"{info.name[:20]} r(x[i:i+4096]), offset changes every call: set_arg {m[False]:.2f} us, _set_arg_buf {m[True]:.2f} us per call ({m[False]/m[True]:.2f}x)")
