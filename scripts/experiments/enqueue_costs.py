# ruff: noqa  (one-off experiment, kept terse)
"""What a driver charges the host per ND-range enqueue, by what the launch carries (#39): a
one-work-item kernel with its arguments set once (the bare floor) against the same with
arguments set each call, more arguments, a wider grid, a `__local` argument, a wait list, and a
real cltune reducer's warm call; wall and the thread's CPU per call of back-to-back calls
(medians of blocks, rows interleaved), one process.

    python scripts/experiments/enqueue_costs.py --device NVIDIA
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import pyopencl._cl as _cl

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--calls", type=int, default=1000)
ap.add_argument("--blocks", type=int, default=5)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
SRC = """
__kernel void t0(__global float *o) { o[get_global_id(0)] = 1.0f; }
__kernel void t8(__global float *o, __global const float *a, __global const float *b,
                 __global float *c, long n, long off, uint k, uint m) {
    if (get_global_id(0) == 0 && n < 0) o[off + k + m] = a[0] + b[0] + c[0];
    else if (get_global_id(0) == 0) o[0] = 1.0f; }
__kernel void tl(__global float *o, __local float *t) {
    t[get_local_id(0)] = 1.0f; barrier(CLK_LOCAL_MEM_FENCE);
    if (get_global_id(0) == 0) o[0] = t[0]; }
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void tr(__global float *o) {
    if (get_global_id(0) == 0) o[0] = 1.0f; }
"""
prg = cl.Program(ctx, SRC).build()
o = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 23)
o2 = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 23)
k0, k8, kl, kr = prg.t0, prg.t8, prg.tl, prg.tr
k0.set_args(o)
k8.set_args(o, o, o, o, np.int64(5), np.int64(0), np.uint32(1), np.uint32(2))
kl.set_args(o, cl.LocalMemory(1024))
kr.set_args(o)
k0b = prg.t0; k0b.set_args(o)  # note: prg.t0 makes a new kernel object each access
E = cl.enqueue_nd_range_kernel
last = [E(q, k0, (1,), (1,))]
q.finish()
user = cl.UserEvent(ctx); user.set_status(cl.command_execution_status.COMPLETE)
flip = [o, o2]
x = cla.to_device(q, np.random.default_rng(0).random(4096, dtype=np.float32))
r = cltune.get_reducer(q)
r(x); q.finish()


def alt_arg():
    flip.reverse(); k0.set_arg(0, flip[0]); return E(q, k0, (1,), (1,))


def chained():
    last[0] = E(q, k0, (1,), (1,), wait_for=[last[0]]); return last[0]


rows = {
    "bare: 1 arg set once, (1,)x(1,)": lambda: E(q, k0, (1,), (1,)),
    "+ set_arg(0, same buffer) a call": lambda: (k0.set_arg(0, o), E(q, k0, (1,), (1,)))[1],
    "+ set_arg(0, other buffer) a call": alt_arg,
    "+ set_args(1 buffer) a call": lambda: (k0.set_args(o), E(q, k0, (1,), (1,)))[1],
    "grid 132x256, groups of 256": lambda: E(q, k0, (132 * 256,), (256,)),
    "grid 4096x256, groups of 256": lambda: E(q, k0, (4096 * 256,), (256,)),
    "local size None, (1,)": lambda: E(q, k0, (1,), None),
    "8 args set once": lambda: E(q, k8, (1,), (1,)),
    "8 args, 2 buffers set a call": lambda: (k8.set_arg(0, o), k8.set_arg(3, o), E(q, k8, (1,), (1,)))[1],
    "a __local arg, (256,)x(256,)": lambda: E(q, kl, (256,), (256,)),
    "reqd_work_group_size 256, (256,)": lambda: E(q, kr, (256,), (256,)),
    "wait_for=[previous launch]": chained,
    "wait_for=[completed user event]": lambda: E(q, k0, (1,), (1,), wait_for=[user]),
    "wait_for=[] (empty list)": lambda: E(q, k0, (1,), (1,), wait_for=[]),
    "cltune r(x) 4096 (warm)": lambda: r(x),
    "cla.empty(q, 1, f32) only (no launch)": lambda: cla.empty(q, (), np.float32),
}
res = {k: [] for k in rows}
cpu = {k: [] for k in rows}
names = list(rows)
for b in range(a.blocks):
    for name in names[b % len(names):] + names[:b % len(names)]:
        f = rows[name]
        f(); q.finish()
        t = time.perf_counter(); c = time.thread_time()
        for _ in range(a.calls):
            f()
        c1 = time.thread_time(); q.finish(); t1 = time.perf_counter()
        res[name].append((t1 - t) / a.calls * 1e6); cpu[name].append((c1 - c) / a.calls * 1e6)
print(f"# {info.name} | {dev.platform.version} | {a.calls} calls x {a.blocks} blocks, medians, µs per call")
base = statistics.median(res[names[0]])
w = max(len(n) for n in names)
print(f"{'launch':>{w}}  wall µs  cpu µs  wall − bare")
for n in names:
    m = statistics.median(res[n])
    print(f"{n:>{w}}  {m:7.2f}  {statistics.median(cpu[n]):6.2f}  {m - base:+7.2f}")
