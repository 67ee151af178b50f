#!/usr/bin/env python3
"""Top-k side by side in one process (#41): `cltune.topk` (float32, the largest k, sorted) of
1-D arrays and along the rows of 2-D ones against numpy on the host (argpartition, then a sort
of the k) and, when importable on CUDA, `torch.topk`, each in blocks of its own; per call in
µs (wall of --calls back-to-back calls, one wait a block, medians of --repeats blocks) and the
input's GB/s; every answer checked against the reference first (values and indices: torch's
order, ties by the lower index). The served config and its level come from the API's
`explain`.

    python scripts/bench_topk.py --device 1 --sizes 2^20,2^24 --k 10,1000 --shapes 4096x4096
    python scripts/bench_topk.py --device NVIDIA --sizes 2^20,2^24,2^27 --k 10,1000 \\
        --shapes 4096x4096,65536x256 --rows-k 8
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
from cltune.families.topk.api import explain
from cltune.families.topk.reference import reference


def _numpy_topk(h: np.ndarray, k: int) -> None:
    p = np.argpartition(-h, k - 1, axis=-1)[..., :k]
    np.take_along_axis(p, np.argsort(-np.take_along_axis(h, p, -1), -1), -1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--k", default="10,1000")
    ap.add_argument("--shapes", default="", help="ROWSxCOLS of 2-D arrays (top-k along rows)")
    ap.add_argument("--rows-k", default="8", help="the k of --shapes")
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
    cases = [((n,), k) for n in map(size_of, a.sizes.split(",")) for k in map(int, a.k.split(","))]
    for s in filter(None, a.shapes.split(",")):
        r, c = (int(v) for v in s.lower().split("x"))
        cases += [((r, c), k) for k in map(int, a.rows_k.split(","))]
    rows = []
    print(f"device: {info.name}; torch: {torch.__version__ if torch else 'no'}; us per call "
          f"(medians of {a.repeats} blocks of {a.calls})")
    for shape, k in cases:
        h = rng.standard_normal(shape, dtype=np.float32)
        x = cla.to_device(q, h)
        call = lambda: cltune.topk(x, k, db=a.db)
        wv, wi = reference(h.reshape(-1, shape[-1]), k)
        gv, gi = call()
        assert np.array_equal(gv.get().reshape(wv.shape), wv), (shape, k)
        assert np.array_equal(gi.get().reshape(wi.shape), wi), (shape, k)
        us = per_call_us(q.finish, call, a.calls, a.repeats)
        t0 = time.perf_counter()
        _numpy_topk(h, k)
        np_us = (time.perf_counter() - t0) * 1e6
        torch_us = None
        if torch is not None:
            xt = torch.from_numpy(h).cuda()
            torch_us = per_call_us(tsync, lambda: torch.topk(xt, k), a.calls, a.repeats)
            del xt
        ex = explain(q, h.dtype, h.size, k, h.size // shape[-1], db=a.db)
        gbs = h.nbytes / us / 1e3
        label = "x".join(map(str, shape))
        row = {"shape": list(shape), "k": k, "cltune_us": us, "gbps": gbs, "numpy_us": np_us,
               "torch_us": torch_us, "config": ex.config.short(), "level": ex.level}
        rows.append(row)
        vs = f" torch {torch_us:9.1f} (torch/cltune {torch_us / us:5.2f}x)" if torch_us else ""
        print(f"topk {label:>12} k={k:>5}: cltune {us:9.1f} us ({gbs:7.1f} GB/s) numpy "
              f"{np_us:10.1f} (numpy/cltune {np_us / us:6.1f}x){vs} [{ex.config.short()}, "
              f"{ex.level}]", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": info.name, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
