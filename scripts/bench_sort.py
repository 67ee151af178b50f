#!/usr/bin/env python3
"""Sorting side by side in one process (#42): `cltune.sort` (and `sort_by_key` with --pairs) of
1-D arrays and along the rows of 2-D ones against `numpy.sort` on the host (kind="stable", and
its default: the fastest, not stable), pyopencl's `RadixSort` (uint32 keys: the only kind it
sorts by bits; beside it cltune.RadixSort, the drop-in with the same call, and the ratio
`pyopencl_vs_radixsort`) and, when importable on CUDA, `torch.sort` (stable), each in blocks of its
own; per call in µs (wall of --calls back-to-back calls, one wait a block, medians of
--repeats blocks), Gkeys/s, and the device copy of the keys as the ceiling. Every answer is
checked against numpy first.

    python scripts/bench_sort.py --device 1 --sizes 2^20,2^24 --dtypes float32,uint32
    python scripts/bench_sort.py --device NVIDIA --sizes 2^16,2^20,2^24,2^27 \\
        --dtypes float32,uint32 --shapes 4096x4096,65536x256 --pyopencl
"""
# ruff: noqa: B023, E731 - the timing lambdas run within their loop iteration

from __future__ import annotations

import argparse
import json

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from bench_timing import cuda_torch, per_call_us, size_of

import cltune
from cltune.device.select import select


def _data(dt: np.dtype, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    i = np.iinfo(dt)
    return rng.integers(i.min, i.max, shape, dtype=dt, endpoint=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--shapes", default="", help="ROWSxCOLS of 2-D arrays (sorted along rows)")
    ap.add_argument("--pairs", action="store_true", help="also sort_by_key with int32 values")
    ap.add_argument("--pyopencl", action="store_true", help="also pyopencl's RadixSort (uint32)")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    torch = cuda_torch()
    tsync = torch.cuda.synchronize if torch is not None else None
    rng = np.random.default_rng(0)
    shapes = [(n,) for n in map(size_of, a.sizes.split(","))]
    for s in filter(None, a.shapes.split(",")):
        shapes.append(tuple(int(v) for v in s.lower().split("x")))
    rs = None
    if a.pyopencl:
        from pyopencl.algorithm import RadixSort  # optional baseline

        rs = RadixSort(ctx, "__global unsigned *k", key_expr="k[i]", sort_arg_names=["k"],
                       key_dtype=np.uint32)
        # cltune's drop-in with the same constructor and call
        crs = cltune.RadixSort(ctx, "__global unsigned *k", key_expr="k[i]",
                               sort_arg_names=["k"], key_dtype=np.uint32)
    print(f"device: {info.name}; torch: {torch.__version__ if torch else 'no'}; us per call "
          f"(medians of {a.repeats} blocks of {a.calls})")
    rows = []
    for dt in (np.dtype(d) for d in a.dtypes.split(",")):
        for shape in shapes:
            h = _data(dt, shape, rng)
            x = cla.to_device(q, h)
            got = cltune.sort(x).get()
            assert got.tobytes() == np.sort(h, axis=-1, kind="stable").tobytes(), (dt, shape)
            us = per_call_us(q.finish, lambda: cltune.sort(x), a.calls, a.repeats)
            copy_us = per_call_us(q.finish, lambda: x.copy(), a.calls, a.repeats)
            np_us = per_call_us(lambda: None, lambda: np.sort(h, axis=-1, kind="stable"), 1, 3)
            npq_us = per_call_us(lambda: None, lambda: np.sort(h, axis=-1), 1, 3)
            row = {"dtype": dt.name, "shape": list(shape), "cltune_us": us, "copy_us": copy_us,
                   "numpy_stable_us": np_us, "numpy_default_us": npq_us,
                   "gkeys": h.size / us / 1e3}
            if a.pairs and len(shape) == 1:
                vals = cla.to_device(q, np.arange(h.size, dtype=np.int32))
                row["pairs_us"] = per_call_us(q.finish, lambda: cltune.sort_by_key(x, vals),
                                            a.calls, a.repeats)
            if rs is not None and dt == np.uint32 and len(shape) == 1:
                (srt,), _ = rs(x, key_bits=32)
                assert np.array_equal(srt.get(), np.sort(h))
                row["pyopencl_us"] = per_call_us(q.finish, lambda: rs(x, key_bits=32), 1,
                                               a.repeats)
                (srt,), _ = crs(x, key_bits=32)
                assert np.array_equal(srt.get(), np.sort(h))
                row["radixsort_us"] = per_call_us(q.finish, lambda: crs(x, key_bits=32),
                                                  a.calls, a.repeats)
                row["pyopencl_vs_radixsort"] = row["pyopencl_us"] / row["radixsort_us"]
            if torch is not None:
                try:  # torch sorts no unsigned type wider than uint8
                    xt = torch.from_numpy(h).cuda()
                    row["torch_us"] = per_call_us(tsync, lambda: torch.sort(xt, stable=True),
                                                a.calls, a.repeats)
                    del xt
                except (NotImplementedError, RuntimeError, TypeError) as e:
                    print(f"  torch: no sort of {dt.name} ({type(e).__name__})")
            rows.append(row)
            label = "x".join(map(str, shape))
            extra = "".join(f" {k[:-3]} {v:10.1f} ({v / us:5.2f}x)" for k, v in row.items()
                            if k.endswith("_us") and k not in ("cltune_us", "copy_us"))
            print(f"sort {dt.name:>8} {label:>12}: cltune {us:10.1f} us "
                  f"({row['gkeys']:6.3f} Gkeys/s; copy {copy_us:8.1f}){extra}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": info.name, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
