#!/usr/bin/env python
"""Custom expression reductions side by side, in one process: cltune.ReductionKernel against
pyopencl.reduction.ReductionKernel on the same expressions (sum, dot, L2 `x*x`, abs-diff,
count `x>t`, a struct argmax), and cltune's argmax/var/mean/norm against numpy (and torch on
CUDA when importable and the device is NVIDIA's).

Every contender's answer is checked first; then the contenders of one row run interleaved
round-robin (cltune.cli.bench.interleaved) and each figure is the median over the repeats.
Times per call: `call` = `knl(...).get()` (an application that waits for each result),
`batch` = back-to-back calls then one finish. Ratio = other / cltune (> 1: cltune faster).

    python scripts/bench_expr.py --device 0 --sizes 2^12,2^16,2^20,2^24 --tune-trials 12 \\
        --json expr.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.reduction import ReductionKernel as PyRK
from pyopencl.tools import get_or_register_dtype

import cltune
from cltune.cli.bench import batch, interleaved, torch_usable, wall
from cltune.core.buckets import parse_sizes
from cltune.device.select import select
from cltune.stats import api as stats

AM_DTYPE = np.dtype([("index", np.int64), ("value", np.float32)], align=True)
AM_PRE = """
typedef struct { long index; float value; } bench_am_t;
bench_am_t am_make(float v, long i) { bench_am_t r; r.index = i; r.value = v; return r; }
bench_am_t am_agg(bench_am_t a, bench_am_t b) {
    if (a.value > b.value) return a;
    if (b.value > a.value) return b;
    return a.index < b.index ? a : b;
}
"""
F1 = "__global const float *x"
F2 = "__global const float *x, __global const float *y"


def expressions() -> dict[str, tuple]:
    """name -> (dtype_out, neutral, reduce, map, arguments, preamble, uses y, scalar t,
    numpy reference of (x, y))"""
    get_or_register_dtype("bench_am_t", AM_DTYPE)
    return {
        "sum": (np.float32, "0", "a+b", "x[i]", F1, "", False, None,
                lambda x, y: x.astype(np.float64).sum()),
        "dot": (np.float32, "0", "a+b", "x[i]*y[i]", F2, "", True, None,
                lambda x, y: np.dot(x.astype(np.float64), y)),
        "l2sq": (np.float32, "0", "a+b", "x[i]*x[i]", F1, "", False, None,
                 lambda x, y: np.dot(x.astype(np.float64), x)),
        "absdiff": (np.float32, "0", "a+b", "fabs(x[i]-y[i])", F2, "", True, None,
                    lambda x, y: np.abs(x.astype(np.float64) - y).sum()),
        "count_gt": (np.int64, "0", "a+b", "(x[i] > t) ? 1 : 0", F1 + ", float t", "", False,
                     np.float32(0.5), lambda x, y: np.count_nonzero(x > 0.5)),
        "argmax_struct": (AM_DTYPE, "am_make(-INFINITY, LONG_MAX)", "am_agg(a, b)",
                          "am_make(x[i], i)", F1, AM_PRE, False, None,
                          lambda x, y: np.argmax(x)),
    }


def _value(v: np.ndarray) -> float:
    return float(v["index"]) if v.dtype.names else float(v)


def _ok(got: float, want: float, n: int) -> bool:
    return abs(got - want) <= 1e-4 * max(1.0, abs(want)) + 1e-7 * n


def ratio_rows(samples: dict[str, list[float]], pairs: list[tuple[str, str]]) -> dict:
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"median_us": {k: v * 1e6 for k, v in med.items()},
            "ratios": {f"{o}/{c}": med[o] / med[c] for c, o in pairs if c in med and o in med}}


def bench_expressions(ctx, q, sizes, repeats, trials, db, rows, log):  # noqa: ANN001
    rng = np.random.default_rng(0)
    for name, (dt, neutral, red, mp, args, pre, uses_y, t, ref) in expressions().items():
        ours = cltune.ReductionKernel(ctx, dt, neutral, red, mp, args, preamble=pre, db=db)
        theirs = PyRK(ctx, dt, neutral, red, mp, args, preamble=pre)
        for b in sizes:
            n = 1 << b
            hx, hy = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
            x, y = cla.to_device(q, hx), cla.to_device(q, hy)
            a = (x, y) if uses_y else (x,)
            a = (*a, t) if t is not None else a
            if trials:
                t0 = time.perf_counter()
                ours.tune(*a, trials=trials, timeout=60 + n / 2**20, db=db)
                print(f"  tuned {name} 2^{b}: {trials} trials in {time.perf_counter() - t0:.1f} s",
                      flush=True)
            want = float(ref(hx, hy))
            for who, k in (("cltune", ours), ("pyopencl", theirs)):
                got = _value(k(*a).get())
                if not _ok(got, want, n):
                    sys.exit(f"{name} 2^{b}: {who} gives {got}, numpy {want}")
            s = interleaved({
                "cltune": wall(lambda k=ours, a=a: k(*a).get()),
                "pyopencl": wall(lambda k=theirs, a=a: k(*a).get()),
                "cltune-batch": batch(lambda k=ours, a=a: k(*a), q.finish),
                "pyopencl-batch": batch(lambda k=theirs, a=a: k(*a), q.finish),
            }, repeats)
            r = ratio_rows(s, [("cltune", "pyopencl"), ("cltune-batch", "pyopencl-batch")])
            r.update(kind="expression", name=name, size=f"2^{b}",
                     level=ours.explain(n, q.device).level)
            rows.append(r)
            log(r)


def _torch_stats(host: np.ndarray) -> dict:
    import torch

    t = torch.from_numpy(host).cuda()
    fns = {"argmax": lambda: torch.argmax(t), "mean": lambda: torch.mean(t),
           "var": lambda: torch.var_mean(t, correction=0), "norm": lambda: torch.linalg.norm(t)}

    def mk(f):  # noqa: ANN001, ANN202
        return batch(f, torch.cuda.synchronize)
    return {k: mk(f) for k, f in fns.items()}


def bench_stats(ctx, q, info, sizes, repeats, trials, rows, log):  # noqa: ANN001
    rng = np.random.default_rng(1)
    use_torch = torch_usable(info) == "ok"
    ops = {"argmax": (cltune.argmax, np.argmax, "argmax"),
           "mean": (cltune.mean, np.mean, "mean"),
           "var": (cltune.var, np.var, "var"),
           "norm": (cltune.norm, np.linalg.norm, "norm2")}
    for b in sizes:
        n = 1 << b
        host = rng.standard_normal(n).astype(np.float32)
        x = cla.to_device(q, host)
        torch_fns = _torch_stats(host) if use_torch else {}
        for name, (ours, ref, kop) in ops.items():
            if trials:
                t0 = time.perf_counter()
                stats.kernel(kop, ctx, np.float32).tune(x, *((0.0,) if name == "var" else ()),
                                                        trials=trials, timeout=60 + n / 2**20)
                print(f"  tuned {name} 2^{b}: {trials} trials in {time.perf_counter() - t0:.1f} s",
                      flush=True)
            got, want = float(ours(x).get()), float(ref(host.astype(np.float64)))
            if not _ok(got, want, n):
                sys.exit(f"{name} 2^{b}: cltune gives {got}, numpy {want}")
            samplers = {"cltune": wall(lambda f=ours, x=x: f(x).get()),
                        "cltune-batch": batch(lambda f=ours, x=x: f(x), q.finish),
                        "numpy": wall(lambda f=ref, h=host: f(h))}
            pairs = [("cltune", "numpy")]
            if name in torch_fns:
                samplers["torch-batch"] = torch_fns[name]
                pairs.append(("cltune-batch", "torch-batch"))
            r = ratio_rows(interleaved(samplers, repeats), pairs)
            r.update(kind="stat", name=name, size=f"2^{b}",
                     level=stats.kernel(kop, ctx, np.float32).explain(n, q.device).level)
            rows.append(r)
            log(r)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="0", help="device selector (index, P:D or name part)")
    p.add_argument("--sizes", default="2^12,2^16,2^20,2^24",
                   help="powers of two, e.g. 2^12,2^20 or 1M")
    p.add_argument("--repeats", type=int, default=9, help="interleaved rounds per row")
    p.add_argument("--tune-trials", type=int, default=0,
                   help="tune each cltune kernel at each size first (trials; 0 = untuned)")
    p.add_argument("--db", default=None,
                   help="tuning database (default: a fresh temporary one, so that the run "
                        "does not depend on what was tuned before)")
    p.add_argument("--only", choices=("expressions", "stats"), default=None)
    p.add_argument("--json", default=None, help="write the rows to this file")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    sizes = parse_sizes(a.sizes)
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    db = a.db or f"sqlite:///{tempfile.mkdtemp(prefix='cltune-bench-expr-')}/tuning.db"
    rows: list[dict] = []
    print(f"device: {info.name} [{info.platform}] driver {info.driver}; repeats {a.repeats}; "
          f"tune trials {a.tune_trials}")

    def log(r: dict) -> None:
        med = "  ".join(f"{k} {v:9.1f}" for k, v in r["median_us"].items())
        rat = "  ".join(f"{k} {v:5.2f}x" for k, v in r["ratios"].items())
        print(f"{r['name']:>14} {r['size']:>5} [{r['level']}]  {med}   |  {rat}", flush=True)

    if a.only in (None, "expressions"):
        bench_expressions(ctx, q, sizes, a.repeats, a.tune_trials, db, rows, log)
    if a.only in (None, "stats"):
        import os
        os.environ.setdefault("CLTUNE_DB", db)  # stats kernels read/write the same database
        bench_stats(ctx, q, info, sizes, a.repeats, a.tune_trials, rows, log)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info.name, "driver": info.driver, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
