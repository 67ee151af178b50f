# ruff: noqa  (one-off experiment, kept terse)
"""Statistics along skinny shapes (#40): few long rows, tall-narrow blocks along axis 0, and
millions of short columns. For each (shape, axis, op) a grid of expression-axis configs and
launch plans — the split's fewest rows per work-item (`min_rows`) and stage 2's lanes
(`stage2_items`: outputs x lanes kept within it, 0 = a work-item an output as before) — is
launched directly, back to back (wall per call of a block, medians of --repeats), beside the
served call (`cltune.var(x, axis=k)`...) and torch. Every launch's answer is checked against
numpy first. `old` is the served config under the former plan (min_rows 64, stage 2 a
work-item an output).

    python scripts/experiments/stats_axis_skinny.py --device NVIDIA --json out.json
    python scripts/experiments/stats_axis_skinny.py --device 1 --shapes 4x100003 --small
"""
import argparse, itertools, json, statistics, sys, time, warnings
from pathlib import Path
import numpy as np, pyopencl as cl, pyopencl.array as cla

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--shapes", default="8x1048576:1,4x2000003:1,1x4194304:1,1048576x8:0,"
                "2000003x7:0,8x1048576:0")
ap.add_argument("--ops", default="mean,var,argmax")
ap.add_argument("--calls", type=int, default=10)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--small", action="store_true", help="a tiny grid (a smoke test on CPUs)")
ap.add_argument("--json", default=None)
ap.add_argument("--few-plans", action="store_true",
                help="min rows 16 and 64, stage 2 with lanes only (the configs, not the plans)")
ap.add_argument("--tall", default=None,
                help="tall-narrow candidates only: LANES:ITEMS:GPC,... (wg 256, strip 1)")
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from pyopencl.tools import VectorArg
from bench_timing import cuda_torch
from cltune.device.select import select
from cltune.core.shapes import geometry
from cltune.families.expr_axis.api import axis_reducer
from cltune.families.expr_axis.config import AxisExprConfig as C
from cltune.families.expr_axis.defaults import choose
from cltune.families.expr_axis.kernel import build
from cltune.families.expr_axis import launch as L
from cltune.stats import axis as stats_axis
from cltune.stats.kernels import kernel

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
torch = cuda_torch()
EXTRA = {"var": (0.0,), "argmax": (), "mean": (), "norm2": ()}
API = {"var": cltune.var, "argmax": cltune.argmax, "mean": cltune.mean,
       "norm2": lambda x, axis: cltune.norm(x, axis=axis)}
NP = {"var": np.var, "argmax": np.argmax, "mean": np.mean,
      "norm2": lambda h, axis: np.linalg.norm(h, axis=axis)}
TORCH = {"var": lambda t, d: torch.var(t, dim=d, unbiased=False),
         "argmax": lambda t, d: torch.argmax(t, dim=d), "mean": lambda t, d: torch.mean(t, dim=d),
         "norm2": lambda t, d: torch.linalg.vector_norm(t, dim=d)}
MIN_ROWS = (64,) if a.small else (16, 64) if a.few_plans else (4, 8, 16, 32, 64)
S2 = (1 << 14,) if a.few_plans else (0, 1 << 14)


def grid(kind, r, served, inner=1):
    out = {served}
    if kind == "rows":
        for wg, lanes, items, g in itertools.product(
                (16,) if a.small else (256, 512), (4, 16) if a.small else (64, 128, 256),
                (2,) if a.small else (1, 2, 4, 8), (8,) if a.small else (8, 16, 32)):
            if lanes <= wg:
                out.add(C("rows", wg, lanes, items, 1, g))
    elif r <= 64:  # millions of short columns: a work-item an output (and strips)
        for wg, items, strip in itertools.product((8,) if a.small else (64, 128, 256, 512),
                                                  (1, 2, 4, 8), (1,) if a.small else (1, 2, 4)):
            out.add(C("cols", wg, 1, items, strip, 8))
    elif a.tall:
        for t in a.tall.split(","):
            lanes, items, g = (int(v) for v in t.split(":"))
            out.add(C("cols", 256, lanes, items, 1, g))
    else:  # tall-narrow: lanes along the axis, a strip of neighbouring outputs each
        strips = sorted({1, min(16, 1 << max(0, (inner - 1).bit_length()))})
        for wg, lanes, items, g, strip in itertools.product(
                (16,) if a.small else (256, 512), (4,) if a.small else (8, 16, 32, 64, 128, 256),
                (1, 2, 4) if a.small else (1, 2, 4, 8), (8,) if a.small else (8, 16, 32),
                strips):
            if lanes <= wg and (strip == 1 or lanes >= 32 or a.small) and (strip == 1 or items <= 2):
                out.add(C("cols", wg, lanes, items, strip, g))
    return sorted(out, key=lambda c: c.short())


