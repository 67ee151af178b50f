# ruff: noqa  (one-off experiment, kept terse)
"""Statistics along rows (OPS of mean, var, norm2, argmax) on CPU shapes: the builtin config and three
alternatives built once, timed interleaved in 3 rounds through AxisReducer.launch (no allocation),
ms a call (#40, the CPU rows rule). Usage: DEV=1 python scripts/experiments/expr_axis_rows_ab.py"""
import os, time, sys
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select, info_for
from cltune.families.expr_axis.api import AxisReducer
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import choose
from cltune.families.expr_axis.kernel import build, streams
from cltune.families.expr_axis.launch import device_plan
from cltune.stats import api as stats
dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx); info = info_for(dev)
shapes = [(65536, 256), (16384, 1024), (4096, 4096), (100, 1000), (1000, 100), (2000, 3001), (1 << 20, 64)]
ops = os.environ.get("OPS", "mean,var,norm2,argmax").split(",")
alts = [AxisExprConfig("rows", 1, 1, 8), AxisExprConfig("rows", 8, 1, 8), AxisExprConfig("rows", 1, 1, 4)]
def t(fn, reps):
    fn(); q.finish(); best = 1e9
    for _ in range(reps):
        s = time.perf_counter(); fn(); q.finish(); best = min(best, time.perf_counter() - s)
    return best * 1e3
for op in ops:
    knl = stats.kernel(op, ctx, np.float32); red = AxisReducer(ctx, dev, knl.spec)
    for sh in shapes:
        outer, r = sh
        h = np.random.default_rng(0).random(sh, dtype=np.float32); x = cla.to_device(q, h)
        res = cla.empty(q, outer, knl.spec.dtype_result)
        extra = [0.0] if op == "var" else []
        base = choose(info, outer, r, 1, knl.spec.dtype_out.itemsize, *streams(knl.spec))
        cfgs = [base] + [c for c in alts if c != base]
        calls = []
        for c in cfgs:
            b = build(ctx, dev, info, knl.spec, c); p = device_plan(c, info, outer, r, 1)
            calls.append(lambda b=b, p=p: red.launch(q, b, p, [x.base_data, 0, *extra], outer, r, 1, res.base_data, 0))
        reps = 3 if outer * r > 1 << 20 else 30
        best = [1e9] * len(cfgs)
        for _ in range(3):
            for i, f in enumerate(calls):
                best[i] = min(best[i], t(f, reps))
        print(op, "%dx%d" % sh, " ".join("%s=%.3f" % (c.short().replace(" lanes=1", "").replace("rows ", ""), v) for c, v in zip(cfgs, best)), flush=True)
