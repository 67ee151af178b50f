# ruff: noqa  (one-off experiment, kept terse)
"""A/B in one process: a 4096x4096 float32 ReductionKernel sum along each axis with kernels/expr_axis.cl
as of commit 7004ad9 (one accumulator chain per item) against the working tree (the cascade). Usage:
    git show 7004ad9:kernels/expr_axis.cl > /tmp/old_expr_axis.cl
    python scripts/experiments/expr_axis_cascade_ab.py DEVICE /tmp/old_expr_axis.cl kernels/expr_axis.cl [blocks] [calls]
"""
import sys, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.expr_axis.kernel as K
from cltune.families.expr_axis.api import axis_reducer
from cltune.device.select import select
warnings.simplefilter("ignore")
info, dev = select(sys.argv[1])
srcs = {"A": open(sys.argv[2]).read(), "B": open(sys.argv[3]).read()}
blocks = int(sys.argv[4]) if len(sys.argv) > 4 else 7
calls = int(sys.argv[5]) if len(sys.argv) > 5 else 5
h = np.random.default_rng(0).random((4096, 4096)).astype(np.float32)
ref = {1: h.astype(np.float64).sum(axis=1), 0: h.astype(np.float64).sum(axis=0)}
knl = cltune.ReductionKernel(cl.Context([dev]), np.float32, "0", "a+b", "x[i]", "__global const float *x")
setups = {}
for k, src in srcs.items():
    K.axis_template = lambda src=src: src
    ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
    x = cla.to_device(q, h)
    red = axis_reducer(ctx, dev, knl.spec)
    for axis, view in ((1, (4096, 4096, 1)), (0, (1, 4096, 4096))):
        out = cla.empty(q, 4096, np.float32)
        red.enqueue(q, [x.base_data, 0], *view, out.base_data, 0); q.finish()
        err = np.max(np.abs(out.get() - ref[axis]) / ref[axis])
        print(k, "axis", axis, red.config(*view).short(), f"max rel err {err:.3g}")
        setups[(k, axis)] = (q, red, x, view, out)
res = {key: [] for key in setups}
for b in range(blocks):
    for axis in (1, 0):
        for k in (("A", "B") if b % 2 == 0 else ("B", "A")):
            q, red, x, view, out = setups[(k, axis)]
            t = time.perf_counter()
            for _ in range(calls):
                red.enqueue(q, [x.base_data, 0], *view, out.base_data, 0)
            q.finish()
            res[(k, axis)].append((time.perf_counter() - t) / calls * 1e3)
for axis in (1, 0):
    a, b = np.median(res[("A", axis)]), np.median(res[("B", axis)])
    print(f"axis {axis}: A {a:.2f} ms  B {b:.2f} ms  B/A {b/a:.3f}   (A blocks {np.round(res[('A',axis)],2).tolist()} B {np.round(res[('B',axis)],2).tolist()})")
