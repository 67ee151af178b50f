# ruff: noqa  (one-off experiment, kept terse)
"""#40 on GPUs: sums along axis 0 of tall-narrow blocks (>= 10^6 rows of a handful of columns)
through the CPUs' flat kernel `clt_ax_cols_narrow` (each outer block read as a flat array, a
work-item a contiguous piece of vec-row blocks, lane j of accumulator k holding column
(k * vec + j) % inner; then clt_ax_cols_fin over the pieces), forced on a GPU: built there
(monkeypatched `builds_narrow`/`narrows`), pieces as many as SPLITS, work-groups of LOCALS
(the kernel takes its piece from get_global_id). Beside the served call and torch; every
answer checked against numpy first. µs a call of back-to-back calls, median of REPEATS.

    python scripts/experiments/axis_narrow_gpu.py --device NVIDIA
    python scripts/experiments/axis_narrow_gpu.py --device 1 --shapes 20003x5 --splits 64 --locals 1
"""
import argparse, itertools, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--shapes", default="2000003x5,1000003x8,3000017x3,1500001x7,600011x13,4000037x2")
ap.add_argument("--splits", default="4096,16384,65536")
ap.add_argument("--locals", default="64,256")
ap.add_argument("--vecs", default="2,4")
ap.add_argument("--calls", type=int, default=20)
ap.add_argument("--repeats", type=int, default=7)
a = ap.parse_args()
warnings.simplefilter("ignore")
import cltune
import cltune.families.axis.kernel as K
import cltune.families.axis.launch as L
from cltune.core.ops import OpSpec
from cltune.device.select import select
from cltune.families.axis.config import AxisConfig

K.builds_narrow = lambda info, cfg: bool(cfg.stream) and cfg.vec >= 2
L.AxisLauncher.narrows = lambda self, r, inner: (bool(self.cfg.stream) and self.cfg.vec >= 2
                                                 and inner <= L.NARROW_COLS and r >= 2 * self.cfg.vec)
FORCE = {"split": 1, "local": 1}


def plan_narrow(cfg, cus, outer, r, inner, elem_bytes=0):
    nb = max(1, r // cfg.vec)
    split = max(1, min(FORCE["split"], nb))
    chunk = -(-nb // split)
    split = -(-nb // chunk)
    return L.AxisPlan(outer * split, split, chunk)


L.plan_narrow = plan_narrow
orig_prep = L.AxisLauncher._prepare_narrow


def prep(self, queue, xoff, yoff, outer, r, inner):
    p = orig_prep(self, queue, xoff, yoff, outer, r, inner)
    loc = FORCE["local"]
    p.gsize, p.lsize = (-(-p.gsize[0] // loc) * loc,), (loc,)
    return p


L.AxisLauncher._prepare_narrow = prep
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


def per_call(fn, fin=q.finish):
    fn(); fin()
    ts = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        fin()
        ts.append((time.perf_counter() - t0) / a.calls)
    return statistics.median(ts) * 1e6


print(f"# {info.name}; float32 sums along axis 0; us a call, median of {a.repeats} x {a.calls}",
      flush=True)
rng = np.random.default_rng(0)
las = {}
for text in a.shapes.split(","):
    shape = tuple(int(v) for v in text.split("x"))
    h = rng.random(shape, dtype=np.float32)
    x = cla.to_device(q, h)
    want = h.astype(np.float64).sum(axis=0)
    out = cla.empty(q, shape[1], np.float32)
    res = []
    for vec, split, loc in itertools.product(*(map(int, s.split(",")) for s in (a.vecs, a.splits, a.locals))):
        cfg = AxisConfig(wg=min(256, loc), lanes=0, cols=1, vec=vec, items=2, groups_per_cu=8, stream=1)
        la = las.get(cfg) or las.setdefault(cfg, L.AxisLauncher(ctx, dev, info, sp, cfg))
        FORCE.update(split=split, local=loc)
        la._plans.clear()
        try:
            call = la.prepare_cols(q, 0, 0, 1, shape[0], shape[1])
            fn = lambda: call(x.base_data, out.base_data, None, None)
            fn(); q.finish()
            err = float(np.max(np.abs(out.get() - want) / np.maximum(1, np.abs(want))))
            if err > 1e-4:
                print(f"WRONG {text} v{vec} split {split} local {loc}: {err:.1e}", flush=True)
                continue
            res.append((per_call(fn), f"v{vec} split {split} local {loc}"))
        except Exception as e:
            print(f"FAIL {text} v{vec} split {split} local {loc}: {str(e)[:120]}", flush=True)
    e2e = per_call(lambda: r(x, axis=0))
    tt = None
    if torch is not None:
        xt = torch.from_numpy(h).cuda()
        tt = per_call(lambda: xt.sum(dim=0), torch.cuda.synchronize)
        del xt
    res.sort()
    print(f"{text:>12}: served {e2e:7.1f}" + (f" torch {tt:7.1f}" if tt else "")
          + " | " + " | ".join(f"{u:7.1f} {c}" for u, c in res[:6]), flush=True)
