# ruff: noqa  (one-off experiment, kept terse)
"""Axis sums on a GPU: for each shape and axis, a grid of AxisConfigs launched directly
(prepared launch, back to back, one wait: seconds per call of a block), beside the served
call `r(x, axis=k)` and torch's `x.sum(dim=k)` (CUDA events over a block of back-to-back
calls, its blocks after cltune's). Every config's answer is checked against numpy first (a
wrong one is dropped and reported). Writes every timing as JSON, to fit the builtin
heuristics on: what would tuning at the very shape find, and is it above torch?

    python scripts/experiments/axis_gpu_sweep.py --device NVIDIA --shapes 3000x5000,777x12345 --json out.json
"""
import argparse, itertools, json, statistics, sys, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--shapes", default="3000x5000,777x12345")
ap.add_argument("--calls", type=int, default=10)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--small", action="store_true", help="a tiny grid (a smoke test on CPUs)")
ap.add_argument("--json", default=None)
ap.add_argument("--wide", action="store_true",
                help="skinny shapes (#40): cols from 1, vec to 8, items to 8, wg 128-1024, more groups")
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
from cltune.device.select import select
from cltune.core.ops import OpSpec
from cltune.core.shapes import geometry
from cltune.core.pow2 import pow2_at_least
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.launch import AxisLauncher
from cltune.families.axis.api import explain_axis

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
sp = OpSpec("sum", "float32")
r = cltune.get_reducer(q, "sum", np.float32)
torch = None
try:
    import torch as _t
    torch = _t if _t.cuda.is_available() else None
except ImportError:
    pass


