# ruff: noqa  (one-off experiment, kept terse)
"""A ReductionKernel sum (DT float32 or float64) along axis 0 of SHAPE with expr_axis configs forced
(CFGS) beside numpy and the served call: ms a call, best of 5, relative error against float64 (#40
streamed strips with the rounding cascade). Usage:
    DEV=1 DT=float32 CFGS='[("cols",1,1,8,1024)]' python scripts/experiments/expr_axis_stream_sum.py"""
import os, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
from cltune.families.expr_axis.api import AxisReducer
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.kernel import build, restarts
from cltune.families.expr_axis.launch import axis_plan
dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
from cltune.device.select import info_for
info = info_for(dev)
R, C = [int(v) for v in os.environ.get("SHAPE", "4096x4096").split("x")]
dt = np.dtype(os.environ.get("DT", "float32"))
h = np.random.default_rng(0).random((R, C)).astype(dt)
x = cla.to_device(q, h)
ct = "float" if dt == np.float32 else "double"
knl = cltune.ReductionKernel(ctx, dt, "0", "a+b", "x[i]", f"__global const {ct} *x")
print("restarts", restarts(knl.spec))
red = AxisReducer(ctx, dev, knl.spec)
def t(fn, reps=5):
    fn(); q.finish(); ts = []
    for _ in range(reps):
        s = time.perf_counter(); fn(); q.finish(); ts.append(time.perf_counter() - s)
    return min(ts) * 1e3
ref = h.astype(np.float64).sum(axis=0)
print("numpy", round(t(lambda: h.sum(axis=0)), 2), "err", np.abs(h.sum(axis=0) - ref).max() / np.abs(ref).max())
print("served", round(t(lambda: knl(x, axis=0)), 2), "err", np.abs(knl(x, axis=0).get() - ref).max() / np.abs(ref).max())
for c in eval(os.environ.get("CFGS", "[]")):
    cfg = AxisExprConfig(*c)
    b = build(ctx, dev, info, knl.spec, cfg)
    p = axis_plan(cfg, info.compute_units, 1, R, C, 1 << 17)
    res = cla.empty(q, C, dt)
    f = lambda: red.launch(q, b, p, [x.base_data, 0], 1, R, C, res.base_data, 0)
    ms = t(f)
    print(cfg.short(), p, round(ms, 2), "err", np.abs(res.get() - ref).max() / np.abs(ref).max())
