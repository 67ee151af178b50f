# ruff: noqa  (one-off experiment, kept terse)
"""CPU statistics along axis 0 (columns): configs of the expression-axis kernel launched
directly and interleaved block by block in one process (the host is shared and noisy: a
round-robin of short blocks, medians over rounds), answers checked first.

    python scripts/experiments/cpu_cols_ab.py --device 1 --shapes 4x1048576,3x1000003 \
        --ops mean,norm2,var --configs "cols wg=8 lanes=1 items=2 strip=16;cols wg=8 lanes=1 items=1 strip=8"
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="1")
ap.add_argument("--shapes", default="4x1048576,3x1000003,16x262144,100000x64")
ap.add_argument("--ops", default="mean,norm2,var")
ap.add_argument("--configs", default="cols wg=8 lanes=1 items=2 strip=16;"
                "cols wg=8 lanes=1 items=1 strip=8;cols wg=8 lanes=1 items=1 strip=16")
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--calls", type=int, default=3)
a = ap.parse_args()
warnings.simplefilter("ignore")
from pyopencl.tools import VectorArg
from cltune.device.select import select
from cltune.core.shapes import geometry
from cltune.families.expr_axis.api import axis_reducer
from cltune.families.expr_axis.config import AxisExprConfig as C
from cltune.families.expr_axis.kernel import build
from cltune.families.expr_axis import launch as L
from cltune.stats.kernels import kernel

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
EXTRA = {"var": (0.0,), "mean": (), "norm2": (), "argmax": ()}
NP = {"var": np.var, "mean": np.mean, "argmax": np.argmax,
      "norm2": lambda h, axis: np.linalg.norm(h, axis=axis)}


def parse(text):
    f = text.split()
    kv = dict(x.split("=") for x in f[1:])
    return C(f[0], int(kv["wg"]), int(kv["lanes"]), int(kv["items"]), int(kv.get("strip", 1)))


cfgs = [parse(t) for t in a.configs.split(";")]
print(f"{info.name}; {a.rounds} rounds of {a.calls} calls a config, interleaved; ms a call")
for text in a.shapes.split(","):
    shape = tuple(int(v) for v in text.split("x"))
    h = np.random.default_rng(0).random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    g = geometry(shape, True, 0, False)
    for op in a.ops.split(","):
        knl = kernel(op, ctx, np.float32); spec = knl.spec; red = axis_reducer(ctx, dev, spec)
        res = cla.empty(q, g.outer * g.inner, spec.dtype_result)
        user = []
        for v, t in zip((x, *EXTRA[op]), spec.arguments):
            user += (v.base_data, v.offset) if isinstance(t, VectorArg) else [v]
        want = np.asarray(NP[op](h.astype(np.float64), axis=0)).ravel()
        fns = []
        for cfg in cfgs:
            b = build(ctx, dev, info, spec, cfg)
            p = L.device_plan(cfg, info, g.outer, g.r, g.inner)
            fn = lambda b=b, p=p: red.launch(q, b, p, user, g.outer, g.r, g.inner, res.base_data, 0)
            fn(); q.finish()
            assert np.allclose(res.get(), want, rtol=1e-5, atol=1e-6), cfg.short()
            fns.append(fn)
        ts = [[] for _ in cfgs]
        for _ in range(a.rounds):
            for i, fn in enumerate(fns):
                t0 = time.perf_counter()
                for _ in range(a.calls):
                    fn()
                q.finish()
                ts[i].append((time.perf_counter() - t0) / a.calls * 1e3)
        meds = [statistics.median(t) for t in ts]
        print(f"{text:>10} {op:>6}: " + " | ".join(f"{c.short()} {m:.3f}" for c, m in zip(cfgs, meds))
              + f" | ratio first/others " + ", ".join(f"{meds[0] / m:.2f}" for m in meds[1:]), flush=True)
