# ruff: noqa  (a one-off check, kept terse)
"""Which radix-pass shapes, ways (chunks / onesweep) and key dtypes answer numpy's stable order
on a device: the first wrong place of each (sort.py's _sorted, positions and values).

    python scripts/experiments/sort_diag.py --device NVIDIA
"""
import argparse, sys, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

warnings.simplefilter("ignore")
from cltune.device.select import select
import cltune.families.scan.sort as S

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--shapes", default="24:3:5:2,64:4:8:3,256:8:8:2,32:4:5:2,64:3:5:2")
ap.add_argument("--dtypes", default="int64,uint64,float64,int32,float32")
ap.add_argument("--sizes", default="5003,100003")
a = ap.parse_args()
_, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
has_os = hasattr(S, "ONESWEEP_MAX")
rng = np.random.default_rng(0)
for st in a.shapes.split(","):
    shape = tuple(int(v) for v in st.split(":"))
    for dt in a.dtypes.split(","):
        d = np.dtype(dt)
        for n in (int(v) for v in a.sizes.split(",")):
            if d.kind == "f":
                h = (rng.standard_normal(n) * 50).astype(d)
            else:
                i = np.iinfo(d)
                h = rng.integers(i.min, i.max, n, dtype=d, endpoint=True)
                h[::17] = i.min; h[1::19] = i.max; h[2::5] = h[3]
            x = cla.to_device(q, h)
            res = []
            for way in (["chunks", "os"] if has_os else ["chunks"]):
                kw = {"onesweep": way == "os"} if has_os else {}
                if has_os:
                    S.ONESWEEP_ON["cpu"] = S.ONESWEEP_ON["gpu"] = (0, 0)
                want = S.reference_order(h, False)
                bad = []
                for rep in range(3):
                    _, pos = S._sorted(q, x, 1, n, False, False, True, shape=shape, vet=False, **kw)
                    p = pos.get()
                    if not np.array_equal(p, want):
                        wrong = np.flatnonzero(p != want)
                        bad.append(f"{len(wrong)} wrong from {wrong[0]}")
                res.append(f"{way} {'ok' if not bad else '; '.join(bad)}")
            print(f"{st} {dt} n={n}: " + " | ".join(res), flush=True)
