# ruff: noqa  (one-off experiment, kept terse)
"""Host µs of a repeated `Scanner` call with the launch stubbed (its enqueue returns the last
event): what the scanner layer costs a call, on any device. Compare versions by running it on
each (e.g. with `git show REV:cltune/families/scan/api.py` in place), alternately.

    python scripts/experiments/scan_hot_call.py --device 0
"""
import argparse
import numpy as np, pyopencl as cl, pyopencl.array as cla, timeit, cltune, statistics
from cltune.device.select import select
import cltune.families.scan.launch as L
ap = argparse.ArgumentParser(); ap.add_argument("--device", default="0")
info, dev = select(ap.parse_args().device); ctx=cl.Context([dev]); q=cl.CommandQueue(ctx, dev)
s = cltune.get_scanner(q, "sum", np.float32)
out = []
for shape, axis in (((4096,), None), ((64, 64), 1), ((1 << 20,), None)):
    x = cla.to_device(q, np.ones(shape, np.float32))
    y = s(x, axis=axis); q.finish(); y = s(x, axis=axis); q.finish()
    assert np.allclose(y.get(), np.cumsum(x.get(), axis=axis)), shape
    ev = y.events[0]
    real = L.ScanLauncher.enqueue
    L.ScanLauncher.enqueue = lambda self, *a, **k: [ev]
    ts = timeit.repeat(lambda: s(x, axis=axis), number=20000, repeat=7)
    L.ScanLauncher.enqueue = real
    print(shape, axis, f"{min(ts)/20000*1e6:.2f} us (min of 7) median {statistics.median(ts)/20000*1e6:.2f}")
