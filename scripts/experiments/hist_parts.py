# ruff: noqa  (one-off experiment, kept terse)
"""The parts of a warm `cltune.histogram(x, 256, (0, 1))` call timed apart on a device (wall
per call of back-to-back calls): the whole call, the counting launches alone (`_run`), the
edges' device-to-device copy alone, and a 1 KB device copy.

    python scripts/experiments/hist_parts.py --device NVIDIA --n 1048576
"""
import argparse, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--n", type=int, default=1 << 20)
ap.add_argument("--calls", type=int, default=300)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
from cltune.families.hist import api as H

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
x = cla.to_device(q, np.random.default_rng(0).random(a.n, dtype=np.float32))
bin_type, edges = H._uniform_edges(0.0, 1.0, x.dtype, 256)
xd = x if x.dtype == bin_type else x.astype(bin_type)
variant = H.HistVariant("histogram", np.dtype(bin_type), None)
bins_d = H.UniformBins(np.asarray(edges, bin_type), 1.0)
src = cla.to_device(q, edges)
dst = cla.empty_like(src)
parts = {"whole call": lambda: cltune.histogram(x, 256, (0.0, 1.0)),
         "_run (counting launches)": lambda: H._run(q, variant, None, xd, None, 256, bins_d),
         "_edges_array": lambda: H._edges_array(q, edges),
         "enqueue_copy 1 KB d2d": lambda: cl.enqueue_copy(q, dst.base_data, src.base_data,
                                                          byte_count=src.nbytes),
         "whole call again": lambda: cltune.histogram(x, 256, (0.0, 1.0))}
print(f"{info.name}, n={a.n}, x {x.dtype}, bins in {bin_type}")
for name, f in parts.items():
    f(); q.finish()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(a.calls // 5):
            f()
        q.finish()
        ts.append((time.perf_counter() - t0) / (a.calls // 5) * 1e6)
    print(f"{name:>28}: {sorted(ts)[2]:7.1f} us a call (median of 5 blocks)", flush=True)
