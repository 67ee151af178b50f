# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: statistics and expressions along rows of 2..16 elements, the served config
built for a row length known at run time (`general`) against the same config built for the
exact length (`exact`, kernel.build's `short`: defaults.short_rows), interleaved blocks in one
process (a block: CALLS calls then one finish; the order alternates), medians of REPEATS, ms a
call, beside numpy and the 1-D sum `r(x)` of the same array; every answer checked first.

    DEV=1 python scripts/experiments/short_rows_cpu.py
    DEV=0 LENS=4,5 OPS=mean,var N=8000000 python scripts/experiments/short_rows_cpu.py
    EXACT_ALL=1 OPS=var python scripts/experiments/short_rows_cpu.py   (the rule's size limit off)
"""
import os, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.expr_axis.api as api
from cltune.device.select import select

warnings.simplefilter("ignore")
info, dev = select(os.environ.get("DEV", "1"))
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 5))
N = int(os.environ.get("N", 8_000_000))  # elements an array (32 MB of float32)
LENS = [int(v) for v in os.environ.get("LENS", "2,3,4,5,7,8,12,16").split(",")]
OPS = os.environ.get("OPS", "mean,norm,argmax,var,sum").split(",")
SUM = "__global const float *x"
F = {"mean": (cltune.mean, np.mean), "var": (cltune.var, np.var),
     "argmax": (cltune.argmax, np.argmax),
     "norm": (cltune.norm, lambda h, axis: np.sqrt((h.astype(np.float64) ** 2).sum(axis=axis))),
     "sum": (None, lambda h, axis: h.sum(axis=axis))}
served_rule = api.short_rows
if os.environ.get("EXACT_ALL"):  # every accumulator's size taken (var's 32-byte ones too)
    served_rule = lambda info, cfg, plan, o, r, i, acc, f=api.short_rows: f(info, cfg, plan, o, r, i, 8)


def use(exact):
    api.short_rows = served_rule if exact else (lambda *a, **k: 0)


def block(f, fin):
    t = time.perf_counter()
    for _ in range(CALLS):
        f()
    fin()
    return (time.perf_counter() - t) / CALLS * 1e3


print(f"# {dev.name} ({' '.join(dev.platform.version.split()[:3])}); float32 along rows; ms a "
      f"call, median of {REPEATS} blocks of {CALLS}")
print("| op | shape | numpy | 1-D sum | general | exact | general/exact | exact of 1-D |")
print("|---|---|---|---|---|---|---|---|")
rng = np.random.default_rng(3)
for r in LENS:
    h = rng.standard_normal((N // r, r)).astype(np.float32)
    ctxs = [cl.Context([dev]) for _ in range(2)]
    qs = [cl.CommandQueue(c) for c in ctxs]
    xs = [cla.to_device(q, h) for q in qs]
    red = cltune.get_reducer(qs[0], "sum", np.float32)
    for op in OPS:
        f, nf = F[op]
        if op == "sum":
            ks = [cltune.ReductionKernel(c, np.float32, "0", "a+b", "x[i]", SUM) for c in ctxs]
            calls = [lambda i=i: ks[i](xs[i], axis=1) for i in range(2)]
        else:
            calls = [lambda i=i: f(xs[i], axis=1) for i in range(2)]
        want = nf(h.astype(np.float64) if op != "argmax" else h, axis=1)
        for i, exact in enumerate((False, True)):
            use(exact)
            got = calls[i]().get()
            ok = (np.array_equal(got, want) if op == "argmax"
                  else np.allclose(got, want, rtol=2e-5, atol=1e-5))
            assert ok, (op, r, exact)
        use(True)
        ts = {0: [], 1: [], "np": [], "1d": []}
        for b in range(REPEATS):
            order = (0, 1) if b % 2 == 0 else (1, 0)
            for i in order:
                ts[i].append(block(calls[i], qs[i].finish))
            ts["1d"].append(block(lambda: red(xs[0]), qs[0].finish))
            t = time.perf_counter()
            nf(h, axis=1)
            ts["np"].append((time.perf_counter() - t) * 1e3)
        m = {k: statistics.median(v) for k, v in ts.items()}
        print(f"| {op} | {h.shape[0]}x{r} | {m['np']:.2f} | {m['1d']:.2f} | {m[0]:.2f} | "
              f"{m[1]:.2f} | {m[0] / m[1]:.2f} | {m['1d'] / m[1]:.2f} |", flush=True)
