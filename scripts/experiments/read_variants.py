#!/usr/bin/env python3
"""How fast can an OpenCL kernel stream-read this device's memory, and with which loads?

A question behind issue 6 (beating CUB at 2^26/2^28 means beating the plain float4 read
ceiling): times a family of read-only streaming kernels, each reducing n float32 to one
partial per work-item, over a grid of launch shapes, and prints the best TB/s per variant, side
by side with torch.sum (CUB) on the same data when torch with CUDA is importable. Device time
from OpenCL profiling events (CUDA events for torch), medians over --repeats, interleaved.

Variants (PTX ones only on NVIDIA's platform; a variant that does not build is reported so):
  plain        x[i] float4 loads, grid-stride, 4 independent accumulators
  nc           ld.global.nc.v4.f32 (read-only data path)
  nc-noL1      ld.global.nc.L1::no_allocate.v4.f32
  nc-L2-128    ld.global.nc.L2::128B.v4.f32 (L2 prefetch hint)
  nc-L2-256    ld.global.nc.L2::256B.v4.f32
  noL1-L2-256  ld.global.nc.L1::no_allocate.L2::256B.v4.f32
  chunk        each work-group streams one contiguous chunk (not grid-stride), plain loads

    python scripts/experiments/read_variants.py --device NVIDIA --sizes 2^26,2^28 \\
        --json /tmp/read.json
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.buckets import parse_sizes
from cltune.device.select import select

HEAD = r"""
#ifndef LOAD
#define LOAD(p) (*(p))
#endif
__kernel void rd(__global const float4 *x, const ulong n4, __global float *out) {
    const size_t gid = get_global_id(0), gsz = get_global_size(0);
    float4 a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
#if CHUNK
    const size_t per = (n4 + get_num_groups(0) - 1) / get_num_groups(0);
    const size_t lo = get_group_id(0) * per, hi = min(lo + per, (size_t)n4);
    const size_t st = get_local_size(0);
    size_t i = lo + get_local_id(0);
    for (; i + 3 * st < hi; i += 4 * st) {
        a += LOAD(x + i); b += LOAD(x + i + st); c += LOAD(x + i + 2 * st);
        d += LOAD(x + i + 3 * st);
    }
    for (; i < hi; i += st) a += LOAD(x + i);
#else
    size_t i = gid;
    for (; i + 3 * gsz < n4; i += 4 * gsz) {
        a += LOAD(x + i); b += LOAD(x + i + gsz); c += LOAD(x + i + 2 * gsz);
        d += LOAD(x + i + 3 * gsz);
    }
    for (; i < n4; i += gsz) a += LOAD(x + i);
#endif
    const float4 s = (a + b) + (c + d);
    out[gid] = (s.x + s.y) + (s.z + s.w);
}
"""


def ptx_load(qual: str) -> str:
    asm = "ld.global" + qual + ".v4.f32 {%0, %1, %2, %3}, [%4];"
    return (r"""
inline float4 ldp(__global const float4 *p) {
    float4 v;
    asm volatile("ASM" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
#define LOAD(p) ldp(p)
""").replace("ASM", asm)


VARIANTS = {
    "plain": ("", 0, False),
    "nc": (ptx_load(".nc"), 0, True),
    "nc-noL1": (ptx_load(".nc.L1::no_allocate"), 0, True),
    "nc-L2-128": (ptx_load(".nc.L2::128B"), 0, True),
    "nc-L2-256": (ptx_load(".nc.L2::256B"), 0, True),
    "noL1-L2-256": (ptx_load(".nc.L1::no_allocate.L2::256B"), 0, True),
    "chunk": ("", 1, False),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^24,2^26,2^28")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    nvidia = info.is_nvidia
    kernels, failed = {}, {}
    for name, (pre, chunk, needs_ptx) in VARIANTS.items():
        if needs_ptx and not nvidia:
            failed[name] = "PTX only on NVIDIA"
            continue
        try:
            prg = cl.Program(ctx, pre + HEAD).build(options=[f"-DCHUNK={chunk}"])
            kernels[name] = prg.rd
        except cl.Error as e:
            failed[name] = str(e).splitlines()[0][:200]
    try:
        import torch

        has_torch = torch.cuda.is_available()
    except ImportError:
        has_torch = False
    shapes = [(wg, gpc) for wg in (256, 512, 1024) for gpc in (2, 4, 8, 16, 32)]
    cu = info.compute_units
    report = {"device": info.name, "driver": info.driver, "failed": failed, "sizes": {}}
    for b in parse_sizes(a.sizes):
        n = 1 << b
        x = cla.to_device(q, np.random.default_rng(1).random(n, dtype=np.float32))
        out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 1024 * 32 * cu)
        res: dict[str, list[tuple[float, str]]] = {}
        for name, k in kernels.items():
            for wg, gpc in shapes:
                g = wg * gpc * cu
                k(q, (g,), (wg,), x.data, np.uint64(n // 4), out).wait()  # warm-up
                ts = []
                for _ in range(a.repeats):
                    ev = k(q, (g,), (wg,), x.data, np.uint64(n // 4), out)
                    ev.wait()
                    ts.append((ev.profile.end - ev.profile.start) * 1e-9)
                res.setdefault(name, []).append((statistics.median(ts), f"wg={wg} g/cu={gpc}"))
        row = {name: min(v) for name, v in res.items()}
        if has_torch:
            t = torch.from_numpy(x.get()).cuda()
            torch.sum(t)
            ts = []
            for _ in range(a.repeats):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.sum(t)
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e) * 1e-3)
            row["torch.sum"] = (statistics.median(ts), "CUB")
            del t
        print(f"n = 2^{n.bit_length() - 1} ({4 * n / 2**20:.0f} MiB)")
        base = row["plain"][0]
        for name, (t, shape) in sorted(row.items(), key=lambda kv: kv[1][0]):
            print(f"  {name:12s} {t * 1e6:9.1f} us  {4 * n / t / 1e12:6.3f} TB/s  "
                  f"{base / t:5.3f}x plain  {shape}")
        report["sizes"][str(n)] = {k: {"s": t, "tbps": 4 * n / t / 1e12, "shape": sh}
                                   for k, (t, sh) in row.items()}
    for name, why in failed.items():
        print(f"  {name}: not built ({why})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