def grid(kind: str, a_: int, b_: int) -> list[AxisConfig]:
    out = []
    if kind == "rows" and a.wide:
        for wg, lanes, vec, items, g, op in itertools.product(
                (256, 1024), (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), (4, 8),
                (2, 8), (8, 64), (0, 1)):
            if lanes > wg or lanes > max(1, pow2_at_least(-(-b_ // vec))) * 2:
                continue
            if b_ > 4096 and lanes < 64:
                continue
            warp = int(info.is_nvidia and 2 <= lanes <= 32)
            out.append(AxisConfig(wg=wg, lanes=lanes, vec=vec, items=items, groups_per_cu=g,
                                  warp=warp, onepass=op))
    elif kind == "rows":
        for wg, lanes, vec, items, g, op in itertools.product(
                (256,), (1, 2, 4, 8, 16, 32, 64, 128, 256), (1, 4) if not a.small else (4,),
                (1, 2, 4) if not a.small else (2,), (8, 32) if not a.small else (8,),
                (0, 1)):
            if lanes > max(1, pow2_at_least(-(-b_ // vec))) * 2:
                continue
            warp = int(info.is_nvidia and 2 <= lanes <= 32)
            out.append(AxisConfig(wg=wg, lanes=lanes, vec=vec, items=items, groups_per_cu=g,
                                  warp=warp, onepass=op))
    elif a.wide:
        for wg, cols, vec, items, g, op in itertools.product(
                (256, 512), (1, 2, 4, 8, 16, 32, 64, 128, 256), (1, 2, 4, 8), (2, 8),
                (8, 64), (0, 1)):
            if cols > max(1, pow2_at_least(-(-b_ // vec))) * 2 or cols > wg:
                continue
            if b_ > 64 and (cols < 32 or vec == 8):
                continue
            out.append(AxisConfig(wg=wg, lanes=0, cols=cols, vec=vec, items=items,
                                  groups_per_cu=g, onepass=op))
    else:
        for wg, cols, vec, items, g, op in itertools.product(
                (256,), (8, 16, 32, 64, 128, 256), (1, 2, 4) if not a.small else (4,),
                (1, 2, 4) if not a.small else (2,), (4, 16) if not a.small else (4,), (0, 1)):
            if cols > max(8, pow2_at_least(-(-b_ // vec))) * 2:
                continue
            out.append(AxisConfig(wg=wg, lanes=0, cols=cols, vec=vec, items=items,
                                  groups_per_cu=g, onepass=op))
    return out


launchers: dict = {}
def launcher(cfg):
    la = launchers.get(cfg)
    if la is None:
        la = launchers[cfg] = AxisLauncher(ctx, dev, info, sp, cfg)
    return la


def per_call(fn) -> float:
    fn(); q.finish()
    ts = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        q.finish()
        ts.append((time.perf_counter() - t0) / a.calls)
    return statistics.median(ts)


rows_out = []
rng = np.random.default_rng(0)
t_start = time.time()
for text in a.shapes.split(","):
    text, _, only = text.partition("@")  # 1048576x8@0: axis 0 only
    shape = tuple(int(v) for v in text.split("x"))
    h = rng.random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    for axis in ((int(only),) if only else (1, 0)):
        g = geometry(shape, True, axis, False)
        kind = "rows" if g.inner == 1 else "cols"
        ka, kb = (g.outer, g.r) if kind == "rows" else (g.r, g.inner)
        want = h.astype(np.float64).sum(axis=axis).ravel()
        out = cla.empty(q, want.size, np.float32)
        served = explain_axis(r, shape, axis)
        cfgs = grid(kind, ka, kb)
        builtin = builtin_axis_config(info, kind, ka, kb, sp.vector_element_bytes)
        for extra in (served.config, builtin):
            if extra not in cfgs:
                cfgs.append(extra)
        res = []
        for cfg in cfgs:
            try:
                la = launcher(cfg)
                if kind == "rows":
                    call = la.prepare_rows(q, 0, 0, g.outer, g.r)
                else:
                    call = la.prepare_cols(q, 0, 0, g.outer, g.r, g.inner)
                fn = lambda: call(x.base_data, out.base_data, None, None)
                fn(); q.finish()
                got = out.get()
                err = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))
                if err > 1e-4:
                    print(f"WRONG {text} axis {axis} {cfg.short()}: err {err:.1e}", flush=True)
                    continue
                p = la.plan(kind, *((g.outer, g.r, 1) if kind == "rows" else (g.outer, g.r, g.inner)))
                res.append({"config": cfg.short(), "cfg": cfg.to_dict() if hasattr(cfg, "to_dict") else
                            {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
                            "us": per_call(fn) * 1e6, "groups": p.groups, "split": p.split})
            except Exception as e:  # a config that does not build here
                print(f"FAIL {text} axis {axis} {cfg.short()}: {str(e)[:100]}", flush=True)
        e2e = per_call(lambda: r(x, axis=axis)) * 1e6
        row = {"shape": text, "axis": axis, "kind": kind, "served": served.config.short(),
               "served_level": served.level, "builtin": builtin.short(), "e2e_us": e2e,
               "configs": sorted(res, key=lambda d: d["us"])}
        if torch is not None:
            xt = torch.from_numpy(h).cuda(); xt.sum(dim=axis); torch.cuda.synchronize()
            ts = []
            for _ in range(a.repeats):
                s, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(a.calls):
                    xt.sum(dim=axis)
                e_.record(); e_.synchronize()
                ts.append(s.elapsed_time(e_) * 1e3 / a.calls)
            row["torch_us"] = statistics.median(ts)
            del xt
        rows_out.append(row)
        best = row["configs"][0] if row["configs"] else None
        by = {d["config"]: d["us"] for d in row["configs"]}
        tt = row.get("torch_us")
        print(f"{text:>12} ax{axis} {kind}: best {best['us']:7.1f} [{best['config']}] served "
              f"{by.get(served.config.short(), float('nan')):7.1f} [{served.config.short()}] builtin "
              f"{by.get(builtin.short(), float('nan')):7.1f} [{builtin.short()}] e2e {e2e:7.1f}"
              + (f" torch {tt:7.1f} torch/best {tt / best['us']:.2f} torch/e2e {tt / e2e:.2f}" if tt else "")
              + f"  ({len(res)} cfgs, {time.time() - t_start:.0f}s)", flush=True)
    del x
if a.json:
    with open(a.json, "w") as f:
        json.dump({"device": info.name, "rows": rows_out}, f, indent=1)
