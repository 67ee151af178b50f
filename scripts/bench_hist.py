#!/usr/bin/env python3
"""Histograms side by side in one process (#41): `cltune.bincount` (int32, uniform and skewed
data: two thirds of the values in 3 bins) and `cltune.histogram` (float32, uniform bins over a
given range) against numpy on the host and, when importable on CUDA, torch (`bincount`,
`histc`), each in blocks of its own; per call in µs (wall of --calls back-to-back calls, one
wait a block, medians of --repeats blocks) and the input's GB/s; every answer checked against
numpy first. The served config and its level come from the API's `explain`.

    python scripts/bench_hist.py --device 1 --sizes 2^20,2^24 --bins 256,4096
    python scripts/bench_hist.py --device NVIDIA --sizes 2^20,2^24,2^28 --bins 256,4096,65536
"""
# ruff: noqa: B023, E731 - the timing lambdas run within their loop iteration

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from bench_timing import cuda_torch, per_call_us, size_of

import cltune
from cltune.device.select import select
from cltune.families.hist.api import explain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--bins", default="256,4096")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--db", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept (Intel's CPU runtime frees a context nobody holds)
    q = cl.CommandQueue(ctx, dev)
    torch = cuda_torch()
    tsync = torch.cuda.synchronize if torch is not None else None
    rng = np.random.default_rng(0)
    rows = []
    print(f"device: {info.name}; torch: {torch.__version__ if torch else 'no'}; us per call "
          f"(medians of {a.repeats} blocks of {a.calls})")
    for n in (size_of(s) for s in a.sizes.split(",")):
        for nb in (int(b) for b in a.bins.split(",")):
            uni = rng.integers(0, nb, n, dtype=np.int32)
            hot = rng.integers(0, 3, n, dtype=np.int32)
            skew = np.where(rng.random(n) < 2 / 3, hot, uni).astype(np.int32)
            f = rng.random(n, dtype=np.float32)
            cases = [("bincount", "uniform", uni), ("bincount", "skewed", skew),
                     ("histogram", "uniform", f)]
            for kind, data, h in cases:
                x = cla.to_device(q, h)
                if kind == "bincount":
                    call = lambda: cltune.bincount(x, minlength=nb, db=a.db)
                    want = np.bincount(h, minlength=nb)
                    npcall = lambda: np.bincount(h, minlength=nb)
                else:
                    call = lambda: cltune.histogram(x, nb, (0.0, 1.0), db=a.db)[0]
                    want = np.histogram(h, nb, (0.0, 1.0))[0]
                    npcall = lambda: np.histogram(h, nb, (0.0, 1.0))
                assert np.array_equal(call().get(), want), (kind, data, n, nb)
                us = per_call_us(q.finish, call, a.calls, a.repeats)
                t0 = time.perf_counter()
                npcall()
                np_us = (time.perf_counter() - t0) * 1e6
                torch_us = None
                if torch is not None:
                    xt = torch.from_numpy(h).cuda()
                    tcall = (lambda: torch.bincount(xt, minlength=nb)) if kind == "bincount" \
                        else (lambda: torch.histc(xt, nb, 0.0, 1.0))
                    torch_us = per_call_us(tsync, tcall, a.calls, a.repeats)
                    del xt
                ex = explain(q, kind, h.dtype, n, nb, db=a.db)
                gbs = h.nbytes / us / 1e3
                row = {"kind": kind, "data": data, "n": n, "bins": nb, "cltune_us": us,
                       "gbps": gbs, "numpy_us": np_us, "torch_us": torch_us,
                       "config": ex.config.short(), "level": ex.level}
                rows.append(row)
                vs = f" torch {torch_us:9.1f} (torch/cltune {torch_us / us:5.2f}x)" \
                    if torch_us else ""
                print(f"{kind:9} {data:7} n={n:>10} bins={nb:>6}: cltune {us:9.1f} us "
                      f"({gbs:7.1f} GB/s) numpy {np_us:10.1f} (numpy/cltune {np_us / us:6.1f}x)"
                      f"{vs} [{ex.config.short()}, {ex.level}]", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": info.name, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
