#!/usr/bin/env python3
"""The CPUs' least chunk of a served 1-D scan (launch.CPU_MIN_CHUNK): `cltune.cumsum(x)` of
float32 with the bound off (0: the config's groups_per_cu chunks however short) and at each
--bounds value, alternating in --rounds rounds (the host is shared and noisy); wall per call
of back-to-back calls, medians of --repeats blocks, results checked against numpy first.

    python scripts/experiments/scan_min_chunk.py --device 1 --sizes 4096,65537,1000003
"""
# ruff: noqa: B023 - the timing lambdas run within their loop iteration
from __future__ import annotations

import argparse
import statistics
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

SIZES = "1000,4096,16384,65537,262144,1000003"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--bounds", default="32768", help="min_chunk values beside 0")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept: Intel's runtime drops a context its queue still names
    q = cl.CommandQueue(ctx, dev)
    bounds = [0, *(int(b) for b in a.bounds.split(","))]
    sizes = [int(s) for s in a.sizes.split(",")]
    xs = {n: cla.to_device(q, np.random.default_rng(n).random(n, dtype=np.float32))
          for n in sizes}
    got: dict[tuple[int, int], list[float]] = {}
    for _ in range(a.rounds):
        for b in bounds:
            launch.CPU_MIN_CHUNK = b
            cltune.clear_caches()
            for n, x in xs.items():
                y = cltune.cumsum(x).get()
                want = np.cumsum(x.get().astype(np.float64))
                assert np.allclose(y, want, rtol=1e-4, atol=1e-3 * max(1.0, n ** 0.5)), (n, b)
                calls = max(20, 200000 // n)
                got.setdefault((n, b), []).append(
                    per_call_us(q.finish, lambda: cltune.cumsum(x), calls, a.repeats))
    print(f"device: {info.name}; float32 cumsum, us per call (median of {a.rounds} rounds, "
          "each a median of blocks)")
    print("| n | " + " | ".join(f"min_chunk {b}" for b in bounds) + " | ratio |")
    print("|---:|" + "---:|" * (len(bounds) + 1))
    for n in sizes:
        m = [statistics.median(got[(n, b)]) for b in bounds]
        print(f"| {n} | " + " | ".join(f"{v:.1f}" for v in m) + f" | {m[-1] / m[0]:.2f} |")


if __name__ == "__main__":
    main()
