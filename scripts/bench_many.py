#!/usr/bin/env python
"""Many small reductions side by side, in one process (#22 item 5): cltune's one-launch
`norm_many(xs)` / `r.many(xs)` against k separate cltune calls, numpy on the host
(`[np.linalg.norm(h) for h in hs]`) and, when torch is importable with CUDA (on an NVIDIA
device), `torch._foreach_norm(ts)` and k `torch.linalg.vector_norm` calls.

Every answer is checked against numpy (float64) first. A sample is a block of --calls calls
back to back and one wait at the end (end to end: allocation, launches, the wait); the
contenders' blocks follow each other (never call by call), round after round, and each
figure is the median over --repeats rounds. Ratio = other / cltune many (> 1: many faster).

    python scripts/bench_many.py --device 0
    python scripts/bench_many.py --device 0 --ks 16,64,256 --n 4096 --op sum
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune
from cltune.core.serving import CltuneWarning
from cltune.device.select import select


def block(call: Callable[[], object], finish: Callable[[object], object],
          calls: int) -> Callable[[], float]:
    """Seconds per call of `calls` calls back to back, then one `finish` of the last result."""
    def sample() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            last = call()
        finish(last)
        return (time.perf_counter() - t0) / calls

    finish(call())  # warm: builds, vetting, uploads of tables
    return sample


def _torch(info: object) -> object | None:
    if not getattr(info, "is_nvidia", False):
        return None
    try:
        import torch  # lazy: optional and heavy; only on NVIDIA devices
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def contenders(q: cl.CommandQueue, info: object, op: str, hs: list[np.ndarray],
               calls: int) -> dict[str, Callable[[], float]]:
    xs = [cla.to_device(q, h) for h in hs]
    r = cltune.get_reducer(q, op, np.float32)
    many = (lambda: cltune.norm_many(xs, q)) if op == "norm" else (lambda: r.many(xs))
    want = [np.linalg.norm(h.astype(np.float64)) if op == "norm" else
            h.astype(np.float64).sum() for h in hs]
    got = many().get()
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        sys.exit(f"cltune many answered wrong: {got[:4]} vs {want[:4]}")
    out = {
        "cltune many": block(many, lambda a: a.finish(), calls),
        "cltune k calls": block(lambda: [r(x) for x in xs], lambda rs: rs[-1].finish(),
                                calls),
        "numpy (host)": block(lambda: [np.linalg.norm(h) if op == "norm" else h.sum()
                                       for h in hs], lambda v: v, calls),
    }
    torch = _torch(info)
    if torch is not None:
        ts = [torch.from_numpy(h).cuda() for h in hs]
        sync = lambda _: torch.cuda.synchronize()  # noqa: E731
        if op == "norm":
            out["torch _foreach_norm"] = block(lambda: torch._foreach_norm(ts), sync, calls)
            out["torch k vector_norm"] = block(
                lambda: [torch.linalg.vector_norm(t) for t in ts], sync, calls)
        else:
            out["torch k sum"] = block(lambda: [t.sum() for t in ts], sync, calls)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0", help="cltune device selector (index or name)")
    ap.add_argument("--ks", default="16,64", help="numbers of arrays, comma separated")
    ap.add_argument("--n", type=int, default=4096, help="elements per array")
    ap.add_argument("--op", default="norm", choices=("norm", "sum"))
    ap.add_argument("--calls", type=int, default=20, help="calls per timed block")
    ap.add_argument("--repeats", type=int, default=7, help="rounds (medians over them)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore", CltuneWarning)
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    print(f"device: {info.name} ({info.platform}); op {a.op}, {a.n} float32 per array; "
          f"blocks of {a.calls} calls, medians of {a.repeats} rounds")
    rng = np.random.default_rng(0)
    for k in (int(s) for s in a.ks.split(",")):
        hs = [rng.uniform(-1, 2, a.n).astype(np.float32) for _ in range(k)]
        samplers = contenders(q, info, a.op, hs, a.calls)
        times = {name: [] for name in samplers}
        for _ in range(a.repeats):
            for name, s in samplers.items():
                times[name].append(s())
        med = {name: statistics.median(v) for name, v in times.items()}
        base = med["cltune many"]
        print(f"k={k}:")
        for name, t in med.items():
            print(f"  {name:22s} {t * 1e6:10.1f} us/call  ({t / k * 1e6:7.2f} us/array)  "
                  f"ratio {t / base:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
