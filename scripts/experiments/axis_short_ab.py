#!/usr/bin/env python3
"""Short rows and few columns on a CPU (#40), before and after, side by side in one process.

"before": the CPU builtin configs of before clt_ax_cols_narrow (columns: strips streamed row
after row, vec the columns' power of two) with the kernel source given by --before (a copy
of kernels/axis.cl; default: today's) and no narrow path; "after": today's builtin and
launcher. Also the 1-D sum of the same bytes (the issue's yardstick: >= 0.8 of its GB/s)
and numpy. Blocks of --calls back-to-back calls (wall time, one wait a block) alternate
before / after / 1-D / numpy, the order rotated
each round; medians of --repeats blocks, and the median of the per-round
ratios (a noisy shared host: neighbours in time are compared). Every result checked first.

    git show HEAD~1:kernels/axis.cl > /tmp/axis_before.cl
    python scripts/experiments/axis_short_ab.py --device 1 --before /tmp/axis_before.cl
"""

# ruff: noqa: B023 - the timing lambdas run within their loop iteration, never later
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
import cltune.families.axis.kernel as axk
from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.device.select import select
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.launch import AxisLauncher

SHAPES = "2097152x4,1048576x8,524288x16,699051x3,4194304x2,2000003x7"


def _old_cols(info, a: int, b: int) -> AxisConfig:
    cap = info.vector_cap(8)
    vec = min(16, pow2_at_most(b), cap)
    few = a <= 7
    cols = min(16 if few else 64, pow2_at_least(-(-b // vec)))
    return AxisConfig(wg=max(cols, min(pow2_at_most(info.max_wg), 16)), lanes=0, cols=cols,
                      vec=vec, items=2 if few else 8, groups_per_cu=8, stream=1)


def _block(q: cl.CommandQueue, call, calls: int) -> float:
    q.finish()
    t = time.perf_counter()
    for _ in range(calls):
        call()
    q.finish()
    return (time.perf_counter() - t) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="1")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--axes", default="1,0")
    ap.add_argument("--before", default=None, help="kernels/axis.cl of the before side")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--calls", type=int, default=10)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    spec = OpSpec("sum", "float32")
    eb = spec.vector_element_bytes
    r1 = cltune.get_reducer(q, "sum", np.float32)
    now_src, narrow = axk.axis_source(), axk.builds_narrow
    old_src = (axk.kernel_file("reduce.cl") + "\n" + open(a.before).read()) if a.before \
        else now_src
    print(f"device: {info.name} ({dev.platform.version.strip()[:40]}); float32 sums; medians "
          f"of {a.repeats} blocks of {a.calls} calls")
    print("| shape | axis | MB | before ms | after ms | after/before (median ratio) | "
          "before / 1-D | after / 1-D | 1-D GB/s | after GB/s | numpy/after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in a.shapes.split(","):
        rows, b = (int(v) for v in s.split("x"))
        h = np.random.default_rng(0).random((rows, b)).astype(np.float32)
        x = cla.to_device(q, h)
        for axis in (int(v) for v in a.axes.split(",")):
            kind = "rows" if axis == 1 else "cols"
            out = cla.empty(q, (rows if axis == 1 else b,), np.float32)
            if axis == 1:
                old_cfg = builtin_axis_config(info, "rows", rows, b, eb)
            else:
                old_cfg = _old_cols(info, rows, b)
            old = AxisLauncher(ctx, dev, info, spec, old_cfg)
            old.narrows = lambda r, inner: False
            axk.axis_source, axk.builds_narrow = (lambda: old_src), (lambda i, c: False)
            old.built(False)  # built with the before source, without the narrow kernel
            axk.axis_source, axk.builds_narrow = (lambda: now_src), narrow
            new = AxisLauncher(ctx, dev, info, spec, builtin_axis_config(info, kind, rows, b, eb))
            if axis == 1:
                calls = {"before": lambda: old.rows(q, x.data, 0, rows, b, out.data),
                         "after": lambda: new.rows(q, x.data, 0, rows, b, out.data)}
            else:
                calls = {"before": lambda: old.cols(q, x.data, 0, 1, rows, b, out.data),
                         "after": lambda: new.cols(q, x.data, 0, 1, rows, b, out.data)}
            want = h.astype(np.float64).sum(axis=axis)
            for k in ("before", "after"):
                calls[k]()
                np.testing.assert_allclose(out.get(), want, rtol=1e-6, err_msg=k)
            calls["1d"] = lambda: r1(x.reshape(-1))
            calls["1d"]()
            times: dict[str, list[float]] = {k: [] for k in (*calls, "numpy")}
            order = [*calls, "numpy"]
            for i in range(a.repeats):
                for k in order[i % len(order):] + order[:i % len(order)]:  # rotated: no
                    if k == "numpy":  # side always follows the same one (caches)
                        t = time.perf_counter()
                        h.sum(axis=axis)
                        times["numpy"].append(time.perf_counter() - t)
                    else:
                        times[k].append(_block(q, calls[k], a.calls))
            m = {k: statistics.median(v) for k, v in times.items()}
            def per_round(u: str, v: str) -> float:  # median of the rounds' ratios u / v
                return statistics.median(p / w for p, w in zip(times[u], times[v], strict=True))

            ratio, f_b, f_a = per_round("before", "after"), per_round("1d", "before"), \
                per_round("1d", "after")
            print(f"| {s} | {axis} | {h.nbytes / 1e6:.1f} | {m['before'] * 1e3:.3f} | "
                  f"{m['after'] * 1e3:.3f} | {m['before'] / m['after']:.2f}x ({ratio:.2f}x) | "
                  f"{f_b:.2f} | {f_a:.2f} | {h.nbytes / m['1d'] / 1e9:.1f} | "
                  f"{h.nbytes / m['after'] / 1e9:.1f} | {m['numpy'] / m['after']:.1f}x | "
                  f"[{old.cfg.short()} -> {new.cfg.short()}]", flush=True)


if __name__ == "__main__":
    main()
