"""The 1-D builtin CPU config in one launch (passes=1: the last group finishes) against two
(passes=2), float32 sums, alternating blocks in one process: where a second launch costs more
than it saves on a CPU runtime (#39 item 2; cltune/families/reduce/defaults.CPU_ONE_PASS_MAX).

    python scripts/experiments/cpu_passes_ab.py [PLATFORM_INDEX] [N,N,...]
"""
import dataclasses
import statistics
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.ops import OpSpec
from cltune.device.select import info_for
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.launch import Launcher

plat = cl.get_platforms()[int(sys.argv[1]) if len(sys.argv) > 1 else 0]
d = plat.get_devices()[0]
ctx = cl.Context([d])
q = cl.CommandQueue(ctx)
info = info_for(d)
spec = OpSpec("sum", "float32")
SIZES = ([int(v) for v in sys.argv[2].split(",")] if len(sys.argv) > 2
         else [4096, 8192, 16384, 32768, 65536, 1 << 20, 1 << 24])
c2 = dataclasses.replace(builtin_config(info, spec), passes=2)
c1 = dataclasses.replace(c2, passes=1)
print(d.name, c2.short(), "vs passes=1")
las = {1: Launcher(ctx, d, info, spec, c1), 2: Launcher(ctx, d, info, spec, c2)}
out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8)
for n in SIZES:
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(q, h)
    calls = max(20, min(1000, (1 << 26) // n))
    res = {1: [], 2: []}
    for p, la in las.items():
        la.enqueue(q, x.data, 0, n, out)
        q.finish()
        r = np.empty(1, np.float32)
        cl.enqueue_copy(q, r, out)
        assert abs(r[0] - h.sum(dtype=np.float64)) < 1e-3 * n ** 0.5, (p, r, h.sum())
    for blk in range(7):
        for p in ((1, 2) if blk % 2 else (2, 1)):
            la = las[p]
            t = time.perf_counter()
            for _ in range(calls):
                la.enqueue(q, x.data, 0, n, out)
            q.finish()
            res[p].append((time.perf_counter() - t) / calls * 1e6)
    m1, m2 = statistics.median(res[1]), statistics.median(res[2])
    print(f"n={n:>9}: passes=2 {m2:8.2f} us  passes=1 {m1:8.2f} us  ratio(2/1) {m2/m1:.2f}")
