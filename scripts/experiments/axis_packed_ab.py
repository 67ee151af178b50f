#!/usr/bin/env python3
"""Short rows on a CPU, before and after clt_ax_packed (#40), side by side in one process.

"before": what the runtime served untuned before: a work-item a row (the builtin of that
rule: wg 8, vec the row's length up to 16, items up to 8) on clt_ax_rows. "after": today's
builtin (rows of 2, 4, 8, 16 packed several to a vector load, a work-item a group). Also
numpy's `sum(axis=1)` and the 1-D sum of the same bytes on the same device (the issue's
yardstick: >= 0.8 of its GB/s). Blocks alternate before/after; medians of --repeats blocks
of --calls back-to-back calls (wall time, one wait a block); every result checked first.

    python scripts/experiments/axis_packed_ab.py --device 1 --shapes 4194304x4,1048576x16
"""

# ruff: noqa: B023 - the timing lambdas run within their loop iteration, never later
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_most
from cltune.device.select import select
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.launch import AxisLauncher

SHAPES = "4194304x4,2097152x8,1048576x16,8388608x2,1000003x8,262147x16,65539x4"


def _old_builtin(info, b: int) -> AxisConfig:
    cap = info.vector_cap(4)
    vec = min(16, pow2_at_most(b), cap)
    return AxisConfig(wg=min(pow2_at_most(info.max_wg), 8), lanes=1, vec=vec,
                      items=min(8, pow2_at_most(max(1, b // vec))), groups_per_cu=8)


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
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    spec = OpSpec("sum", "float32")
    print(f"device: {info.name} ({dev.platform.version.strip()[:40]}); float32 sums along "
          f"rows; medians of {a.repeats} blocks of {a.calls} calls")
    print("| shape | MB | before ms | after ms | after/before | after GB/s | 1-D sum GB/s | "
          "after / 1-D | numpy ms | numpy/after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    r1 = cltune.get_reducer(q, "sum", np.float32)
    for s in a.shapes.split(","):
        rows, b = (int(v) for v in s.split("x"))
        h = np.random.default_rng(0).random((rows, b)).astype(np.float32)
        x = cla.to_device(q, h)
        out = cla.empty(q, (rows,), np.float32)
        old = AxisLauncher(ctx, dev, info, spec, _old_builtin(info, b))
        old.packs = lambda rows, length: False  # clt_ax_rows, as before
        new = AxisLauncher(ctx, dev, info, spec,
                           builtin_axis_config(info, "rows", rows, b, 4))
        want = h.astype(np.float64).sum(axis=1)
        times: dict[str, list[float]] = {"before": [], "after": [], "1d": [], "numpy": []}
        calls = {"before": lambda: old.rows(q, x.data, 0, rows, b, out.data),
                 "after": lambda: new.rows(q, x.data, 0, rows, b, out.data),
                 "1d": lambda: r1(x.reshape(-1))}
        for k in ("before", "after"):
            calls[k]()
            np.testing.assert_allclose(out.get(), want, rtol=1e-6, err_msg=k)
        calls["1d"]()
        for _ in range(a.repeats):
            for k in ("before", "after", "1d"):
                times[k].append(_block(q, calls[k], a.calls))
            t = time.perf_counter()
            h.sum(axis=1)
            times["numpy"].append(time.perf_counter() - t)
        m = {k: statistics.median(v) for k, v in times.items()}
        gbs = h.nbytes / m["after"] / 1e9
        g1 = h.nbytes / m["1d"] / 1e9
        print(f"| {rows}x{b} | {h.nbytes / 1e6:.1f} | {m['before'] * 1e3:.2f} | "
              f"{m['after'] * 1e3:.2f} | {m['before'] / m['after']:.2f}x | {gbs:.1f} | "
              f"{g1:.1f} | {gbs / g1:.2f} | {m['numpy'] * 1e3:.2f} | "
              f"{m['numpy'] / m['after']:.1f}x |  [{new.cfg.short()}]")


if __name__ == "__main__":
    main()
