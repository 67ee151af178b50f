#!/usr/bin/env python3
"""Short columns scanned along axis 0 (#40): `cltune.cumsum(x, axis=0)` with the GPU plan's
one-launch rule for columns of <= SHORT_COLS rows switched off (0: cut into chunks, three
launches) and on (a huge bound: always one launch), beside torch.cumsum(dim=0) in blocks of
its own; wall per call of --calls back-to-back calls, medians of --repeats blocks, results
checked against numpy first. Tells where one launch stops paying (the SHORT_COLS bound).
`tile`: one launch by a group's chunks of at most COLS_BATCH rows, their carries combined in
the group (clt_scan_cols_tile, `launch.TILE_COLS`; up to COLS_BATCH x the group's size rows).

    python scripts/experiments/scan_short_cols.py --device NVIDIA --shapes 64x10000,256x1000
"""
# ruff: noqa: B023 - the timing lambdas run within their loop iteration
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select
from cltune.families.scan import launch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_timing import per_call_us  # noqa: E402 - scripts/: the shared timing helper

SHAPES = "8x100003,64x10000,64x100000,128x10000,256x10000,512x10000,1024x10000,256x1000"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="NVIDIA")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept (Intel's CPU runtime frees a context nobody holds)
    q = cl.CommandQueue(ctx, dev)
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    print(f"device: {info.name}; float32 cumsum along axis 0, us per call (medians)")
    print("| shape | chunks (3 launches) | one launch | one/chunks | tile | tile/one | torch | "
          "torch/one | torch/tile |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in a.shapes.split(","):
        shape = tuple(int(v) for v in s.split("x"))
        h = np.random.default_rng(0).random(shape, dtype=np.float32)
        x = cla.to_device(q, h)
        want = np.cumsum(h.astype(np.float64), axis=0)
        res = {}
        short, tile = launch.SHORT_COLS, launch.TILE_COLS
        for name, bound, tiles in (("chunks", 0, False), ("one", 1 << 40, False),
                                   ("tile", 1 << 40, True)):
            launch.SHORT_COLS, launch.TILE_COLS = bound, tiles
            cltune.clear_caches()
            got = cltune.cumsum(x, axis=0).get()
            assert np.allclose(got, want, rtol=1e-4, atol=1e-3), (s, name)
            res[name] = per_call_us(q.finish, lambda: cltune.cumsum(x, axis=0), a.calls,
                                  a.repeats)
        launch.SHORT_COLS, launch.TILE_COLS = short, tile
        tt = float("nan")
        if torch is not None:
            xt = torch.from_numpy(h).cuda()
            tt = per_call_us(torch.cuda.synchronize, lambda: torch.cumsum(xt, dim=0), a.calls,
                           a.repeats)
        print(f"| {s} | {res['chunks']:.1f} | {res['one']:.1f} | "
              f"{res['one'] / res['chunks']:.2f} | {res['tile']:.1f} | "
              f"{res['tile'] / res['one']:.2f} | {tt:.1f} | {tt / res['one']:.2f} | "
              f"{tt / res['tile']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
