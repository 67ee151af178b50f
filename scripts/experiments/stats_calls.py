#!/usr/bin/env python
"""Host time per call of the statistics of a whole array (module functions and reducer
objects) beside the plain reducer's `r(x)`, back to back on one in-order queue: interleaved
blocks of calls, medians, wall and the calling thread's CPU time (the device's threads share
the host's cores), and each statistic's gap to `r(x)`.

    python scripts/experiments/stats_calls.py --device Intel --n 2^12,2^20
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select

OPS = ("argmax", "var", "norm", "mean")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="0")
    ap.add_argument("--n", default="2^12,2^20")
    ap.add_argument("--blocks", type=int, default=15)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept: Intel's runtime drops a context its Python object left
    q = cl.CommandQueue(ctx)
    r = cltune.get_reducer(q, "sum", np.float32)
    for t in a.n.split(","):
        n = 2 ** int(t[2:]) if t.startswith("2^") else int(t)
        x = cla.to_device(q, np.random.default_rng(1).random(n, dtype=np.float32))
        calls = {"r(x)": bound(r, x)}
        for op in OPS:
            calls[op] = bound(getattr(cltune, op), x)
        for op in OPS:
            calls[f"reducer {op}"] = bound(cltune.get_reducer(q, op, np.float32), x)
        wall, cpu = run(calls, q, a.blocks, 100 if n < 1 << 16 else 20)
        print(f"# {info.name}, n = {n}: host us per call, medians of {a.blocks} blocks")
        for k in calls:
            print(f"{k:>16}: wall {wall[k]:6.2f} ({wall[k] - wall['r(x)']:+5.2f}), "
                  f"cpu {cpu[k]:6.2f} ({cpu[k] - cpu['r(x)']:+5.2f})")


def bound(f, x):
    return lambda: f(x)


def run(calls: dict, q: cl.CommandQueue, blocks: int, reps: int) -> tuple[dict, dict]:
    for f in calls.values():
        f()
        f()
    q.finish()
    wall: dict = {k: [] for k in calls}
    cpu: dict = {k: [] for k in calls}
    for _ in range(blocks):
        for k, f in calls.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            for _ in range(reps):
                f()
            t1, c1 = time.perf_counter(), time.thread_time()
            q.finish()
            wall[k].append((t1 - t0) / reps * 1e6)
            cpu[k].append((c1 - c0) / reps * 1e6)
    return ({k: statistics.median(v) for k, v in wall.items()},
            {k: statistics.median(v) for k, v in cpu.items()})


if __name__ == "__main__":
    main()
