#!/usr/bin/env python3
"""Top-k configs side by side (#41): per call in ms (median of --repeats, after the awkward
validation inputs and a check against the reference) of each config on 1-D float32 arrays and
rows, and numpy's argpartition + sort of the k (and torch.topk with --torch) for scale.

    python scripts/experiments/topk_configs.py --device 1 --n 2^24 --k 10,1000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.device.select import select
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import spec_for
from cltune.families.topk.launch import TopkLauncher
from cltune.families.topk.reference import compare, reference, validate

CONFIGS = ("lists 1 4 8", "lists 1 16 8", "lists 8 4 8", "lists 64 4 8", "radix 1 4 8",
           "radix 16 4 8", "radix 64 4 8", "radix 64 4 11", "radix 64 16 8", "radix 256 8 8")


def _n(t: str) -> int:
    return 2 ** int(t[2:]) if t.startswith("2^") else int(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="1")
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--k", default="10,1000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--torch", action="store_true", help="torch.topk on CUDA beside")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    n, rows = _n(a.n), a.rows
    m = n // rows
    h = np.random.default_rng(5).standard_normal((rows, m)).astype(np.float32)
    x = cla.to_device(q, h.ravel())
    print(f"{info.name}: {rows}x{m} float32")
    for k in map(int, a.k.split(",")):
        ts = []
        for _ in range(a.repeats):
            t = time.perf_counter()
            p = np.argpartition(-h, k - 1, axis=1)[:, :k]
            np.take_along_axis(p, np.argsort(-np.take_along_axis(h, p, 1), 1), 1)
            ts.append(time.perf_counter() - t)
        print(f"  k={k:5d} numpy argpartition+sort {statistics.median(ts) * 1e3:9.2f} ms")
        if a.torch:
            import torch  # on the GPU host only

            xt = torch.from_numpy(h).cuda()
            torch.topk(xt, k)
            ts = []
            for _ in range(a.repeats):
                torch.cuda.synchronize()
                t = time.perf_counter()
                for _ in range(10):
                    torch.topk(xt, k)
                torch.cuda.synchronize()
                ts.append((time.perf_counter() - t) / 10)
            print(f"  k={k:5d} torch.topk {statistics.median(ts) * 1e3:9.3f} ms")
        want = reference(h, k)
        v = cla.empty(q, rows * k, np.float32)
        i = cla.empty(q, rows * k, np.int64)
        for text in a.configs.split(","):
            s, wg, g, b = text.split()
            cfg = TopkConfig(s, int(wg), int(g), int(b))
            la = TopkLauncher(ctx, dev, info, spec_for(np.dtype(np.float32), k, info), cfg)
            if not la.fits(k) or cfg.wg > info.max_wg:
                continue
            chk = validate(la, q)
            if not chk.ok:
                print(f"  k={k:5d} {cfg.short():22s} INVALID {chk.reason}")
                continue
            la.run(q, x, 0, m, rows, k, True, v, i)
            why = compare(v.get().reshape(rows, k), i.get().reshape(rows, k), *want)
            if why:
                print(f"  k={k:5d} {cfg.short():22s} WRONG {why}")
                continue
            ts = []
            for _ in range(a.repeats):
                t = time.perf_counter()
                for _ in range(a.calls):
                    la.run(q, x, 0, m, rows, k, True, v, i)
                q.finish()
                ts.append((time.perf_counter() - t) / a.calls)
            # the last call's answer checked too (a race may show only now and then)
            why = compare(v.get().reshape(rows, k), i.get().reshape(rows, k), *want)
            print(f"  k={k:5d} {cfg.short():22s} {statistics.median(ts) * 1e3:9.3f} ms"
                  + (f"  WRONG after the calls: {why}" if why else ""))


if __name__ == "__main__":
    main()
