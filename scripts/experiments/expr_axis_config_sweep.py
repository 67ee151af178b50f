# ruff: noqa  (one-off experiment, kept terse)
"""cltune statistics (OP: mean, var, norm, argmax) along axis AX of SHAPE float32 with expr_axis configs
forced one after another (CFGS: a Python list of AxisExprConfig field tuples), beside numpy and the
axis family's sum; ms a call, best of 5; relative error against float64 (#40). Usage:
    DEV=1 OP=mean AX=0 SHAPE=4096x4096 CFGS='[("cols",1,1,8,1024)]' python scripts/experiments/expr_axis_config_sweep.py"""
import os, sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
import cltune.families.expr_axis.api as api
import cltune.families.expr_axis.defaults as d
from cltune.families.expr_axis.config import AxisExprConfig
dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
shape = tuple(int(s) for s in os.environ.get("SHAPE", "4096x4096").split("x"))
AX = int(os.environ.get("AX", "0")); op = os.environ.get("OP", "mean")
h = np.random.default_rng(0).random(shape, dtype=np.float32)
x = cla.to_device(q, h)
f = getattr(cltune, op)
def t(fn, reps=5):
    fn(); q.finish(); ts = []
    for _ in range(reps):
        s = time.perf_counter(); fn(); q.finish(); ts.append(time.perf_counter() - s)
    return min(ts) * 1e3
ref = np.sqrt((h.astype(np.float64)**2).sum(axis=AX)) if op == "norm" else getattr(np, op)(h.astype(np.float64), axis=AX)
print("numpy", round(t(lambda: np.linalg.norm(h, axis=AX) if op == "norm" else getattr(np, op)(h, axis=AX)), 2), "sum-axis", round(t(lambda: cltune.get_reducer(q, "sum", np.float32)(x, axis=AX)), 2))
orig_choose = api.choose
cfgs = [None] + [AxisExprConfig(*c) for c in eval(os.environ.get("CFGS", "[]"))]
for cfg in cfgs:
    api.choose = orig_choose if cfg is None else (lambda *a, c=cfg: c)
    orig_hb = d.heuristic_build
    cltune.clear_caches()
    if cfg is not None:
        api.heuristic_build = lambda ctx, dev, info, spec, *s, c=cfg: d.build(ctx, dev, info, spec, c)
    else:
        api.heuristic_build = orig_hb
    try:
        ms = t(lambda: f(x, axis=AX))
        got = f(x, axis=AX).get()
        err = float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))
        print(cfg.short() if cfg else "builtin", round(ms, 2), "relerr %.1e" % err, flush=True)
    except Exception as e:
        print(cfg, "ERR", str(e)[:200])
