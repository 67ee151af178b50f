# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: argmax (OP=mean, OP=norm, OP=var: the mean, the L2 norm, var) along axis 0 of a few
columns, the vector kernel (argvec.cols; normvec.cols) against the expression path it replaced
(takes_cols forced off), beside numpy and the 1-D sum of the same array; ms a call, median of
REPEATS blocks of CALLS calls, each block of cltune's after one of numpy's (the same cache
state for every cltune block).

    DEV=1 python scripts/experiments/arg_cols_ab.py
    DEV=0 OP=mean python scripts/experiments/arg_cols_ab.py
"""
import os, statistics, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
from cltune.stats import api as stats_api
from cltune.stats import argvec, normvec

dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 7))
rng = np.random.default_rng(3)
r = cltune.get_reducer(q, "sum", np.float32)
OP = os.environ.get("OP", "argmax")
AX = int(os.environ.get("AXIS", "-2"))  # -1: along a few long rows
MOD = argvec if OP == "argmax" else normvec
real = MOD.takes_cols
CALL = {"argmax": cltune.argmax, "mean": cltune.mean, "norm": cltune.norm,
        "var": cltune.var}[OP]
NP = {"argmax": lambda h: h.argmax(axis=AX), "mean": lambda h: h.mean(axis=AX),
      "norm": lambda h: np.linalg.norm(h, axis=AX), "var": lambda h: h.var(axis=AX)}[OP]
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get("SHAPES", "2000003x4,1048576x16,4000037x2,500001x8,3x700001x8,65537x4").split(",")]


def block(f, fin):
    t = time.perf_counter()
    for _ in range(CALLS):
        f()
    fin()
    return (time.perf_counter() - t) / CALLS * 1e3


def expr(x):
    MOD.takes_cols = lambda *a: False
    try:
        return CALL(x, axis=AX)
    finally:
        MOD.takes_cols = real
        stats_api._along_calls.clear()  # the expression path's call is kept: not for "v"


print(f"# {dev.name}; float32 {OP} along axis {AX}; ms a call, median of {REPEATS} blocks of {CALLS}")
print("| shape | MB | vector kernel | expression path | numpy | 1-D sum | speed-up | x numpy | of 1-D |")
print("|---|---|---|---|---|---|---|---|---|")
for shape in SHAPES:
    h = rng.standard_normal(shape).astype(np.float32)
    x = cla.to_device(q, h)
    assert np.allclose(CALL(x, axis=AX).get(), NP(h.astype(np.float64)), rtol=1e-5)
    assert np.allclose(expr(x).get(), NP(h.astype(np.float64)), rtol=1e-5)
    flat = x.reshape(-1)
    fs = {"v": (lambda: CALL(x, axis=AX), q.finish), "e": (lambda: expr(x), q.finish),
          "s": (lambda: r(flat), q.finish), "n": (lambda: NP(h), lambda: None)}
    t = {k: [] for k in fs}
    for k in fs:
        block(*fs[k])
    for i in range(REPEATS):
        for k in ("v", "e", "s")[i % 3:] + ("v", "e", "s")[:i % 3]:
            t["n"].append(block(*fs["n"]))
            t[k].append(block(*fs[k]))
    if os.environ.get("ALL"): print(t)
    v, e, n, s = (statistics.median(t[k]) for k in "vens")
    print(f"| {'x'.join(map(str, shape))} | {h.nbytes / 2**20:.0f} | {v:.2f} | {e:.2f} | {n:.2f} | "
          f"{s:.2f} | {e / v:.2f} | {n / v:.2f} | {s / v:.2f} |", flush=True)
