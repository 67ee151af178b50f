# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: a float32 ReductionKernel sum along rows of 2..16 elements, the exact-length
build (defaults.short_rows) with the rounding cascade (kernel.build_options without
-DCLT_BLOCK=0, as before 4f7c44a) and without it, interleaved blocks in one process (a block: 3
calls then one finish; the order alternates), medians of 5, ms a call; both answers checked
against float64 and their largest errors printed.

    DEV=1 python scripts/experiments/short_rows_cascade_ab.py
"""
import os, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.expr_axis.kernel as K
from cltune.device.select import select
warnings.simplefilter("ignore")
info, dev = select(os.environ.get("DEV", "1"))
orig = K.build_options
def with_cascade(cfg, i, short=0):
    return [o for o in orig(cfg, i, short) if o != "-DCLT_BLOCK=0"]
N = 8_000_000
for r in [2, 4, 5, 8, 16]:
    h = np.random.default_rng(1).standard_normal((N // r, r)).astype(np.float32)
    runs = []
    for v in ("cascade", "none"):
        ctx = cl.Context([dev]); q = cl.CommandQueue(ctx); x = cla.to_device(q, h)
        k = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]", "__global const float *x")
        K.build_options = with_cascade if v == "cascade" else orig
        got = k(x, axis=1).get(); K.build_options = orig
        assert np.allclose(got, h.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5), v
        err = np.abs(got - h.astype(np.float64).sum(1)).max()
        runs.append((v, q, lambda k=k, x=x: k(x, axis=1), err))
    ts = {v: [] for v, *_ in runs}
    for b in range(5):
        for v, q, f, _ in (runs if b % 2 == 0 else runs[::-1]):
            t = time.perf_counter(); [f() for _ in range(3)]; q.finish(); ts[v].append((time.perf_counter() - t) / 3 * 1e3)
    print(f"{N//r}x{r}: " + " | ".join(f"{v} {statistics.median(ts[v]):.2f} ms (max err {e:.2e})" for v, _, _, e in runs), flush=True)
