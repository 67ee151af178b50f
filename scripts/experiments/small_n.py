# ruff: noqa: B023, E501  (one-off experiment: closures are called at once)
"""Device time of the 1-D sum at small n (issue 14, item 3): the served config per pass beside
a few launch shapes (one group per compute unit or fewer: a single group where n <= wg*items*vec) and
the floor (an empty kernel), OpenCL profiling events, medians of 41.

    python3 scripts/experiments/small_n.py --device NVIDIA --sizes 12,14,16,18,20
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.device.select import select
from cltune.families.reduce.api import get_reducer
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.launch import Launcher

EMPTY = "__kernel void nop(__global float *o) { if (get_global_id(0) == 0x7fffffff) o[0] = 1; }"


def per_pass(fn, reps: int = 41) -> tuple[float, list[float]]:
    tot, acc = [], []
    for _ in range(reps):
        evs = fn()
        evs[-1].wait()
        tot.append((evs[-1].profile.end - evs[0].profile.start) * 1e-3)
        acc.append([(e.profile.end - e.profile.start) * 1e-3 for e in evs])
    return statistics.median(tot), [round(statistics.median(c), 2) for c in zip(*acc, strict=True)]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", required=True)
    p.add_argument("--sizes", default="12,14,16,18,20")
    a = p.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    nop = cl.Program(ctx, EMPTY).build().nop
    o = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    for g in (1, 8, 132):
        t, _ = per_pass(lambda g=g: [nop(pq, (256 * g,), (256,), o)])
        print(f"empty kernel, {g} group(s) of 256: {t:.2f} us")
    r = get_reducer(q)
    spec = r._eng.spec
    warp = "warp_shuffle" if info.is_nvidia else "local_tree"
    shapes = {"wg1024 v4 g/cu1": dict(strategy=warp, wg=1024, tile=0, items=1, vec=4, groups_per_cu=1, passes=1),
              "wg512 v4 i2 g/cu1": dict(strategy=warp, wg=512, tile=0, items=2, vec=4, groups_per_cu=1, passes=1),
              "wg256 v4 i4 g/cu1": dict(strategy=warp, wg=256, tile=0, items=4, vec=4, groups_per_cu=1, passes=1),
              "wg256 v4 g/cu1": dict(strategy=warp, wg=256, tile=0, items=1, vec=4, groups_per_cu=1, passes=1),
              "wg128 v4 g/cu1": dict(strategy=warp, wg=128, tile=0, items=1, vec=4, groups_per_cu=1, passes=1)}
    rng = np.random.default_rng(0)
    for b in (int(s) for s in a.sizes.split(",")):
        n = 1 << b
        x = cla.to_device(q, rng.random(n, dtype=np.float32))
        out = cla.empty(pq, (), np.float32)
        want = float(x.get().astype(np.float64).sum())
        la, ch = r._eng.launcher_for(n)
        rows = [(f"served {ch.config.short()}", la)]
        for name, kw in shapes.items():
            try:
                tile = kw["wg"] if kw["strategy"] == "local_tree" else 0
                cfg = Config(**{**kw, "tile": tile, "acc": "native"})
                lb = Launcher(ctx, dev, info, spec, cfg)
                lb.built(False)
            except (ConfigError, Exception) as e:  # noqa: BLE001
                print(f"  {name}: {type(e).__name__} {str(e)[:80]}")
                continue
            rows.append((f"{name} ({cfg.short()})", lb))
        for name, lx in rows:
            t, pp = per_pass(lambda lx=lx: lx.enqueue(pq, x.base_data, 0, n, out.base_data))
            got = float(out.get())
            ok = abs(got - want) <= 1e-5 * abs(want)
            groups = lx.plan(n).groups if hasattr(lx, "plan") else "?"
            print(f"2^{b} {name}: device {t:.2f} us, passes {pp}, groups {groups}{'' if ok else '  WRONG ' + str(got)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
