# ruff: noqa  (one-off experiment, kept terse)
"""What a small blocking read back costs a call (bincount reads its input's min and max back
to size its result, #41): wall per call of back-to-back calls of a one-work-item kernel then a
blocking read of 16 bytes into (a) a numpy array, (b) the mapped view of a host-allocated
(pinned) buffer, (c) the kernel then `queue.finish()` only, (d) the kernel then a blocking
map/unmap of a host-allocated buffer; beside the whole `cltune.bincount(x)` and its extremes
launch with their read back (`HistLauncher.extremes`).

    python scripts/experiments/readback_costs.py --device NVIDIA
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--calls", type=int, default=300)
ap.add_argument("--blocks", type=int, default=5)
ap.add_argument("--n", type=int, default=1 << 20)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
prg = cl.Program(ctx, "__kernel void t(__global int *o) { o[get_global_id(0)] = 7; }").build()
k = prg.t
d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
k.set_args(d)
host = np.zeros(4, np.int32)
pin = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, 64)
pinned, _ = cl.enqueue_map_buffer(q, pin, cl.map_flags.READ | cl.map_flags.WRITE, 0, (4,), np.int32)
E = cl.enqueue_nd_range_kernel
x = cla.to_device(q, np.random.default_rng(0).integers(0, 256, a.n).astype(np.int32))
cltune.bincount(x); q.finish()
from cltune.families.hist import api as H
la = None
try:
    from cltune.families.hist.family import HistVariant
    la, _ = H.engine(q, HistVariant("bincount", x.dtype, None), None).served(a.n, 256)
except Exception as e:
    print("no launcher:", e)


def into_numpy():
    ev = E(q, k, (4,), (4,))
    cl.enqueue_copy(q, host, d, wait_for=[ev], is_blocking=True)


def into_pinned():
    ev = E(q, k, (4,), (4,))
    cl.enqueue_copy(q, pinned, d, wait_for=[ev], is_blocking=True)


def finish_only():
    E(q, k, (4,), (4,)); q.finish()


def map_unmap():
    E(q, k, (4,), (4,))
    ev = cl.enqueue_copy(q, pin, d)  # device to the host-allocated buffer
    m, _ = cl.enqueue_map_buffer(q, pin, cl.map_flags.READ, 0, (4,), np.int32, wait_for=[ev])
    int(m[0]); m.base.release()


rows = {"kernel + blocking read into numpy": into_numpy,
        "kernel + blocking read into a pinned mapping": into_pinned,
        "kernel + queue.finish()": finish_only,
        "kernel + copy to pinned + blocking map": map_unmap,
        "cltune.bincount(x)": lambda: cltune.bincount(x)}
if la is not None:
    rows["HistLauncher.extremes (launch + read)"] = lambda: la.extremes(q, x, 0, a.n)
res = {r: [] for r in rows}
names = list(rows)
for b in range(a.blocks):
    for name in names[b % len(names):] + names[:b % len(names)]:
        f = rows[name]; f(); q.finish()
        t = time.perf_counter()
        for _ in range(a.calls):
            f()
        q.finish(); res[name].append((time.perf_counter() - t) / a.calls * 1e6)
print(f"# {info.name} | {dev.platform.version} | n={a.n} | {a.calls} calls x {a.blocks} blocks, medians, µs per call")
w = max(map(len, names))
for n in names:
    print(f"{n:>{w}}  {statistics.median(res[n]):8.2f}")
