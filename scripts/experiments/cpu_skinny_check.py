# ruff: noqa  (one-off experiment, kept terse)
"""#40's CPU target on skinny shapes, one process: for each (call, shape, axis) the served
cltune call, numpy's, and cltune's 1-D sum `r(x)` of the same array, interleaved blocks (a
block: CALLS calls then `queue.finish()`), medians of REPEATS blocks, ms a call; `x np` is
numpy's time / cltune's, `of 1-D` the call's GB/s / the 1-D sum's (the bytes read, and for
cumsum written too, as docs/benchmarks.md counts them: the 1-D sum's time / the call's, twice
that for cumsum) (#40: >= 1.0 and >= 0.8 for arrays >= 8 MB). Every answer is checked against numpy in float64 first. Each block of
cltune's (the call's and the 1-D sum's) follows one of numpy's: on a host whose last-level
cache holds the array, a block that followed the call on the same array would find it warm.

    DEV=1 python scripts/experiments/cpu_skinny_check.py
    DEV=0 ONLY=sum python scripts/experiments/cpu_skinny_check.py
"""
import os, statistics, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select

dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 5))
ONLY = os.environ.get("ONLY", "")
rng = np.random.default_rng(7)
r = cltune.get_reducer(q, "sum", np.float32)

S = [("sum", (65536, 256), 0), ("sum", (65536, 256), 1), ("sum", (2000003, 5), 0),
     ("sum", (2000003, 5), 1), ("sum", (1048576, 16), 1), ("sum", (1048576, 16), 0),
     ("sum", (7, 1500001), 1), ("sum", (7, 1500001), 0), ("sum", (3, 4000037), 1),
     ("sum", (1, 8000009), 1), ("sum", (4096, 4096), 0), ("sum", (64, 1000, 50), 1),
     ("sum", (64, 1000, 50), 2), ("mean", (4, 2000003), 1), ("mean", (2000003, 4), 1),
     ("mean", (2000003, 4), 0), ("var", (4, 2000003), 1), ("var", (2000003, 4), 0),
     ("argmax", (4, 2000003), 1), ("argmax", (2000003, 4), 0), ("norm", (7, 1500001), 1),
     ("cumsum", (33, 100003), 0), ("cumsum", (100003, 33), 1), ("cumsum", (64, 131072), 0)]
F = {"sum": (lambda x, a: r(x, axis=a), lambda h, a: h.sum(axis=a)),
     "mean": (lambda x, a: cltune.mean(x, axis=a), lambda h, a: h.mean(axis=a)),
     "var": (lambda x, a: cltune.var(x, axis=a), lambda h, a: h.var(axis=a)),
     "argmax": (lambda x, a: cltune.argmax(x, axis=a), lambda h, a: h.argmax(axis=a)),
     "norm": (lambda x, a: cltune.norm(x, axis=a), lambda h, a: np.sqrt((h * h).sum(axis=a))),
     "cumsum": (lambda x, a: cltune.cumsum(x, axis=a), lambda h, a: np.cumsum(h, axis=a))}


def block(f, fin):
    t = time.perf_counter()
    for _ in range(CALLS):
        f()
    fin()
    return (time.perf_counter() - t) / CALLS * 1e3


print(f"# {dev.name} ({dev.platform.version}); float32; ms a call, median of {REPEATS} "
      f"blocks of {CALLS}")
print("| call | shape | axis | MB | cltune | numpy | 1-D sum | x np | of 1-D GB/s |")
print("|---|---|---|---|---|---|---|---|---|")
for op, shape, ax in S:
    if ONLY and op != ONLY:
        continue
    h = rng.random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    cf, nf = F[op]
    got = cf(x, ax).get().astype(np.float64)
    want = nf(h.astype(np.float64), ax)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-3), (op, shape, ax)
    flat = x.reshape(-1)
    t = {"c": [], "n": [], "s": []}
    fs = {"c": (lambda: cf(x, ax), q.finish), "n": (lambda: nf(h, ax), lambda: None),
          "s": (lambda: r(flat), q.finish)}
    for k, (f, fin) in fs.items():
        block(f, fin)
    for i in range(REPEATS):  # numpy's call before each of cltune's: the same cache state
        for k in ("n", "c", "n", "s") if i % 2 else ("n", "s", "n", "c"):
            t[k].append(block(*fs[k]))
    c, n, s = (statistics.median(t[k]) for k in "cns")
    moved = 2 if op == "cumsum" else 1  # a scan writes what it reads
    print(f"| {op} | {'x'.join(map(str, shape))} | {ax} | {h.nbytes / 2**20:.0f} | {c:.2f} | "
          f"{n:.2f} | {s:.2f} | {n / c:.2f} | {moved * s / c:.2f} |", flush=True)
