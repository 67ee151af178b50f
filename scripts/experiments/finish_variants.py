#!/usr/bin/env python3
"""What does the single-pass finish cost, and how should the last group read the partials?

Times (device time, profiling events, first start to last end; medians of interleaved repeats)
tuned-style configs at their sizes with: passes=2; passes=1 as shipped (partials stored with
atomic_xchg and read with atomic_add(p, 0)); and, on NVIDIA only, passes=1 reading the partials
with PTX `ld.relaxed.gpu` (a morally strong load in the PTX memory model: no read-modify-write).
Every variant's result is checked against numpy first.

    python scripts/experiments/finish_variants.py --device NVIDIA
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune.families.reduce.kernel as prog
from cltune.core.ops import OpSpec
from cltune.device.select import select
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.opencl.measure import device_seconds

GET32 = ("#define GET_PARTIAL(p, j) CAT(as_, CLT_ACC_T)(atomic_add((volatile __global int *)(p) "
         "+ (j), 0))")
RELAXED = r"""inline uint clt_ld_relaxed(volatile __global const int *p) {
    uint v;
    asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
#define GET_PARTIAL(p, j) \
    CAT(as_, CLT_ACC_T)(clt_ld_relaxed((volatile __global const int *)(p) + (j)))"""
CASES = ((12, Config("serial", 64, 0, 8, 1, 128, 1)),
         (16, Config("warp_shuffle", 64, 0, 4, 2, 32, 1)),
         (20, Config("warp_shuffle", 256, 0, 8, 4, 1, 1)),
         (24, Config("local_tree", 128, 1024, 4, 2, 8, 1)),
         (24, Config("warp_shuffle", 256, 0, 4, 4, 8, 1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--repeats", type=int, default=31)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    src = prog.kernel_source()
    if src.count(GET32) != 1:
        raise SystemExit("kernels/reduce.cl changed: update GET32 in this script")
    sources = {"atomic": src}
    if info.is_nvidia:
        sources["relaxed"] = src.replace(GET32, RELAXED)
    spec = OpSpec("sum", "float32")
    original = prog.kernel_source
    for b, cfg in CASES:
        if cfg.strategy == "warp_shuffle" and not info.is_nvidia:
            continue
        n = 1 << b
        host = np.random.default_rng(b).random(n, dtype=np.float32)
        x = cla.to_device(q, host)
        out = cla.empty(q, (), np.float32)
        want = float(host.astype(np.float64).sum())
        las = {}
        try:
            for name, text in sources.items():
                prog.kernel_source = lambda text=text: text  # noqa: E731 - experiment only
                las[f"passes=1 {name}"] = Launcher(ctx, dev, info, spec, cfg)
                las[f"passes=1 {name}"].built(False)
            prog.kernel_source = original
            las["passes=2"] = Launcher(ctx, dev, info, spec, replace(cfg, passes=2))
        finally:
            prog.kernel_source = original
        times: dict[str, list[float]] = {k: [] for k in las}
        for k, la in las.items():
            la.enqueue(q, x.base_data, 0, n, out.base_data)[-1].wait()
            got = float(out.get())
            if not np.isclose(got, want, rtol=1e-4):
                raise SystemExit(f"{k} {cfg.short()}: {got} != {want}")
        for r in range(a.repeats):
            for k in list(las)[r % len(las):] + list(las)[:r % len(las)]:
                evs = las[k].enqueue(q, x.base_data, 0, n, out.base_data)
                evs[-1].wait()
                times[k].append(device_seconds(evs))
        print(f"2^{b} {cfg.short()}")
        for k, v in times.items():
            print(f"    {k:18s} {statistics.median(v) * 1e6:8.2f} us")


if __name__ == "__main__":
    main()
