# ruff: noqa  (one-off experiment, kept terse)
"""#39: what in a launch costs the driver's enqueue time beyond a bare one (NVIDIA's
clEnqueueNDRangeKernel took ~2 us more for cltune's kernels than for a one-argument kernel in
call_floor.py, with cltune's Python stubbed out). Cases, interleaved blocks in one process
(CALLS back-to-back calls then one finish), medians of BLOCKS, the calling thread's CPU us a
call (wall beside it):

- bare: trivial(o), arguments set once (call_floor.py's `bare enqueue`);
- wait: the same with wait_for=[the previous launch's event] (in-order queue);
- fresh buffer: a new cl.Buffer set as the argument before each launch (a result a call);
- pool buffer: the same from a pyopencl MemoryPool;
- 6 args: 3 buffers + 3 scalars, set once; 6 args + local: and a __local argument;
- 6 args, 2 set: two of the buffers set again before each launch (the same buffers);
- r's kernels, bare: the 1-D reducer's served kernels, arguments set once
  (scripts/per_call.py's `same kernels, bare`); its first kernel alone; the trivial kernel
  at that kernel's global/local sizes (the sizes, not the kernel);
- r(x) / r(x) pool / r(x, out=o): the 1-D reducer on 4096 float32, x from the default
  allocator / from a MemoryPool (results then come from the pool) / into one result;
- mean(axis=1) / pool: cltune.mean of 1000x1000 along 1, default / pool allocator.

    DEV=NVIDIA python scripts/experiments/enqueue_cost.py
"""
import os, statistics, time
import numpy as np, pyopencl as cl, pyopencl.array as cla, pyopencl.tools as clt
import cltune
from cltune.device.select import select

dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, BLOCKS = int(os.environ.get("CALLS", 1000)), int(os.environ.get("BLOCKS", 7))
src = """
__kernel void trivial(__global float *o) { o[get_global_id(0)] = 1.0f; }
__kernel void six(__global float *o, __global const float *a, __global uint *t, const long n,
                  const long m, const uint s) { if (get_global_id(0) == 0) o[0] = a[0] + n + m + s + t[0]; }
__kernel void sixl(__global float *o, __global const float *a, __global uint *t, const long n,
                   const long m, const uint s, __local float *l) {
    l[get_local_id(0)] = a[0]; barrier(CLK_LOCAL_MEM_FENCE);
    if (get_global_id(0) == 0) o[0] = l[0] + n + m + s + t[0]; }
"""
prg = cl.Program(ctx, src).build()
mf = cl.mem_flags
o = cl.Buffer(ctx, mf.READ_WRITE, 1 << 24)  # room for the trivial kernel at r's sizes
a = cl.Buffer(ctx, mf.READ_WRITE, 4096)
t = cl.Buffer(ctx, mf.READ_WRITE, 4096)
pool = clt.MemoryPool(clt.ImmediateAllocator(q))
kt = cl.Kernel(prg, "trivial"); kt.set_arg(0, o)
k6 = cl.Kernel(prg, "six"); k6.set_args(o, a, t, np.int64(5), np.int64(7), np.uint32(3))
k6l = cl.Kernel(prg, "sixl"); k6l.set_args(o, a, t, np.int64(5), np.int64(7), np.uint32(3), cl.LocalMemory(1024))
last = [cl.enqueue_nd_range_kernel(q, kt, (1,), None)]
g1, l1 = (1,), None
gl, ll = (64,), (64,)


def bare():
    cl.enqueue_nd_range_kernel(q, kt, g1, l1)


def wait():
    last[0] = cl.enqueue_nd_range_kernel(q, kt, g1, l1, wait_for=last)


kf = cl.Kernel(prg, "trivial")  # kernels of their own: their argument is freed after a call
kp = cl.Kernel(prg, "trivial")


def fresh():
    b = cl.Buffer(ctx, mf.READ_WRITE, 16)
    kf.set_arg(0, b)
    cl.enqueue_nd_range_kernel(q, kf, g1, l1)


def pooled():
    b = pool.allocate(16)
    kp.set_arg(0, b)
    cl.enqueue_nd_range_kernel(q, kp, g1, l1)


def six():
    cl.enqueue_nd_range_kernel(q, k6, g1, l1)


def six_set2():
    k6.set_arg(0, o); k6.set_arg(1, a)
    cl.enqueue_nd_range_kernel(q, k6, g1, l1)


def sixl():
    cl.enqueue_nd_range_kernel(q, k6l, gl, ll)


h = np.random.default_rng(1).random(4096).astype(np.float32)
x = cla.to_device(q, h)
xp = cla.to_device(q, h, allocator=pool)
out = cla.empty(q, (), np.float32)
r = cltune.get_reducer(q, "sum", np.float32)
h2 = np.random.default_rng(2).random((1000, 1000)).astype(np.float32)
x2 = cla.to_device(q, h2)
x2p = cla.to_device(q, h2, allocator=pool)
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from per_call import bare_kernels  # noqa: E402  (scripts/per_call.py)
rk, keep = bare_kernels(r, x)
rk1 = rk[0]
gr, lr = rk1[1], rk1[2]


def trivial_r_sizes():
    cl.enqueue_nd_range_kernel(q, kt, gr, lr)


def r_first():
    cl.enqueue_nd_range_kernel(q, rk1[0], gr, lr)


def r_bare():
    for k, g, l in rk:
        cl.enqueue_nd_range_kernel(q, k, g, l)


for v in (r(x), r(xp), r(x, out=out)):
    assert abs(float(v.get()) - h.sum(dtype=np.float64)) < 1e-2, v
for v in (cltune.mean(x2, axis=1), cltune.mean(x2p, axis=1)):
    assert np.allclose(v.get(), h2.mean(axis=1), rtol=1e-5)
cases = {"bare": bare, "wait": wait, "fresh buffer": fresh, "pool buffer": pooled,
         "6 args": six, "6 args, 2 set": six_set2, "6 args + local (wg 64)": sixl,
         "r's kernels, bare": r_bare,
         f"trivial at r's sizes {gr}/{lr}": trivial_r_sizes, "r's first kernel only": r_first, "r(x)": lambda: r(x), "r(x) pool": lambda: r(xp), "r(x, out=o)": lambda: r(x, out=out),
         "mean(axis=1)": lambda: cltune.mean(x2, axis=1),
         "mean(axis=1) pool": lambda: cltune.mean(x2p, axis=1)}
res = {k: ([], []) for k in cases}
names = list(cases)
for b in range(BLOCKS):
    for i in range(len(names)):
        nm = names[(i + b) % len(names)]
        f = cases[nm]
        f(); q.finish()
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(CALLS):
            f()
        c1 = time.thread_time()
        q.finish()
        res[nm][0].append((time.perf_counter() - t0) / CALLS * 1e6)
        res[nm][1].append((c1 - c0) / CALLS * 1e6)
print(f"# {dev.name} | {dev.platform.version} | driver {dev.driver_version} | {CALLS} calls x {BLOCKS} blocks, medians, us a call")
print("| case | host CPU us | wall us | host - bare |")
print("|---|---|---|---|")
hb = statistics.median(res["bare"][1])
for nm in names:
    w, c = statistics.median(res[nm][0]), statistics.median(res[nm][1])
    print(f"| {nm} | {c:.2f} | {w:.2f} | {c - hb:+.2f} |")
