"""The host part (enqueue stubbed) of ten warm calls, one line of minima (#39): run it under
two PYTHONPATHs (a site of the code before and after a change, each with kernels/ and
tuning_db/ copied into cltune/) in alternation, on the same device, and compare the lines.

    DEV=1 PYTHONPATH=/tmp/before-site python scripts/experiments/host_trim_ab.py
"""
import os
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select
from cltune.opencl.host_part import measure

print("#", cltune.__file__, file=sys.stderr)
dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
rng = np.random.default_rng(1)
r = cltune.get_reducer(q, "sum", np.float32)
x = cla.to_device(q, rng.random(4096, dtype=np.float32))
a = cla.to_device(q, rng.random((100, 100), dtype=np.float32))
b = cla.to_device(q, rng.random((1000, 1000), dtype=np.float32))
s = cltune.get_scanner(q)
x1 = cla.to_device(q, rng.random(1000, dtype=np.float32))
cases = {
 "r(x)": lambda: r(x),
 "r(a,1)": lambda: r(a, axis=1),
 "r(a,0)": lambda: r(a, axis=0),
 "mean(b,1)": lambda: cltune.mean(b, axis=1),
 "argmax": lambda: cltune.argmax(x),
 "norm": lambda: cltune.norm(x),
 "var": lambda: cltune.var(x),
 "scan": lambda: s(x1),
 "cumsum": lambda: cltune.cumsum(x1),
 "hist": lambda: cltune.histogram(x, 256, (0, 1)),
}
for f in cases.values():
    for _ in range(5):
        f()
q.finish()
out = {}
for k, f in cases.items():
    out[k] = min(measure(f, q, 100, 3).us for _ in range(15))
print(" ".join(f"{k}={v:.2f}" for k, v in out.items()))
