#!/usr/bin/env python
"""Statistics along an axis side by side, in one process: cltune's argmax/mean/var/norm with
`axis=` against numpy on the host and, when importable on CUDA, torch (argmax(dim),
mean(dim), var_mean(dim), linalg.vector_norm(dim)).

Every answer is checked against numpy (float64) first. A sample is a block of --calls calls
back to back and one wait at the end (end to end: allocation, launch, the wait); the
contenders' blocks are interleaved round-robin (never call by call: torch and OpenCL on one
GPU time-slice) and each figure is the median over --repeats rounds. Ratio = other / cltune
(> 1: cltune faster).

With --tune-trials N, each (op, shape, axis) is first tuned along the axis (family
`expr_axis`, N trials) into a temporary database (--db to keep one), the tuning time is
reported, and `heuristic` joins the contenders: the same call served by the untuned
heuristic config (the statistic's kernel reading an empty database), so heuristic/cltune is
what tuning bought, end to end.

    python scripts/bench_stats_axis.py --device 1
    python scripts/bench_stats_axis.py --device pocl --shapes 1048576x16 --axes 0 --json out.json
    python scripts/bench_stats_axis.py --device 1 --shapes 1048576x16,65536x256 \
        --ops argmax,var --tune-trials 20 --json tuned.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.cli.bench import interleaved, torch_usable
from cltune.device.select import select
from cltune.stats import api as stats
from cltune.stats import axis as stats_axis
from cltune.stats.reducers import get_reducer

SHAPES = "1048576x16,65536x256,16x1048576"
OPS = ("argmax", "mean", "var", "norm")
NUMPY = {"argmax": np.argmax, "mean": np.mean, "var": np.var,
         "norm": lambda h, axis: np.linalg.norm(h, axis=axis)}
#: op -> (the cltune.stats.api kernel behind it, the kernel's scalar arguments)
KERNELS = {"argmax": ("argmax", ()), "mean": ("mean", ()), "var": ("var", (0.0,)),
           "norm": ("norm2", ())}


def block(call: Callable[[], object], finish: Callable[[object], object], calls: int
          ) -> Callable[[], float]:
    """Seconds per call of `calls` calls back to back, then one `finish` of the last result."""
    finish(call())

    def sample() -> float:
        t = time.perf_counter()
        for _ in range(calls):
            res = call()
        finish(res)
        return (time.perf_counter() - t) / calls
    return sample


def _check(name: str, who: str, got: np.ndarray, want: np.ndarray) -> None:
    ok = (np.array_equal(got, want) if name == "argmax"
          else np.allclose(got, want, rtol=1e-4, atol=1e-6))
    if not ok:
        bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-4))[:3]
        sys.exit(f"{name}: {who} differs from numpy at {bad.tolist()}: "
                 f"{np.ravel(got)[bad]} vs {np.ravel(want)[bad]}")


def _torch(host: np.ndarray) -> dict[str, Callable[[int], object]]:
    import torch

    t = torch.from_numpy(host).cuda()
    return {"argmax": lambda d: torch.argmax(t, dim=d),
            "mean": lambda d: torch.mean(t, dim=d),
            "var": lambda d: torch.var_mean(t, dim=d, correction=0)[0],
            "norm": lambda d: torch.linalg.vector_norm(t, dim=d)}


def _cuda_sync(_: object) -> None:
    import torch

    torch.cuda.synchronize()


def tune(q: cl.CommandQueue, name: str, x: cla.Array, axis: int, trials: int,
         timeout: float) -> dict:
    """Tune the statistic along the axis (into CLTUNE_DB); what it took and gave."""
    kop, extra = KERNELS[name]
    t = time.perf_counter()
    res = stats.kernel(kop, q.context, x.dtype).tune(x, *extra, axis=axis, trials=trials,
                                                     timeout=timeout, queue=q)
    r = res[0]
    return {"tune_s": time.perf_counter() - t, "class": r.size_class, "trials": r.trials,
            "failed": r.failed + r.pruned, "tuned": r.config.short() if r.config else None,
            "vs_builtin_in_tuner": r.vs_builtin}


def heuristic_call(q: cl.CommandQueue, name: str, x: cla.Array, axis: int,
                   empty_db: str) -> Callable[[], cla.Array]:
    """The call `cltune.<name>(x, axis=axis)` makes, served by the heuristic: the statistic's
    kernel with an empty database (a shallow copy; the reducers along axes are per database)."""
    kop, extra = KERNELS[name]
    knl = copy.copy(stats.kernel(kop, q.context, x.dtype))
    knl.db = empty_db
    return lambda: stats_axis.along(kop, knl, x, q, extra, axis, False)


def run(q: cl.CommandQueue, shapes: list[tuple[int, ...]], axes: list[int], ops: list[str],
        repeats: int, calls: int, use_torch: bool, log: Callable[[dict], None],
        tune_trials: int = 0, tune_timeout: float = 180.0) -> list[dict]:
    rng = np.random.default_rng(0)
    empty_db = f"sqlite:///{tempfile.mkdtemp(prefix='cltune-bench-empty-')}/none.db"
    rows = []
    for shape in shapes:
        host = rng.standard_normal(shape).astype(np.float32)
        x = cla.to_device(q, host)
        h64 = host.astype(np.float64)
        torch_fns = _torch(host) if use_torch else {}
        for axis in axes:
            for name in ops:
                ours = getattr(cltune, name)
                tuned = tune(q, name, x, axis, tune_trials, tune_timeout) if tune_trials else {}
                want = NUMPY[name](host if name == "argmax" else h64, axis=axis)
                _check(name, "cltune", ours(x, axis=axis).get(), want)
                samplers = {
                    "cltune": block(lambda f=ours, a=axis, x=x: f(x, axis=a),
                                    lambda r: r.finish(), calls),
                    "numpy": block(lambda f=NUMPY[name], a=axis, h=host: f(h, axis=a),
                                   lambda r: r, calls)}
                if tune_trials:
                    heur = heuristic_call(q, name, x, axis, empty_db)
                    _check(name, "heuristic", heur().get(), want)
                    samplers["heuristic"] = block(heur, lambda r: r.finish(), calls)
                if name in torch_fns:
                    tf = torch_fns[name]
                    _check(name, "torch", tf(axis).cpu().numpy(), want)
                    samplers["torch"] = block(lambda f=tf, a=axis: f(a),
                                              _cuda_sync, calls)
                med = {k: statistics.median(v) for k, v in
                       interleaved(samplers, repeats).items()}
                ex = get_reducer(q, name, np.float32).explain_axis(shape, axis)
                row = {"shape": "x".join(map(str, shape)), "axis": axis, "op": name,
                       "ms": {k: v * 1e3 for k, v in med.items()},
                       "ratios": {f"{k}/cltune": v / med["cltune"] for k, v in med.items()
                                  if k != "cltune"},
                       "config": ex.config.short() if ex.config else ex.level,
                       "split": ex.plan.split if ex.plan else 1, "level": ex.level,
                       "size_class": ex.size_class, **tuned}
                rows.append(row)
                log(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="0", help="OpenCL device (index, P:D or name part)")
    p.add_argument("--shapes", default=SHAPES, help=f"comma-separated AxB (default {SHAPES})")
    p.add_argument("--axes", default="0,1", help="axes to reduce (default 0,1)")
    p.add_argument("--ops", default=",".join(OPS), help=f"subset of {','.join(OPS)}")
    p.add_argument("--repeats", type=int, default=7, help="interleaved rounds (medians)")
    p.add_argument("--calls", type=int, default=10, help="back-to-back calls per sample")
    p.add_argument("--tune-trials", type=int, default=0,
                   help="tune each op/shape/axis first (trials; 0 = serve what is stored)")
    p.add_argument("--tune-timeout", type=float, default=180.0,
                   help="seconds per tuned size class (default 180)")
    p.add_argument("--db", default=None,
                   help="with --tune-trials, the tuning database (default: a fresh temporary "
                        "one, so that the run does not depend on what was tuned before)")
    p.add_argument("--json", default=None, help="write the rows to this file")
    a = p.parse_args(argv)
    if a.tune_trials:  # before any statistic's kernel reads the database
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        os.environ["CLTUNE_DB"] = a.db or (
            f"sqlite:///{tempfile.mkdtemp(prefix='cltune-bench-stats-axis-')}/tuning.db")
    warnings.simplefilter("ignore")
    try:
        shapes = [tuple(int(v) for v in s.lower().split("x")) for s in a.shapes.split(",")]
        axes = [int(v) for v in a.axes.split(",")]
    except ValueError:
        p.error("--shapes takes AxB[,CxD...] and --axes integers")
    ops = a.ops.split(",")
    if not set(ops) <= set(OPS):
        p.error(f"--ops: one or more of {', '.join(OPS)}")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    why = torch_usable(info)
    print(f"device: {info.name} [{info.platform}] driver {info.driver}; repeats {a.repeats} "
          f"x {a.calls} calls" + (f"; {why}" if why and why != "ok" else "")
          + (f"; tuned ({a.tune_trials} trials) into {os.environ['CLTUNE_DB']}"
             if a.tune_trials else ""))
    head = f"{'shape':>14} {'axis':>4} {'op':>7}  {'cltune ms':>9} {'numpy ms':>9} {'np/cl':>6}"
    if a.tune_trials:
        head += f" {'heur ms':>9} {'he/cl':>6} {'tune s':>6}"
    if why == "ok":
        head += f" {'torch ms':>9} {'th/cl':>6}"
    print(head + "  config")

    def log(r: dict) -> None:
        ms, rt = r["ms"], r["ratios"]
        line = (f"{r['shape']:>14} {r['axis']:>4} {r['op']:>7}  {ms['cltune']:9.3f} "
                f"{ms['numpy']:9.3f} {rt['numpy/cltune']:5.2f}x")
        if "heuristic" in ms:
            line += (f" {ms['heuristic']:9.3f} {rt['heuristic/cltune']:5.2f}x "
                     f"{r['tune_s']:6.1f}")
        if "torch" in ms:
            line += f" {ms['torch']:9.3f} {rt['torch/cltune']:5.2f}x"
        served = f" [{r['level']} {r['size_class']}]" if r["size_class"] else f" [{r['level']}]"
        print(f"{line}  {r['config']} split {r['split']}{served}", flush=True)

    rows = run(q, shapes, axes, ops, a.repeats, a.calls, why == "ok", log, a.tune_trials,
               a.tune_timeout)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info.name, "platform": info.platform, "driver": info.driver,
                       "tune_trials": a.tune_trials, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
