#!/usr/bin/env python3
"""Where does cltune's max stand on a CPU device? (the issue-3 `max >= 2x numpy.max` question)

In ONE process, same data, interleaved, medians (end to end, result read back):
  * a few `serial` max configs (the tuned kind), built from the real kernel source;
  * the same kernels with the float max operator replaced by `a > b ? a : b` and by `fmax`
    (both WRONG for NaN, timing only): what the NaN-propagating select costs;
  * the sum kernel with the same config: max vs sum on the same memory traffic;
  * numpy.max (one thread) and numpy.max over N slices in N threads (numpy releases the GIL in
    reductions): what this host's cores stream with numpy's own SIMD loops.

    python scripts/experiments/cpu_max_gap.py --device D --size 2^26
    # D: an index from `cltune devices`
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune.families.reduce.kernel as prog
from cltune.core.buckets import parse_sizes
from cltune.core.ops import OpSpec
from cltune.device.select import select
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher

NAN_OP = "#define OP(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))"
CONFIGS = (Config("serial", 8, 0, 24, 16, 256, 2), Config("serial", 8, 0, 24, 16, 4, 2),
           Config("serial", 256, 0, 6, 16, 4, 2), Config("serial", 8, 0, 4, 16, 8, 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--size", default="2^26")
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    n = 1 << parse_sizes(a.size)[0]
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(q, host)
    out = cla.empty(q, (), np.float32)
    src = prog.kernel_source()
    if src.count(NAN_OP) != 1:  # the float max operator
        raise SystemExit("kernels/reduce.cl changed: update NAN_OP in this script")
    variants = {"max": src,
                "max, a>b?a:b (no NaN)": src.replace(NAN_OP, "#define OP(a, b) "
                                                     "(((a) > (b)) ? (a) : (b))"),
                "max, fmax (no NaN)": src.replace(NAN_OP, "#define OP(a, b) fmax((a), (b))")}
    calls = {}
    original = prog.kernel_source
    try:
        for cfg in CONFIGS:
            for name, text in variants.items():
                prog.kernel_source = lambda text=text: text  # noqa: E731 - experiment only
                la = Launcher(ctx, dev, info, OpSpec("max", "float32"), cfg)
                la.built(False)
                calls[f"{name:22s} {cfg.short()}"] = la
            prog.kernel_source = original
            la = Launcher(ctx, dev, info, OpSpec("sum", "float32"), cfg)
            la.built(False)
            calls[f"{'sum':22s} {cfg.short()}"] = la
    finally:
        prog.kernel_source = original

    def run(la: Launcher) -> float:
        t = time.perf_counter()
        la.enqueue(q, x.base_data, 0, n, out.base_data)
        out.get()
        return time.perf_counter() - t

    k = os.cpu_count() or 1
    pool = ThreadPoolExecutor(k)
    parts = np.array_split(host, k)

    def numpy_k() -> float:
        t = time.perf_counter()
        np.max(np.array(list(pool.map(np.max, parts))))
        return time.perf_counter() - t

    def numpy_1() -> float:
        t = time.perf_counter()
        np.max(host)
        return time.perf_counter() - t

    fns = {name: (lambda la=la: run(la)) for name, la in calls.items()}
    fns[f"numpy.max, {k} threads"] = numpy_k
    fns["numpy.max"] = numpy_1
    for f in fns.values():
        f()
    res: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(a.repeats):
        names = list(fns)
        for i in range(len(names)):
            name = names[(r + i) % len(names)]
            res[name].append(fns[name]())
    one = statistics.median(res["numpy.max"])
    print(f"{info.name}, n = {n}, {a.repeats} interleaved repeats, medians, end to end")
    for name, v in sorted(res.items(), key=lambda kv: statistics.median(kv[1])):
        m = statistics.median(v)
        print(f"  {m * 1e3:8.2f} ms {4 * n / m / 1e9:6.1f} GB/s  {one / m:5.2f}x numpy.max"
              f"  {name}")


if __name__ == "__main__":
    main()
