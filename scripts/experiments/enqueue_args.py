# ruff: noqa  (one-off experiment, kept terse)
"""What a driver charges per kernel argument at enqueue (#39): one-work-item kernels with 1, 2,
4, 8, 12, 16 buffer arguments, 8 scalar (long) arguments, one struct of 8 longs by value, a
static `__local` array against a `__local` argument; arguments set once; wall and thread CPU
per call of back-to-back enqueues (medians of blocks, rows interleaved).

    python scripts/experiments/enqueue_args.py --device NVIDIA
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--calls", type=int, default=1000)
ap.add_argument("--blocks", type=int, default=5)
a = ap.parse_args()
warnings.simplefilter("ignore")
from cltune.device.select import select

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
src = []
for k in (1, 2, 4, 8, 12, 16):
    ps = ", ".join(f"__global float *p{i}" for i in range(k))
    src.append(f"__kernel void b{k}({ps}) {{ if (get_global_id(0) == 0) p0[0] = 1.0f; }}")
src.append("__kernel void s8(__global float *o, long a0, long a1, long a2, long a3, long a4, long a5, long a6, long a7)"
           " { if (a0 < 0) o[a1 + a2 + a3 + a4 + a5 + a6 + a7] = 0.0f; else o[0] = 1.0f; }")
src.append("typedef struct { long a[8]; } dims_t;\n"
           "__kernel void st(__global float *o, const dims_t d) { if (d.a[0] < 0) o[d.a[1]] = 0.0f; else o[0] = 1.0f; }")
src.append("__kernel void la(__global float *o, __local float *t) { t[get_local_id(0)] = 1.0f; barrier(CLK_LOCAL_MEM_FENCE); if (get_global_id(0) == 0) o[0] = t[3]; }")
src.append("__kernel void ls(__global float *o) { __local float t[256]; t[get_local_id(0)] = 1.0f; barrier(CLK_LOCAL_MEM_FENCE); if (get_global_id(0) == 0) o[0] = t[3]; }")
prg = cl.Program(ctx, "\n".join(src)).build()
o = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
ks = {}
for k in (1, 2, 4, 8, 12, 16):
    kn = getattr(prg, f"b{k}"); kn.set_args(*([o] * k)); ks[f"{k} buffer args"] = (kn, (1,), (1,))
s8 = prg.s8; s8.set_args(o, *[np.int64(i) for i in range(8)]); ks["1 buffer + 8 long args"] = (s8, (1,), (1,))
dt = np.dtype([("a", np.int64, 8)])
st = prg.st; st.set_args(o, np.zeros((), dt)); ks["1 buffer + 1 struct of 8 longs"] = (st, (1,), (1,))
la = prg.la; la.set_args(o, cl.LocalMemory(1024)); ks["__local argument, 256"] = (la, (256,), (256,))
ls = prg.ls; ls.set_args(o); ks["static __local array, 256"] = (ls, (256,), (256,))
E = cl.enqueue_nd_range_kernel
rows = {n: (lambda k=k, g=g, l=l: E(q, k, g, l)) for n, (k, g, l) in ks.items()}
rows["1 buffer + 1 struct, set a call"] = lambda: (st.set_arg(1, np.zeros((), dt)), E(q, st, (1,), (1,)))[1]
b2 = ks["2 buffer args"][0]; o2 = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
rows["2 buffers, the same one set a call"] = lambda: (b2.set_arg(1, o2), E(q, b2, (1,), (1,)))[1]
flip = [o, o2]
def alternate():
    flip.reverse(); b2.set_arg(1, flip[0]); return E(q, b2, (1,), (1,))
rows["2 buffers, two alternating set a call"] = alternate
held = []
def fresh():
    held[:] = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)]  # alive until the launch ran
    b2.set_arg(1, held[0]); return E(q, b2, (1,), (1,))
rows["2 buffers, a new cl.Buffer a call"] = fresh
import pyopencl.array as cla
import pyopencl.tools as clt
pool = clt.MemoryPool(clt.ImmediateAllocator(q))
def pooled():
    held[:] = [pool.allocate(4096)]
    b2.set_arg(1, held[0]); return E(q, b2, (1,), (1,))
rows["2 buffers, a pooled buffer a call"] = pooled
def arr():
    held[:] = [cla.Array(q, (1024,), np.float32)]
    b2.set_arg(1, held[0].base_data); return E(q, b2, (1,), (1,))
rows["2 buffers, a cl.array.Array a call"] = arr
res = {k: [] for k in rows}
names = list(rows)
for b in range(a.blocks):
    for name in names[b % len(names):] + names[:b % len(names)]:
        f = rows[name]
        f(); q.finish()
        t = time.perf_counter()
        for _ in range(a.calls):
            f()
        q.finish(); res[name].append((time.perf_counter() - t) / a.calls * 1e6)
print(f"# {info.name} | {dev.platform.version} | {a.calls} calls x {a.blocks} blocks, medians, µs per call")
base = statistics.median(res[names[0]])
w = max(len(n) for n in names)
for n in names:
    m = statistics.median(res[n])
    print(f"{n:>{w}}  {m:7.2f}  {m - base:+6.2f}")
