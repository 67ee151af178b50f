# ruff: noqa  (one-off experiment, kept terse)
"""A statistic along an axis (cltune.mean / cltune.var, float32, builtin configs) with the
reduced axis split over groups as axis_plan plans it (GPU-style: until cfg.groups_per_cu
groups a compute unit, then a second launch combines) against unsplit (one launch), and the
served plan (launch.device_plan: CPUs keep views of <= CPU_MAX_UNSPLIT elements unsplit);
same process, alternating rounds, medians.

    python scripts/experiments/expr_axis_split_ab.py --device 1
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.expr_axis.api as A
from cltune.device.select import select
from cltune.families.expr_axis.launch import AxisPlan, axis_plan

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="1")
ap.add_argument("--rounds", type=int, default=5)
a = ap.parse_args()
warnings.simplefilter("ignore")
mode = {"m": "served"}
served_plan = A.AxisReducer.plan


def plan(self, outer, r, inner):
    b, p = served_plan(self, outer, r, inner)
    if mode["m"] == "unsplit":
        return b, AxisPlan(p.groups, 1, r)
    if mode["m"] == "split":
        return b, axis_plan(b.config, self.info.compute_units, outer, r, inner)
    return b, p


A.AxisReducer.plan = plan
info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
print(f"# {info.name} ({info.platform}), {info.compute_units} compute units")
SHAPES = [((300, 300), 0), ((1000, 100), 0), ((100, 1000), 1), ((4096, 64), 0), ((64, 4096), 1),
          ((20000, 20), 0), ((3000, 300), 0), ((2000, 500), 0), ((7, 100000), 1),
          ((7, 1000000), 1), ((250000, 40), 0), ((40, 250000), 1)]
MODES = ("split", "unsplit", "served")
for op in ("mean", "var"):
    f = getattr(cltune, op)
    for shape, ax in SHAPES:
        x = cla.to_device(q, np.random.default_rng(0).random(shape, dtype=np.float32))
        want = getattr(np, op)(x.get().astype(np.float64), axis=ax)
        res = {m: [] for m in MODES}
        for _ in range(a.rounds):
            for m in MODES:
                mode["m"] = m
                got = f(x, axis=ax).get()
                assert np.allclose(got, want, rtol=1e-4), (op, shape, ax, m)
                k = 20 if x.size < 1e6 else 5
                t0 = time.perf_counter()
                for _ in range(k):
                    f(x, axis=ax)
                q.finish()
                res[m].append((time.perf_counter() - t0) / k)
        med = {m: statistics.median(v) for m, v in res.items()}
        print(f"{op:4} {str(shape):>13} ax{ax}: split {med['split'] * 1e6:8.0f} us | unsplit "
              f"{med['unsplit'] * 1e6:8.0f} ({med['split'] / med['unsplit']:4.2f}x) | served "
              f"{med['served'] * 1e6:8.0f} ({med['split'] / med['served']:4.2f}x)", flush=True)
