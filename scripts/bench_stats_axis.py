#!/usr/bin/env python
"""Statistics along an axis side by side, in one process: cltune's argmax/mean/var/norm with
`axis=` against numpy on the host and, when importable on CUDA, torch (argmax(dim),
mean(dim), var_mean(dim), linalg.vector_norm(dim)).

Every answer is checked against numpy (float64) first. A sample is a block of --calls calls
back to back and one wait at the end (end to end: allocation, launch, the wait); the
contenders' blocks are interleaved round-robin (never call by call: torch and OpenCL on one
GPU time-slice) and each figure is the median over --repeats rounds. Ratio = other / cltune
(> 1: cltune faster).

    python scripts/bench_stats_axis.py --device 1
    python scripts/bench_stats_axis.py --device pocl --shapes 1048576x16 --axes 0 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.benchmark import interleaved, torch_usable
from cltune.devices import select
from cltune.reducers import get_reducer

SHAPES = "1048576x16,65536x256,16x1048576"
OPS = ("argmax", "mean", "var", "norm")
NUMPY = {"argmax": np.argmax, "mean": np.mean, "var": np.var,
         "norm": lambda h, axis: np.linalg.norm(h, axis=axis)}


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


def run(q: cl.CommandQueue, shapes: list[tuple[int, ...]], axes: list[int], ops: list[str],
        repeats: int, calls: int, use_torch: bool, log: Callable[[dict], None]) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for shape in shapes:
        host = rng.standard_normal(shape).astype(np.float32)
        x = cla.to_device(q, host)
        h64 = host.astype(np.float64)
        torch_fns = _torch(host) if use_torch else {}
        for axis in axes:
            for name in ops:
                ours = getattr(cltune, name)
                want = NUMPY[name](host if name == "argmax" else h64, axis=axis)
                _check(name, "cltune", ours(x, axis=axis).get(), want)
                samplers = {
                    "cltune": block(lambda f=ours, a=axis, x=x: f(x, axis=a),
                                    lambda r: r.finish(), calls),
                    "numpy": block(lambda f=NUMPY[name], a=axis, h=host: f(h, axis=a),
                                   lambda r: r, calls)}
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
                       "split": ex.plan.split if ex.plan else 1}
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
    p.add_argument("--json", default=None, help="write the rows to this file")
    a = p.parse_args(argv)
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
          f"x {a.calls} calls" + (f"; {why}" if why and why != "ok" else ""))
    head = f"{'shape':>14} {'axis':>4} {'op':>7}  {'cltune ms':>9} {'numpy ms':>9} {'np/cl':>6}"
    if why == "ok":
        head += f" {'torch ms':>9} {'th/cl':>6}"
    print(head + "  config")

    def log(r: dict) -> None:
        ms, rt = r["ms"], r["ratios"]
        line = (f"{r['shape']:>14} {r['axis']:>4} {r['op']:>7}  {ms['cltune']:9.3f} "
                f"{ms['numpy']:9.3f} {rt['numpy/cltune']:5.2f}x")
        if "torch" in ms:
            line += f" {ms['torch']:9.3f} {rt['torch/cltune']:5.2f}x"
        print(f"{line}  {r['config']} split {r['split']}", flush=True)

    rows = run(q, shapes, axes, ops, a.repeats, a.calls, why == "ok", log)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info.name, "platform": info.platform, "driver": info.driver,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