def per_call(fn, finish=q.finish):
    fn(); finish()
    ts = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        finish()
        ts.append((time.perf_counter() - t0) / a.calls)
    return statistics.median(ts) * 1e6


rows_out = []
rng = np.random.default_rng(0)
t_start = time.time()
print(f"device: {info.name}; torch: {torch.__version__ if torch else None}", flush=True)
for item in a.shapes.split(","):
    text, axis = item.split(":")
    axis = int(axis)
    shape = tuple(int(v) for v in text.split("x"))
    h = rng.random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    for op in a.ops.split(","):
        knl = kernel(op, ctx, np.float32)
        spec = knl.spec
        red = axis_reducer(ctx, dev, spec)
        g = geometry(shape, True, axis, False)
        kind = "rows" if g.inner == 1 else "cols"
        want = np.asarray(NP[op](h.astype(np.float64), axis=axis)).ravel()
        res = cla.empty(q, g.outer * g.inner, spec.dtype_result)
        user = []
        for v, t in zip((x, *EXTRA[op]), spec.arguments):
            user += (v.base_data, v.offset) if isinstance(t, VectorArg) else [v]
        served = red.config(g.outer, g.r, g.inner)
        found, built = [], {}
        for cfg in grid(kind, g.r, served, g.inner):
            try:
                b = build(ctx, dev, info, spec, cfg)
            except Exception as e:
                print(f"FAIL {text} {op} ax{axis} {cfg.short()}: {str(e)[:100]}", flush=True)
                continue
            plans = {}
            for mr, s2 in itertools.product(MIN_ROWS, S2):
                p = L.axis_plan(cfg, info.compute_units, g.outer, g.r, g.inner, 0, mr, s2)
                plans.setdefault(p, (mr, s2))
            for p, (mr, s2) in plans.items():
                fn = lambda b=b, p=p: red.launch(q, b, p, user, g.outer, g.r, g.inner,
                                                 res.base_data, 0)
                res.fill(0); fn(); q.finish()
                got = res.get().astype(np.float64)
                err = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))
                if err > 1e-4:
                    print(f"WRONG {text} {op} ax{axis} {cfg.short()} {p}: err {err:.1e}", flush=True)
                    continue
                found.append({"config": cfg.short(), "cfg": cfg.to_dict(), "min_rows": mr,
                              "stage2_items": s2, "groups": p.groups, "split": p.split,
                              "lanes2": p.lanes2, "us": per_call(fn)})
        old = L.axis_plan(served, info.compute_units, g.outer, g.r, g.inner, 0, 64, 0)
        bs = build(ctx, dev, info, spec, served)
        old_us = per_call(lambda: red.launch(q, bs, old, user, g.outer, g.r, g.inner,
                                             res.base_data, 0))
        new = L.device_plan(served, info, g.outer, g.r, g.inner)
        e2e = per_call(lambda: API[op](x, axis=axis))
        row = {"shape": text, "axis": axis, "op": op, "kind": kind, "served": served.short(),
               "old_plan": str(old), "old_us": old_us, "plan": str(new), "e2e_us": e2e,
               "bytes": h.nbytes, "configs": sorted(found, key=lambda d: d["us"])}
        if torch is not None:
            xt = torch.from_numpy(h).cuda()
            fn = lambda: TORCH[op](xt, axis)
            row["torch_us"] = per_call(fn, torch.cuda.synchronize)
            del xt
        rows_out.append(row)
        best = row["configs"][0]
        tt = row.get("torch_us")
        print(f"{text:>12} ax{axis} {op:>6}: best {best['us']:7.1f} [{best['config']} mr{best['min_rows']} "
              f"s2 {best['stage2_items']} split {best['split']} l2 {best['lanes2']}] "
              f"old {old_us:7.1f} [{served.short()} {old.split}] e2e(new) {e2e:7.1f} [split {new.split} l2 {new.lanes2}]"
              + (f" torch {tt:7.1f} torch/e2e {tt / e2e:.2f} torch/old {tt / old_us:.2f}" if tt else "")
              + f" {h.nbytes / best['us'] / 1e3:.0f} GB/s ({len(found)} runs, {time.time() - t_start:.0f}s)",
              flush=True)
        for d in row["configs"][1:6]:
            print(f"{'':>22} {d['us']:7.1f} [{d['config']} mr{d['min_rows']} s2 {d['stage2_items']} "
                  f"split {d['split']} l2 {d['lanes2']}]", flush=True)
        if a.json:  # after every case: a run cut short keeps what it measured
            Path(a.json).write_text(json.dumps({"device": info.name, "rows": rows_out}, indent=1))
    del x
