# ruff: noqa  (one-off experiment, kept terse)
"""The host side of a warm ScanLauncher.enqueue, old module file against the working tree's, alternating
blocks in one process, kernel enqueue stubbed (Intel CPU runtime = device 0): a one-group view and
a chained one. Old file from git:  git show REV:cltune/families/scan/launch.py > /tmp/launch_old.py
    python scripts/experiments/scan_launch_ab.py /tmp/launch_old.py
"""
import sys, time, warnings, importlib.util, numpy as np, pyopencl as cl, pyopencl.array as cla
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan import launch as new
spec = importlib.util.spec_from_file_location("launch_old", sys.argv[1])
import sys; old = importlib.util.module_from_spec(spec); sys.modules["launch_old"] = old; spec.loader.exec_module(old)
info, dev = select("0"); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
v = ScanVariant("sum", "float32")
ev = cl.enqueue_marker(q); ev.wait()
real = cl.enqueue_nd_range_kernel
def best(fn):
    b = 1e9
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(3000): fn()
        b = min(b, (time.perf_counter() - t0) / 3000)
    return b * 1e6
for cfg, n in ((ScanConfig("rows", wg=256, items=16, stage=1, chain=1), 4096),
               (ScanConfig("rows", wg=16, items=16, stage=1, chain=1), 1 << 16)):
    x = cla.to_device(q, np.random.rand(n).astype(np.float32)); y = cla.empty(q, n, np.float32)
    las = {"old": old.ScanLauncher(ctx, dev, info, v, cfg), "new": new.ScanLauncher(ctx, dev, info, v, cfg)}
    for la in las.values():
        for _ in range(3): la.enqueue(q, x.data, 0, y.data, 0, (1, n, 1))
        q.finish()
        got = y.get(); assert np.allclose(got, np.cumsum(x.get(), dtype=np.float64), rtol=1e-4)
    cl.enqueue_nd_range_kernel = lambda *a, **k: ev
    res = {k: [] for k in las}
    for _ in range(3):
        for k, la in las.items():
            res[k].append(best(lambda: la.enqueue(q, x.data, 0, y.data, 0, (1, n, 1))))
    cl.enqueue_nd_range_kernel = real
    print(cfg.short(), n, las["new"].plan(1, n, 1).groups, "groups:", {k: " ".join(f"{t:.2f}" for t in v) for k, v in res.items()})
