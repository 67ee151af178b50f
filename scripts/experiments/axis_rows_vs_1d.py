# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: `r(x, axis=1)` (float32 sums along short rows) against the 1-D sum of the same
array, ms a call, blocks of 3 calls each after one numpy call (the same cache state), median of
7. Run it at two commits to compare kernels (docs/logs/cpu-axis-packed-tree-2026-12-07.txt).

    DEV=1 TAG=new [SHAPES=2000003x5,1000003x7] python scripts/experiments/axis_rows_vs_1d.py
"""
import numpy as np, pyopencl as cl, pyopencl.array as cla, cltune, time, os, statistics
from cltune.device.select import select
dev=select(os.environ.get("DEV","1"))[1]; ctx=cl.Context([dev]); q=cl.CommandQueue(ctx)
r=cltune.get_reducer(q,"sum",np.float32)
rng=np.random.default_rng(0)
SHAPES=os.environ.get("SHAPES","1048576x16,2000003x8,4000037x4,8000009x2,1000003x7")
for shape in [tuple(int(v) for v in s.split("x")) for s in SHAPES.split(",")]:
    h=rng.random(shape,dtype=np.float32); x=cla.to_device(q,h); flat=x.reshape(-1)
    assert np.allclose(r(x,axis=1).get(), h.sum(axis=1), rtol=1e-5)
    t={"c":[],"s":[]}
    def blk(f):
        t0=time.perf_counter()
        for i in range(3): f()
        q.finish(); return (time.perf_counter()-t0)/3e-3
    blk(lambda: r(x,axis=1)); blk(lambda: r(flat))
    for i in range(7):
        for k in ("c","s") if i%2 else ("s","c"):
            h.sum(axis=1); t[k].append(blk((lambda: r(x,axis=1)) if k=="c" else (lambda: r(flat))))
    c,s=statistics.median(t["c"]),statistics.median(t["s"])
    print(os.environ.get("TAG",""), shape, f"{c:.2f} ms, 1-D {s:.2f}, of 1-D {s/c:.2f}", flush=True)
