# ruff: noqa  (one-off experiment, kept terse)
"""A/B of the binary counter's loops in kernels/expr_axis.cl (CLT_AX_ROLLED, 2026-12-05):
`rolled` (what CPU drivers get: a push and an output's value as loops) against `unrolled`
(what GPUs get, and CPUs got before), the builtin config of each call, one process, each
variant in a context of its own (build caches are per context), PYOPENCL_NO_CACHE=1 and a
fresh POCL_CACHE_DIR so first calls compile. Per (function, dtype, shape, axis): the first
call's seconds (build + the driver's first launch), the median of 5 warm calls in ms for
two rounds (rolled, unrolled, rolled, unrolled), their ratio, and whether both variants gave
the same bits. Usage:
    PYOPENCL_NO_CACHE=1 POCL_CACHE_DIR=$(mktemp -d) \
        python scripts/experiments/expr_axis_rolled_ab.py DEVICE [FUNCS] [SHAPES]
    e.g. ... 1 var,mean,argmax,norm 4000x4096,100003x64"""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune
import cltune.families.expr_axis.kernel as K
from cltune.device.select import select

real = K.build_options
mode = {"v": "rolled"}
K.build_options = lambda cfg, info: [o for o in real(cfg, info)
                                     if mode["v"] == "rolled" or "ROLLED" not in o]
info, dev = select(sys.argv[1])
funcs = (sys.argv[2] if len(sys.argv) > 2 else "var,mean,argmax,norm").split(",")
shapes = [tuple(int(v) for v in s.split("x"))
          for s in (sys.argv[3] if len(sys.argv) > 3 else "4000x4096,100003x64").split(",")]
res = {}
for v in ("rolled", "unrolled", "rolled2", "unrolled2"):
    mode["v"] = v.rstrip("2")
    ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
    for dt in (np.float32, np.float64):
        for shp in shapes:
            X = cla.to_device(q, np.random.default_rng(0).standard_normal(shp).astype(dt))
            for f in funcs:
                fn = getattr(cltune, f)
                for ax in (0, 1):
                    t = time.perf_counter(); got = fn(X, axis=ax).get()
                    first = time.perf_counter() - t
                    ts = []
                    for _ in range(5):
                        t = time.perf_counter(); fn(X, axis=ax); q.finish()
                        ts.append(time.perf_counter() - t)
                    res.setdefault((f, np.dtype(dt).name, shp, ax), {})[v] = (
                        first, float(np.median(ts)), got)
print(f"{info.name[:40]}: first call s (rolled vs unrolled) | warm ms rolled r1/r2 vs unrolled r1/r2")
ratios = []
for k, d in res.items():
    r, u, r2, u2 = d["rolled"], d["unrolled"], d["rolled2"], d["unrolled2"]
    ratio = (r[1] + r2[1]) / (u[1] + u2[1]); ratios.append(ratio)
    same = np.array_equal(r[2], u[2], equal_nan=True)
    print(f"{k[0]:7s} {k[1]:8s} {'x'.join(map(str, k[2])):11s} ax{k[3]}: first {r[0]:6.2f} vs "
          f"{u[0]:6.2f} | {r[1]*1e3:7.2f}/{r2[1]*1e3:7.2f} vs {u[1]*1e3:7.2f}/{u2[1]*1e3:7.2f}"
          f" ratio {ratio:.2f} same bits {same}", flush=True)
print(f"warm ratio rolled/unrolled: geometric mean {np.exp(np.mean(np.log(ratios))):.2f}, "
      f"median {np.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")
