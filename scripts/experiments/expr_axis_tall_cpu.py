# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: statistics along axis 0 of tall-narrow blocks (few outputs of long columns).
For each shape and statistic, the served call and expr_axis configs forced by monkeypatching
`choose` (CFGS: field tuples of AxisExprConfig), interleaved blocks in one process (a block:
CALLS calls then one finish), medians of REPEATS, ms a call, beside numpy and the axis family's
1-D sum `r(x)` of the same array; every answer checked against numpy in float64 first.

    DEV=1 python scripts/experiments/expr_axis_tall_cpu.py
    DEV=0 SHAPES=2000003x4,1000003x7 OPS=mean,var python scripts/experiments/expr_axis_tall_cpu.py
    FULL=1 AX=1 SHAPES=4x2000003 CFGS='[("rows",1,1,8),("rows",1,1,4)]' python scripts/experiments/expr_axis_tall_cpu.py
    (FULL: CFGS are whole AxisExprConfig field tuples)
"""
import os, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.expr_axis.api as api
import cltune.families.expr_axis.defaults as d
from cltune.device.select import select
from cltune.families.expr_axis.config import AxisExprConfig

warnings.simplefilter("ignore")
dev = select(os.environ.get("DEV", "1"))[1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 5))
SHAPES = [tuple(int(v) for v in s.split("x")) for s in
          os.environ.get("SHAPES", "2000003x4,1000003x7,1048576x16,500009x40,64x100000x5").split(",")]
OPS = os.environ.get("OPS", "mean,var,argmax,norm").split(",")
#: (items, groups_per_cu): wg and strip from the shape (strip: min(16, pow2 <= inner); wg: the
#: strips of all outputs, at most 8, a power of two)
CFGS = eval(os.environ.get("CFGS", "[(1,8),(2,8),(4,8),(1,32),(2,32),(4,32)]"))
AX = int(os.environ.get("AX", "0"))
F = {"mean": (cltune.mean, np.mean), "var": (cltune.var, np.var),
     "argmax": (cltune.argmax, np.argmax),
     "norm": (cltune.norm, lambda h, axis: np.sqrt((h * h).sum(axis=axis))),
     # an application's float32 sum (a ReductionKernel per context)
     "sum": (lambda x, axis: _rk(x.context)(x, axis=axis), lambda h, axis: h.sum(axis=axis))}
_rks = {}


def _rk(ctx):
    if ctx.int_ptr not in _rks:
        _rks[ctx.int_ptr] = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]",
                                                   "__global const float *x")
    return _rks[ctx.int_ptr]
r = cltune.get_reducer(q, "sum", np.float32)
orig_choose, orig_hb = api.choose, api.heuristic_build


def use(cfg):
    if cfg is None:
        api.choose, api.heuristic_build = orig_choose, orig_hb
    else:
        api.choose = lambda *a, c=cfg, **k: c
        api.heuristic_build = lambda ctx, dev, info, spec, *s, c=cfg: d.build(ctx, dev, info, spec, c)


def block(f, fin):
    t = time.perf_counter()
    for _ in range(CALLS):
        f()
    fin()
    return (time.perf_counter() - t) / CALLS * 1e3


print(f"# {dev.name} ({dev.platform.version.split()[0:3]}); float32 along axis {AX}; ms a call, "
      f"median of {REPEATS} blocks of {CALLS}; configs: layout wg lanes items strip g/cu")
rng = np.random.default_rng(3)
variants = [None] + CFGS
# a context per variant: its reducers keep the config they were first served with
ctxs = [cl.Context([dev]) for _ in variants]
qs = [cl.CommandQueue(c) for c in ctxs]
for shape in SHAPES:
    h = rng.random(shape, dtype=np.float32)
    xs = [cla.to_device(qq, h) for qq in qs]
    flat = cla.to_device(q, h).reshape(-1)
    r(flat); q.finish()
    inner = int(np.prod(shape[AX + 1:])); outer = int(np.prod(shape[:AX]))
    strip = min(16, 1 << (inner.bit_length() - 1))
    wg = min(8, 1 << ((outer * -(-inner // strip)).bit_length() - 1))
    cfgs = [None] + ([AxisExprConfig(*t) for t in CFGS] if os.environ.get("FULL") else
                     [AxisExprConfig("cols", wg, 1, it, strip, g) for it, g in CFGS])
    for op in OPS:
        cf, nf = F[op]
        want = nf(h.astype(np.float64), axis=AX)
        for c, x in zip(cfgs, xs):
            use(c)
            got = cf(x, axis=AX).get().astype(np.float64)
            assert np.allclose(got, want, rtol=1e-4, atol=1e-4), (shape, op, c)
        use(None)
        labels = ["served"] + [c.short() for c in cfgs[1:]]
        t = {i: [] for i in range(len(variants))}
        tn, ts = [], []
        for rep in range(REPEATS):
            for i, (x, qq) in enumerate(zip(xs, qs)):
                t[i].append(block(lambda: cf(x, axis=AX), qq.finish))
            tn.append(block(lambda: nf(h, axis=AX), lambda: None))
            ts.append(block(lambda: r(flat), q.finish))
        n, s_ = statistics.median(tn), statistics.median(ts)
        row = " | ".join(f"{labels[i]} {statistics.median(t[i]):.2f}" for i in t)
        print(f"{'x'.join(map(str, shape))} {op}: numpy {n:.2f} 1-D sum {s_:.2f} | {row}", flush=True)
