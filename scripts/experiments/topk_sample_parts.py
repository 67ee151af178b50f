"""Where the sample strategy's time goes (#41): the device time of its two kernels
(`clt_tk_sfilter`: the sample's select and the read of the row; `clt_tk_sfinish`: the k among
the kept keys) from a profiling queue, beside a device copy of the same bytes (its GB/s as
read + write: the device's streaming ceiling) and the wall time per call of back-to-back
calls, on 1-D float32 normal data.

    python scripts/experiments/topk_sample_parts.py --device NVIDIA --n 2^20,2^24,2^27 \\
        --k 10,1000 --configs "sample 1024 2 11,sample 512 4 11"

`--variants plan,nosecond,ns2048,fw256` also runs each sample config with the finishing
group's second sample off (`nosecond`), with a sample of N keys (`nsN`, its own rank r) and
with a finishing group of N work-items (`fwN`).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.device.select import select
from cltune.families.topk import launch as topk_launch
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import spec_for
from cltune.families.topk.launch import TopkLauncher, sample_plan
from cltune.families.topk.reference import compare, reference


def _n(t: str) -> int:
    return 2 ** int(t[2:]) if t.startswith("2^") else int(t)


def _device_us(ev: cl.Event) -> float:
    ev.wait()
    return (ev.profile.end - ev.profile.start) * 1e-3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="1")
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--k", default="10,1000")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--configs", default="sample 1024 2 11")
    ap.add_argument("--variants", default="plan",
                    help="plan, nosecond (no second sample), nsN (a sample of N keys), "
                    "fwN (a finishing group of N)")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    q = cl.CommandQueue(ctx)
    print(f"{info.name}")
    for n in map(_n, a.n.split(",")):
        h = np.random.default_rng(5).standard_normal(n).astype(np.float32)
        x = cla.to_device(q, h)
        y = cla.empty(q, n, np.float32)
        copies = []
        for _ in range(a.calls):
            copies.append(_device_us(cl.enqueue_copy(pq, y.data, x.data)))
        pq.finish()
        cu = statistics.median(copies)
        print(f"n={n}: copy {cu:.1f} us = {2 * 4 * n / cu / 1e3:.0f} GB/s (read + write)")
        for k in map(int, a.k.split(",")):
            spec = spec_for(np.dtype(np.float32), k, info)
            want = reference(h[None], k)
            for text, var in [(c, v) for c in a.configs.split(",")
                              for v in a.variants.split(",")]:
                s, wg, g, b = text.split()
                if s != "sample" and var != "plan":
                    continue
                sp = spec if not var.startswith("ns") else \
                    dataclasses.replace(spec, sample=int(var[2:]))
                sk = spec if not var.startswith("fw") else \
                    dataclasses.replace(spec, fin_wg=int(var[2:]))

                def forced(_spec, local_mem, m, kk, var=var, sp=sp):
                    p = sample_plan(sp, local_mem, m, kk)
                    if p is not None and var == "nosecond":
                        p = (p[0], p[1], 0, 0, p[4])
                    return p
                topk_launch.sample_plan = forced
                cfg = TopkConfig(s, int(wg), int(g), int(b))
                la = TopkLauncher(ctx, dev, info, sk, cfg)
                v = cla.empty(q, k, np.float32)
                i = cla.empty(q, k, np.int64)
                la.run(pq, x, 0, n, 1, k, True, v, i)
                pq.finish()
                why = compare(v.get()[None], i.get()[None], *want)
                parts: list[list[float]] = []
                for _ in range(a.calls):
                    evs = la.run(pq, x, 0, n, 1, k, True, v, i)
                    pq.finish()
                    parts.append([_device_us(e) for e in evs])
                walls = []
                for _ in range(3):
                    q.finish()
                    t = time.perf_counter()
                    for _ in range(a.calls):
                        la.run(q, x, 0, n, 1, k, True, v, i)
                    q.finish()
                    walls.append((time.perf_counter() - t) / a.calls * 1e6)
                cols = [statistics.median(c) for c in zip(*parts, strict=True)]
                plan = forced(spec, info.local_mem, n, k) if s == "sample" else None
                wall = statistics.median(walls)
                print(f"  k={k:5d} {cfg.short():20s} {var:8s} wall {wall:8.1f} us; "
                      f"kernels {' + '.join(f'{c:.1f}' for c in cols)} us; plan {plan}"
                      f"{'; WRONG ' + why if why else ''}")


if __name__ == "__main__":
    main()
