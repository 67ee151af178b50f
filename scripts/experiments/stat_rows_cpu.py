"""#40: statistics along short rows on a CPU, kernels/normvec.cl's clt_normvec_rows<L> beside
the 1-D sum of the same bytes (cltune's reducer): ms a call, medians of 7 blocks.

    DEV=0 LENS=2,3,4,5,8,16 ROWS=2000003 python scripts/experiments/stat_rows_cpu.py
    API=1 ...: then cltune.mean / var / norm along axis 1 as served (API=only: those alone)
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select
from cltune.opencl.sources import kernel_file

info, dev = select(os.environ.get("DEV", "0"))
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
API_ONLY = os.environ.get("API") == "only"  # the public calls alone (a tree without the kernels)
prg = None if API_ONLY else cl.Program(ctx, kernel_file("normvec.cl")).build(
    options=["-DCLT_NV_W=16", "-DCLT_NV_U=4"])
rows = int(os.environ.get("ROWS", "2000003"))
red = cltune.get_reducer(q, "sum", np.float32)


def med(f, n=10):
    f()
    q.finish()
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        q.finish()
        ts.append((time.perf_counter() - t0) / n * 1e3)
    return sorted(ts)[3]


print(f"# {dev.name} | {rows} rows | ms a call (of 1-D: the 1-D sum's time / this)")
for length in (int(v) for v in os.environ.get("LENS", "2,3,4,5,7,8,12,16").split(",")
               if not API_ONLY):
    h = np.random.default_rng(0).random((rows, length), dtype=np.float32)
    x = cla.to_device(q, h)
    out = cla.empty(q, rows, np.float32)
    k = {w: getattr(prg, f"clt_normvec_rows{c}{length}")
         for w, c in ((0, "s"), (1, "n"), (2, "v"))}
    g = -(-rows // 256) * 256
    row = []
    norms = np.sqrt((h.astype(float) ** 2).sum(1))
    for what, want in ((0, h.mean(1)), (2, h.var(1)), (1, norms)):
        def f(what=what, k=k, g=g, x=x, out=out, length=length):
            k[what](q, (g,), (256,), x.data, np.int64(0), np.int64(rows), np.int32(what),
              np.float32(length), out.data, np.int64(0))
        f()
        assert np.allclose(out.get(), want, rtol=2e-6), (length, what)
        row.append(med(f))
    flat = x.reshape(-1)
    one = med(lambda flat=flat: red(flat))
    print(f"rows of {length:2d}: mean {row[0]:.3f} ({one / row[0]:.2f}), var {row[1]:.3f} "
          f"({one / row[1]:.2f}), norm {row[2]:.3f} ({one / row[2]:.2f}); 1-D sum {one:.3f}",
          flush=True)

if os.environ.get("API"):  # the public calls along axis 1, as served at this tree
    for length in (int(v) for v in os.environ.get("LENS", "2,3,4,5,7,8,12,16").split(",")):
        x = cla.to_device(q, np.random.default_rng(0).random((rows, length), dtype=np.float32))
        ts = [med(lambda f=f, x=x: f(x, axis=1)) for f in (cltune.mean, cltune.var, cltune.norm)]
        print(f"API rows of {length:2d}: mean {ts[0]:.3f}, var {ts[1]:.3f}, norm {ts[2]:.3f}",
              flush=True)
