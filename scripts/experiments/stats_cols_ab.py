"""Statistics along axis 0 (the expression kernel's `cols` layout) of 4096x4096 and 65536x256
float32, ms a call (the best of 5, after one warm call): run it under two PYTHONPATHs (a site
of the code before and after a change, kernels/ and tuning_db/ copied into cltune/) in
alternation, on each CPU runtime (#40).

    DEV=0 PYTHONPATH=/tmp/before-site python scripts/experiments/stats_cols_ab.py
"""

import os
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select

dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
AX = int(os.environ.get("AX", "0"))
out = []
for shape in ((4096, 4096), (65536, 256)):
    h = np.random.default_rng(0).random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    for name, f in (("mean", lambda x=x: cltune.mean(x, axis=AX)),
                    ("var", lambda x=x: cltune.var(x, axis=AX)),
                    ("argmax", lambda x=x: cltune.argmax(x, axis=AX)),
                    ("norm", lambda x=x: cltune.norm(x, axis=AX))):
        f()
        q.finish()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            f()
            q.finish()
            ts.append(time.perf_counter() - t)
        out.append(f"{name}{shape[0]}={min(ts) * 1e3:.2f}")
print(" ".join(out))
