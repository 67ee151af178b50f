# ruff: noqa: B023, E501  (one-off experiment: closures are called at once)
"""Device time per pass and host time per call of the expression family (cltune.stats.api,
cltune.ReductionKernel) beside the plain tuned sum and a trivial kernel, then torch in its own
block: where an expression reduction loses time on a GPU.

    python3 scripts/experiments/expr_profile.py --device NVIDIA --out $OUT/expr_profile.txt
    python3 scripts/experiments/expr_profile.py --device NVIDIA --sizes 20,3000000,22,23,24 \
        --grid --grid-from 21 --grid-to 22 --grid-ops var    (#39 item 2: var of 3e6 floats took 31.5 us on the H200)
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select
from cltune.families.reduce.api import get_reducer
from cltune.stats import api as stats

EMPTY = "__kernel void nop(__global float *o) { if (get_global_id(0) == 0x7fffffff) o[0] = 1; }"


def med_dev(fn, reps: int = 21) -> float:
    """Median device microseconds of fn() -> list of events (first start .. last end)."""
    out = []
    for _ in range(reps):
        evs = fn()
        evs[-1].wait()
        out.append((evs[-1].profile.end - evs[0].profile.start) * 1e-3)
    return statistics.median(out)


def per_pass(fn, reps: int = 21) -> list[float]:
    acc: list[list[float]] = []
    for _ in range(reps):
        evs = fn()
        evs[-1].wait()
        acc.append([(e.profile.end - e.profile.start) * 1e-3 for e in evs])
    return [statistics.median(c) for c in zip(*acc, strict=True)]


def batch_us(call, finish, k: int = 400, blocks: int = 7) -> float:
    call()
    finish()
    out = []
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(k):
            call()
        finish()
        out.append((time.perf_counter() - t) / k * 1e6)
    return statistics.median(out)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", required=True)
    p.add_argument("--sizes", default="12,16,20,24,28",
                   help="exponents of 2 (<= 40), or element counts (3000000)")
    p.add_argument("--out", default=None)
    p.add_argument("--grid", action="store_true", help="also time a grid of configs")
    p.add_argument("--grid-from", type=float, default=24, help="the grid's smallest size (log2)")
    p.add_argument("--grid-to", type=float, default=99, help="the grid's largest size (log2)")
    p.add_argument("--grid-ops", default="sum(expr),argmax,var", help="the grid's reductions")
    a = p.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"device: {info.model} [{info.vendor}] driver {info.driver}")
    nop = cl.Program(ctx, EMPTY).build().nop
    o = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    say(f"empty kernel, 1 group of 256: device {med_dev(lambda: [nop(pq, (256,), (256,), o)]):.2f} us, "
        f"host per enqueue {batch_us(lambda: nop(q, (256,), (256,), o), q.finish):.2f} us")
    say(f"empty kernel, 1056 groups of 256: device "
        f"{med_dev(lambda: [nop(pq, (256 * 1056,), (256,), o)]):.2f} us")
    r = get_reducer(q)
    counts = [2 ** int(v) if int(v) <= 40 else int(v) for v in a.sizes.split(",")]
    sizes = [f"{np.log2(n):.4g}" for n in counts]  # labels: "2^21.52" for 3000000
    rng = np.random.default_rng(0)
    xs = {b: cla.to_device(q, rng.random(n, dtype=np.float32)) for b, n in zip(sizes, counts, strict=True)}
    ops = {"sum(expr)": None, "argmax": "argmax", "mean": "mean", "var": "var",
           "norm2": "norm2"}
    sum_knl = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]",
                                     "__global const float *x")
    gb: dict[tuple[str, int], float] = {}
    for b in sizes:
        x = xs[b]
        n = x.size
        la, ch = r._eng.launcher_for(n)
        out = cla.empty(pq, (), np.float32)
        pp = per_pass(lambda: la.enqueue(pq, x.base_data, 0, n, out.base_data))
        t = med_dev(lambda: la.enqueue(pq, x.base_data, 0, n, out.base_data))
        gb[("sum", b)] = t
        say(f"2^{b} sum(1-D) {ch.config.short()}: device {t:.2f} us passes "
            f"{[round(v, 2) for v in pp]} ({x.nbytes / t / 1e3:.0f} GB/s); per call "
            f"{batch_us(lambda: r(x), q.finish):.2f} us")
        for name, op in ops.items():
            knl = sum_knl if op is None else stats.kernel(op, ctx, np.float32)
            st = knl._state(dev)
            ela, ech = st.launcher_for(n)
            res = cla.empty(pq, (), knl.spec.dtype_result)
            extra = [0.0] if op == "var" else []
            inv = [x.base_data, 0, *extra]
            pp = per_pass(lambda: ela.enqueue(pq, inv, 0, 1, n, res.base_data, 0))
            t = med_dev(lambda: ela.enqueue(pq, inv, 0, 1, n, res.base_data, 0))
            gb[(name, b)] = t
            fn = (lambda: sum_knl(x)) if op is None else (
                (lambda: stats.var(x)) if op == "var" else
                (lambda: stats.norm(x)) if op == "norm2" else
                (lambda op=op: getattr(stats, op)(x)))
            say(f"2^{b} {name} {ech.config.short()} [{st.choices.level}]: device {t:.2f} us "
                f"passes {[round(v, 2) for v in pp]} ({x.nbytes / t / 1e3:.0f} GB/s, "
                f"{gb[('sum', b)] / t:.2f} of sum); per call {batch_us(fn, q.finish):.2f} us")
    if a.grid:
        from cltune.families.expr.config import ExprConfig
        from cltune.families.expr.launch import ExprLauncher

        for b in [s for s in sizes if a.grid_from <= float(s) <= a.grid_to]:
            x = xs[b]
            n = x.size
            for name in a.grid_ops.split(","):
                knl = sum_knl if name == "sum(expr)" else stats.kernel(name, ctx, np.float32)
                res = cla.empty(pq, (), knl.spec.dtype_result)
                inv = [x.base_data, 0, *([0.0] if name == "var" else [])]
                rows = []
                for wg, items, gpc, passes in itertools.product(
                        (128, 256, 512), (1, 2, 4), (2, 4, 8, 16), (1, 2)):
                    if True:
                        if True:
                            cfg = ExprConfig("strided", wg, items, gpc, passes)
                            try:
                                la = ExprLauncher(ctx, dev, info, knl.spec, cfg)
                                la.built()
                            except Exception as e:  # noqa: BLE001
                                say(f"  {cfg.short()}: {type(e).__name__} {str(e)[:80]}")
                                continue
                            rows.append((med_dev(lambda la=la: la.enqueue(
                                pq, inv, 0, 1, n, res.base_data, 0), 9), cfg.short()))
                rows.sort()
                say(f"2^{b} {name} grid best: " + "; ".join(f"{c} {t:.1f} us "
                    f"({gb[('sum', b)] / t:.2f} of sum)" for t, c in rows[:4])
                    + f"; worst {rows[-1][1]} {rows[-1][0]:.1f}")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        say("torch block (CUDA events, median of 21):")
        for b, n in zip(sizes, counts, strict=True):
            t = torch.rand(n, device="cuda")
            fns = {"sum": lambda: torch.sum(t), "argmax": lambda: torch.argmax(t),
                   "mean": lambda: torch.mean(t), "var_mean": lambda: torch.var_mean(t),
                   "norm2": lambda: torch.linalg.vector_norm(t)}
            for name, f in fns.items():
                f()
                torch.cuda.synchronize()
                ts = []
                for _ in range(21):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                        enable_timing=True)
                    s.record()
                    f()
                    e.record()
                    e.synchronize()
                    ts.append(s.elapsed_time(e) * 1e3)
                k = 400
                t0 = time.perf_counter()
                for _ in range(k):
                    f()
                torch.cuda.synchronize()
                say(f"2^{b} torch {name}: device {statistics.median(ts):.2f} us; per call "
                    f"{(time.perf_counter() - t0) / k * 1e6:.2f} us")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
