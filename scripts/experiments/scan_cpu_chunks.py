#!/usr/bin/env python
"""#21 CPU target: a float32 1-D prefix sum's chained pass by chunks (`clt_scan_chunks`,
wg 1, vector registers) launched directly, chunk sizes and extra -D options (or another copy
of kernels/scan.cl) side by side against the device's copy of the same bytes, interleaved
blocks in one process (median of --repeats rounds of --calls calls).

    python scripts/experiments/scan_cpu_chunks.py --device Intel --n 2^24 \
        --chunks 16384,65536,262144 --defs "" "CLT_X=1"
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pyopencl as cl

from cltune.device.select import select
from cltune.opencl.build import std_options

i8, u4 = np.int64, np.uint32
BASE = ["-DCLT_OP=0", "-DCLT_IN_T=float", "-DCLT_ACC_T=float", "-DCLT_OUT_T=float",
        "-DCLT_OUT_AS=0", "-DCLT_IS_FLOAT=1", "-DCLT_NEEDS_FP64=0", "-DCLT_WG=1",
        "-DCLT_ITEMS=8", "-DCLT_STAGE=2", "-DCLT_GROUP_SCAN=0", "-DCLT_SEG=0", "-DCLT_OFF64=0",
        "-DCLT_EXCL=0", "-DCLT_CHAIN=3", "-DCLT_NV_PTX=0", "-DCLT_ACC_BITS=32"]


def _n(t: str) -> int:
    return 2 ** int(t[2:]) if t.startswith("2^") else int(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="Intel")
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--chunks", default="65536", help="elements a chunk (comma list)")
    ap.add_argument("--defs", nargs="*", default=[""],
                    help="extra -D sets, each 'A=1;B=2' ('' = as shipped)")
    ap.add_argument("--src", nargs="*", default=["kernels/scan.cl"])
    ap.add_argument("--seglen", type=int, default=0,
                    help="rows of this length (an axis scan: a segment head every seglen)")
    ap.add_argument("--ooff", type=int, default=0, help="the output's element offset")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    n = _n(a.n)
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    seg = a.seglen or n
    want = np.cumsum(h.astype(np.float64).reshape(-1, seg), axis=1).reshape(-1)
    mf = cl.mem_flags
    x = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h)
    out = cl.Buffer(ctx, mf.READ_WRITE, h.nbytes + 4 * a.ooff)
    y = cl.Buffer(ctx, mf.READ_WRITE, h.nbytes)
    dummy = cl.Buffer(ctx, mf.READ_WRITE, 16)
    print(f"# {info.name} ({info.platform}); n={n}; per call, median of {a.repeats} rounds of "
          f"{a.calls} calls")

    samplers = {"copy": lambda: cl.enqueue_copy(q, y, x, byte_count=h.nbytes)}
    for src, defs, chunk in itertools.product(a.src, a.defs, (_n(c) for c in
                                                              a.chunks.split(","))):
        extra = [f"-D{d.strip()}" for d in defs.split(";") if d.strip()]
        if a.seglen:
            extra = ["-DCLT_SEG=1", *extra]
        prg = cl.Program(ctx, Path(src).read_text()).build(
            options=[*(o for o in BASE if o.split("=")[0] not in {e.split("=")[0] for e in extra}),
                     *extra, *std_options(info)])
        k = prg.clt_scan_chunks
        groups = -(-n // chunk)
        status = cl.Buffer(ctx, mf.READ_WRITE, groups * 8)
        cl.enqueue_fill_buffer(q, status, np.uint64(0), 0, groups * 8)
        ticket = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(1, np.uint32))
        st = {"base": 0, "epoch": 0}

        def call(k=k, groups=groups, chunk=chunk, status=status, ticket=ticket, st=st):
            st["epoch"] += 1
            k.set_args(x, i8(0), i8(n), i8(chunk), i8(seg), dummy, i8(0), status, ticket,
                       u4(st["base"]), u4(st["epoch"]), out, i8(a.ooff))
            cl.enqueue_nd_range_kernel(q, k, (groups,), (1,))
            st["base"] = (st["base"] + groups) & 0xFFFFFFFF

        call()
        got = np.empty_like(h)
        cl.enqueue_copy(q, got, out, src_offset=4 * a.ooff)
        rel = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))
        name = f"{Path(src).stem} [{defs}] chunk {chunk}"
        if rel > 1e-3:
            print(f"WRONG {name}: {rel:.2e}")
            continue
        samplers[name] = call

    def sample(f) -> float:
        t0 = time.perf_counter()
        for _ in range(a.calls):
            f()
        q.finish()
        return (time.perf_counter() - t0) / a.calls

    for f in samplers.values():
        sample(f)
    got: dict[str, list[float]] = {k: [] for k in samplers}
    for _ in range(a.repeats):
        for key, f in samplers.items():
            got[key].append(sample(f))
    c = statistics.median(got["copy"])
    for key, v in got.items():
        m = statistics.median(v)
        print(f"{key:>50}: {m * 1e6:9.1f} us  min {min(v) * 1e6:9.1f}  copy/this {c / m:5.2f}")


if __name__ == "__main__":
    main()
