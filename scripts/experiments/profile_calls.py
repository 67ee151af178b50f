#!/usr/bin/env python
"""Where a call's time goes on a device: every kernel a call enqueues (by name) with its device
time, the idle gaps between them, and the host time per call, from a profiling queue.

    python scripts/experiments/profile_calls.py --device NVIDIA --n 2^20
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.device.select import select

_events: list[tuple[str, cl.Event]] = []
_orig = cl.enqueue_nd_range_kernel


def _spy(queue, kernel, *a, **k):
    e = _orig(queue, kernel, *a, **k)
    _events.append((kernel.function_name, e))
    return e


def profile(name, call, q, calls=20):
    call()
    q.finish()
    _events.clear()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) / calls
    q.finish()
    wall = (time.perf_counter() - t0) / calls
    per = defaultdict(list)
    for kn, e in _events:
        per[kn].append((e.profile.end - e.profile.start) * 1e-3)
    evs = [e for _, e in _events]
    gaps = [(b.profile.start - a.profile.end) * 1e-3
            for a, b in zip(evs[:-1], evs[1:], strict=True)]
    span = (evs[-1].profile.end - evs[0].profile.start) * 1e-3 / calls if evs else 0
    ks = ", ".join(f"{k} x{len(v) // calls} {statistics.median(v):.1f} us"
                   for k, v in per.items())
    print(f"{name:>22}: host {host * 1e6:7.1f} us/call, wall {wall * 1e6:7.1f}, device span "
          f"{span:7.1f}; gaps median {statistics.median(gaps) if gaps else 0:.1f} max "
          f"{max(gaps) if gaps else 0:.1f}; {ks}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="0")
    ap.add_argument("--n", default="2^12,2^20,2^24")
    ap.add_argument("--stats", action="store_true",
                    help="also the statistics (argmax, var, norm, mean) and norm_many of 16 "
                         "and 64 arrays of 4096")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    cl.enqueue_nd_range_kernel = _spy
    s = cltune.get_scanner(q, "sum", np.float32)
    r = cltune.get_reducer(q, "sum", np.float32)
    for t in a.n.split(","):
        n = 2 ** int(t[2:]) if t.startswith("2^") else int(t)
        run_size(info, q, s, r, n)
        if a.stats:
            run_stats(q, r, n)


def run_stats(q, r, n: int) -> None:
    x = cla.to_device(q, np.random.default_rng(1).random(n, dtype=np.float32))
    print(f"# statistics, n = {n}")
    profile("r(x)", lambda: r(x), q)
    for name in ("argmax", "var", "norm", "mean"):
        f = getattr(cltune, name)
        profile(name, lambda f=f: f(x), q)
    for k in (16, 64):
        xs = [cla.to_device(q, np.random.default_rng(i).random(4096, dtype=np.float32))
              for i in range(k)]
        profile(f"norm_many k={k}", lambda xs=xs: cltune.norm_many(xs), q)
        profile(f"sum many k={k}", lambda xs=xs: r.many(xs), q)


def run_size(info, q, s, r, n: int) -> None:
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(q, h)
    o = cla.empty(q, (n,), np.float32)
    offs = np.linspace(0, n, 1025).astype(np.int64)
    print(f"# n = {n} on {info.name}: {s.explain((n,)).config.short()}")
    profile("reduce", lambda: r(x), q)
    profile("scan", lambda: s(x, out=o), q)
    profile("segments", lambda: s.segments(x, offs, out=o), q)
    profile("copy_if", lambda: cltune.copy_if(x, "ary[i] > 0.5"), q)
    profile("nonzero", lambda: cltune.nonzero(x > 0.5), q)

if __name__ == "__main__":
    main()
