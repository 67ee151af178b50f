#!/usr/bin/env python3
"""CPU sums along rows of 33-4096 elements: the builtin config against the rule before it
(items as many vectors as a row has up to 8, 8 groups a compute unit) and four alternatives
(wg, items, groups_per_cu; the builtin's vec), one process, blocks alternating over the
configs, medians of --repeats blocks of 5 calls, every result checked first; per shape the
ms of each and numpy's, then each config's geometric-mean speed-up over "before". The
evidence for cltune.families.axis.defaults.CPU_LONG_ROW.

    python scripts/experiments/axis_rows_cpu_sweep.py --device 1    # Debian's PoCL here
    python scripts/experiments/axis_rows_cpu_sweep.py --device 0    # Intel's CPU runtime
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_most
from cltune.device.select import select
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.launch import AxisLauncher

SHAPES = "65536x256,262144x64,16384x1024,4096x4096,131072x128,32768x509,3001x2999,200003x33"
# (wg, items, groups_per_cu)
ALTERNATIVES = ((8, 1, 64), (8, 4, 64), (8, 1, 8), (1, 1, 64), (1, 4, 64), (1, 4, 16))


def _time(q: cl.CommandQueue, la: AxisLauncher, x: cla.Array, out: cla.Array, rows: int,
          b: int) -> float:
    q.finish()
    t = time.perf_counter()
    for _ in range(5):
        la.rows(q, x.data, 0, rows, b, out.data)
    q.finish()
    return (time.perf_counter() - t) / 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="1")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    spec = OpSpec("sum", "float32")
    print(f"device: {info.name}; float32 sums along rows; ms per call, medians")
    gains: dict[str, list[float]] = {}
    for s in a.shapes.split(","):
        rows, b = (int(v) for v in s.split("x"))
        h = np.random.default_rng(0).random((rows, b)).astype(np.float32)
        x, out = cla.to_device(q, h), cla.empty(q, (rows,), np.float32)
        now = builtin_axis_config(info, "rows", rows, b, 4)
        before = AxisConfig(wg=now.wg, lanes=1, vec=now.vec, groups_per_cu=8,
                            items=min(8, pow2_at_most(max(1, b // now.vec))))
        cfgs = {"before": before, "builtin": now}
        for wg, items, g in ALTERNATIVES:
            cfgs[f"wg{wg} i{items} g{g}"] = AxisConfig(wg=wg, lanes=1, vec=now.vec, items=items,
                                                       groups_per_cu=g)
        las = {n: AxisLauncher(ctx, dev, info, spec, c) for n, c in cfgs.items()}
        want = h.astype(np.float64).sum(axis=1)
        for n, la in las.items():
            la.rows(q, x.data, 0, rows, b, out.data)
            np.testing.assert_allclose(out.get(), want, rtol=1e-6, err_msg=n)
        ts: dict[str, list[float]] = {n: [] for n in las}
        for _ in range(a.repeats):
            for n, la in las.items():
                ts[n].append(_time(q, la, x, out, rows, b))
        m = {n: statistics.median(v) for n, v in ts.items()}
        t0 = time.perf_counter()
        for _ in range(3):
            h.sum(axis=1)
        tn = (time.perf_counter() - t0) / 3
        for n in m:
            gains.setdefault(n, []).append(m["before"] / m[n])
        print(f"{rows}x{b}: numpy {tn * 1e3:.2f}; " +
              "; ".join(f"{n} {m[n] * 1e3:.2f}" for n in m) + f"  [builtin {now.short()}]")
    for n, v in gains.items():
        g = math.exp(sum(map(math.log, v)) / len(v))
        print(f"{n}: geometric mean {g:.2f}x before ({', '.join(f'{x:.2f}' for x in v)})")


if __name__ == "__main__":
    main()
