# ruff: noqa  (one-off experiment, kept terse)
"""Statistics along an axis on a GPU (#22 item 4): for each shape, axis and statistic, a grid of
AxisExprConfigs (family expr_axis) launched directly (back to back, one wait: seconds per call
of a block), beside the served call (`cltune.var(x, axis=k)`, end to end) and torch
(`torch.var(x, dim=k, unbiased=False)` / `argmax(dim=k)` / `mean` / `linalg.vector_norm`, CUDA
events over a block, in blocks of its own). Every config's answer is checked against numpy
first. Writes every timing as JSON, to fit the heuristic (`expr_axis/defaults.choose`) on.

    python scripts/experiments/stats_axis_gpu_sweep.py --device NVIDIA --shapes 4000x3000,123x45678 --json out.json
"""
import argparse, itertools, json, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--shapes", default="4000x3000,123x45678")
ap.add_argument("--ops", default="var,argmax")
ap.add_argument("--calls", type=int, default=10)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--small", action="store_true", help="a tiny grid (a smoke test on CPUs)")
ap.add_argument("--json", default=None)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from pyopencl.tools import VectorArg
from cltune.device.select import select
from cltune.core.shapes import geometry
from cltune.core.pow2 import pow2_at_least
from cltune.families.expr_axis.api import axis_reducer
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import choose
from cltune.families.expr_axis.kernel import build
from cltune.families.expr_axis.launch import axis_plan
from cltune.stats import axis as stats_axis
from cltune.stats.kernels import kernel

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
torch = None
try:
    import torch as _t
    torch = _t if _t.cuda.is_available() else None
except ImportError:
    pass
EXTRA = {"var": (0.0,), "argmax": (), "mean": (), "norm2": ()}
API = {"var": cltune.var, "argmax": cltune.argmax, "mean": cltune.mean,
       "norm2": lambda x, axis: cltune.norm(x, axis=axis)}
NP = {"var": np.var, "argmax": np.argmax, "mean": np.mean,
      "norm2": lambda h, axis: np.linalg.norm(h, axis=axis)}


def torch_call(op, xt, dim):
    if op == "var":
        return lambda: torch.var(xt, dim=dim, unbiased=False)
    if op == "argmax":
        return lambda: torch.argmax(xt, dim=dim)
    if op == "mean":
        return lambda: torch.mean(xt, dim=dim)
    return lambda: torch.linalg.vector_norm(xt, dim=dim)


def grid(kind: str, r: int) -> list[AxisExprConfig]:
    out = []
    if kind == "rows":
        lanes_all = (1, 4, 16) if a.small else (1, 2, 4, 8, 16, 32, 64, 128, 256)
        for wg, lanes, items, g in itertools.product(
                (256,) if not a.small else (16,), lanes_all, (1, 2, 4) if not a.small else (2,),
                (8, 32) if not a.small else (8,)):
            if lanes > wg or lanes > max(1, pow2_at_least(r)) * 2:
                continue
            out.append(AxisExprConfig("rows", wg, lanes, items, 1, g))
    else:
        for wg, lanes, items, g in itertools.product(
                (256,) if not a.small else (16,), (1, 2, 4, 8, 16, 32) if not a.small else (1, 4),
                (1, 2, 4) if not a.small else (2,), (4, 16) if not a.small else (4,)):
            if lanes > wg:
                continue
            out.append(AxisExprConfig("cols", wg, lanes, items, 1, g))
    return out


def per_call(fn, finish=q.finish) -> float:
    fn(); finish()
    ts = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        finish()
        ts.append((time.perf_counter() - t0) / a.calls)
    return statistics.median(ts)


rows_out = []
rng = np.random.default_rng(0)
t_start = time.time()
for text in a.shapes.split(","):
    shape = tuple(int(v) for v in text.split("x"))
    h = rng.random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    for op, axis in itertools.product(a.ops.split(","), (1, 0)):
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
        served = stats_axis.explain("norm" if op == "norm2" else op, q, np.float32, shape, axis)
        builtin = choose(info, g.outer, g.r, g.inner, spec.dtype_out.itemsize)
        cfgs = grid(kind, g.r)
        for extra in (served.config, builtin):
            if extra is not None and extra not in cfgs:
                cfgs.append(extra)
        found = []
        for cfg in cfgs:
            try:
                b = build(ctx, dev, info, spec, cfg)
                p = axis_plan(cfg, info.compute_units, g.outer, g.r, g.inner)
                fn = lambda b=b, p=p: red.launch(q, b, p, user, g.outer, g.r, g.inner,
                                                 res.base_data, 0)
                fn(); q.finish()
                got = res.get().astype(np.float64)
                err = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))
                if err > 1e-3:
                    print(f"WRONG {text} {op} axis {axis} {cfg.short()}: err {err:.1e}", flush=True)
                    continue
                found.append({"config": cfg.short(), "cfg": cfg.to_dict(), "us": per_call(fn) * 1e6,
                              "groups": p.groups, "split": p.split})
            except Exception as e:  # a config that does not build here
                print(f"FAIL {text} {op} axis {axis} {cfg.short()}: {str(e)[:100]}", flush=True)
        api = API[op]
        e2e = per_call(lambda: api(x, axis=axis)) * 1e6
        row = {"shape": text, "op": op, "axis": axis, "kind": kind,
               "served": served.config.short() if served.config else served.level,
               "served_level": served.level, "builtin": builtin.short(), "e2e_us": e2e,
               "configs": sorted(found, key=lambda d: d["us"])}
        if torch is not None:
            xt = torch.from_numpy(h).cuda()
            fn = torch_call(op, xt, axis)
            fn(); torch.cuda.synchronize()
            ts = []
            for _ in range(a.repeats):
                s, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(a.calls):
                    fn()
                e_.record(); e_.synchronize()
                ts.append(s.elapsed_time(e_) * 1e3 / a.calls)
            row["torch_us"] = statistics.median(ts)
            del xt
        rows_out.append(row)
        best = row["configs"][0] if row["configs"] else {"us": float("nan"), "config": "-"}
        by = {d["config"]: d["us"] for d in row["configs"]}
        tt = row.get("torch_us")
        sv = row["served"]
        print(f"{text:>12} {op:>6} ax{axis} {kind}: best {best['us']:7.1f} [{best['config']}] served "
              f"{by.get(sv, float('nan')):7.1f} [{sv} {served.level}] builtin "
              f"{by.get(builtin.short(), float('nan')):7.1f} [{builtin.short()}] e2e {e2e:7.1f}"
              + (f" torch {tt:7.1f} torch/best {tt / best['us']:.2f} torch/e2e {tt / e2e:.2f}" if tt else "")
              + f"  ({len(found)} cfgs, {time.time() - t_start:.0f}s)", flush=True)
        if a.json:  # after every case: a run cut short keeps what it measured
            with open(a.json, "w") as f:
                json.dump({"device": info.name, "rows": rows_out}, f, indent=1)
    del x
if a.json:
    with open(a.json, "w") as f:
        json.dump({"device": info.name, "rows": rows_out}, f, indent=1)
