# ruff: noqa  (one-off experiment, kept terse)
"""Many arrays in one launch on a CPU device: the builtin ManyConfig beside alternatives given
as keyword sets, and numpy's separate sums, interleaved blocks in one process (launches and
wait; the arrays stay on the device). Every config's answers checked against float64 first.
    python scripts/experiments/many_cpu_sweep.py DEVICE OP K N ['wg=1,vec=16,items=4,steps=16,slots=32' ...]
e.g. python scripts/experiments/many_cpu_sweep.py 1 norm 64 65536 'wg=1,vec=16,items=4,steps=64,slots=32'"""
import sys, time, statistics, numpy as np, pyopencl as cl
from cltune.device.select import select
from cltune.families.many.config import ManyConfig
from cltune.families.many.defaults import builtin_config
from cltune.families.many.family import ManyVariant
from cltune.families.many.launch import ManyLauncher
from cltune.families.many.reference import Problem, run, upload

info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
op, k, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
v = ManyVariant(op, "float32")
rng = np.random.default_rng(1)
hs = [rng.random(n, dtype=np.float32) for _ in range(k)]
bufs = upload(ctx, hs)
p = Problem(tuple([n] * k), tuple([0] * k))
want = np.array([np.sqrt((h.astype(np.float64) ** 2).sum()) if op == "norm" else h.astype(np.float64).sum() for h in hs])
key = (int(np.log2(k)), int(np.log2(n)))
cfgs = {"builtin": builtin_config(info, key, 8)}
for s in sys.argv[5:]:
    cfgs[s] = ManyConfig(**{a: int(b) for a, b in (t.split("=") for t in s.split(","))})
las = {}
for name, c in cfgs.items():
    la = ManyLauncher(ctx, dev, info, v, c)
    got = run(la, q, bufs, p).astype(np.float64)
    print(f"{name:45s} {c.short():30s} max rel err {np.max(np.abs(got - want) / want):.1e}")
    las[name] = la
out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * k)
pieces = [(b, 0, n) for b in bufs]
f = (lambda h: np.sqrt(np.dot(h, h))) if op == "norm" else np.sum
ts = {name: [] for name in [*las, "numpy (k calls)"]}
reps = max(1, int(2e8 / (4 * n * k)))
for _ in range(9):
    for name in ts:
        t0 = time.perf_counter()
        for _ in range(reps):
            if name.startswith("numpy"):
                [f(h) for h in hs]
            else:
                cl.wait_for_events(las[name].enqueue(q, pieces, out))
        ts[name].append((time.perf_counter() - t0) / reps * 1e6)
print(f"{info.name[:24]} {op} {k} arrays of {n}, {reps} calls a block, median of 9 blocks")
md = {name: statistics.median(t) for name, t in ts.items()}
for name, t in md.items():
    print(f"  {name:45s} {t:9.1f} us  numpy/this {md['numpy (k calls)'] / t:5.2f}x")
