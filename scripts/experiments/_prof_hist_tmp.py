import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select
from cltune.families.hist import api as H

info, dev = select("NVIDIA")
q = cl.CommandQueue(cl.Context([dev]), dev)
rng = np.random.default_rng(0)
n = 1 << 20
f = cla.to_device(q, rng.random(n, dtype=np.float32))
T = {}


def wrap(mod, name):
    fn = getattr(mod, name)

    def w(*a, **k):
        t = time.perf_counter()
        r = fn(*a, **k)
        T[name] = T.get(name, 0.0) + time.perf_counter() - t
        return r
    setattr(mod, name, w)


for nm in ("_device_array", "_flat", "info_for", "_outer_edges", "_run", "_edges_array",
           "engine", "pool_for"):
    wrap(H, nm)
import cltune.families.hist.launch as L
wrap(L.HistLauncher, "run")
cltune.histogram(f, 256, (0.0, 1.0))
q.finish()
T.clear()
t = time.perf_counter()
for _ in range(20):
    cltune.histogram(f, 256, (0.0, 1.0))
q.finish()
print("per call", (time.perf_counter() - t) / 20 * 1e6)
for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
    print(f"  {k}: {v / 20 * 1e6:.1f} us")
x = cla.to_device(q, rng.standard_normal(n).astype(np.float32))
cltune.topk(x, 10)
q.finish()
t = time.perf_counter()
for _ in range(20):
    cltune.topk(x, 10)
q.finish()
print("topk per call", (time.perf_counter() - t) / 20 * 1e6)
t = time.perf_counter()
for _ in range(20):
    cltune.topk(x, 10)
    q.finish()
print("topk per call, finish each", (time.perf_counter() - t) / 20 * 1e6)
