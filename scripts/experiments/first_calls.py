#!/usr/bin/env python
"""How long the first call of a statistic along an axis takes on a device (its config vetted
in the worker, the kernel built), and each `Program.build` it makes in this process.

    rm -rf ~/.cache/cltune; python scripts/experiments/first_calls.py --device NVIDIA
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select

_build = cl.Program.build


def _timed_build(self, *a, **k):
    t = time.perf_counter()
    r = _build(self, *a, **k)
    print(f"  build {time.perf_counter() - t:.2f}s", flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="0")
    a = ap.parse_args()
    t = time.perf_counter()
    info, dev = select(a.device)
    print(f"select (the health check, once per driver): {time.perf_counter() - t:.1f}s")
    cl.Program.build = _timed_build
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    h = np.random.default_rng(0).standard_normal((37, 41)) * 40
    for name, f, dt in [("var", cltune.var, np.float64), ("std", cltune.std, np.float64),
                        ("argmax", cltune.argmax, np.int32)]:
        if dt == np.float64 and not info.fp64:
            continue
        x = cla.to_device(q, h.astype(dt))
        t = time.perf_counter()
        f(x, axis=0).get()
        print(f"== {name} {np.dtype(dt).name} along axis 0: {time.perf_counter() - t:.2f}s",
              flush=True)


if __name__ == "__main__":
    main()
