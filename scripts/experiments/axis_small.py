# ruff: noqa  (one-off experiment, kept terse)
"""Strided-axis sums (float32, axis 0 of 2-D C arrays) on a CPU device, end to end
(`launch + .get()` of the result, the input on the device) with the builtin config: the
current plan (`new`) beside the one before 2026-12-03 (`old`: strips split up to
groups_per_cu x CUs work-items, rounded up, pieces of any size; the finishing kernel 32
outputs a group), numpy beside; one process, interleaved blocks, the order rotated each
block. Usage:
    python scripts/experiments/axis_small.py DEVICE SHAPE[,SHAPE...]"""
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.axis.launch as L
from cltune.device.select import select

info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
r = cltune.get_reducer(q, "sum", np.float32)
new_plan, new_fin = L.plan_stream, L.FIN_COLS_CPU


def old_plan(cfg, cus, outer, r_, inner, elem_bytes=0):
    ctiles = -(-inner // (cfg.cols * cfg.vec))
    base = outer * ctiles
    target = cfg.groups_per_cu * max(1, cus)
    split = max(1, min(-(-target // base), -(-r_ // 4), L.MAX_SPLIT))
    chunk = -(-r_ // split)
    return L.AxisPlan(base * split, -(-r_ // chunk), chunk, ctiles)


print(f"{info.name[:30]}: us per call (median of 10 blocks, order rotated), numpy/this")
for s in sys.argv[2].split(","):
    shape = tuple(int(v) for v in s.split("x"))
    h = np.random.default_rng(1).random(shape, dtype=np.float32); x = cla.to_device(q, h)
    want = h.astype(np.float64).sum(axis=0)
    cfg = r.explain(shape, 0).config
    las = {}
    pairs = (("old", old_plan, 32), ("new", new_plan, new_fin))
    for name, plan, fin in (pairs[::-1] if "--new-first" in sys.argv else pairs):
        L.plan_stream = plan
        la = L.AxisLauncher(ctx, dev, info, r.spec, cfg)
        las[name] = (la, la.plan("cols", 1, shape[0], shape[1]), fin)
    L.plan_stream = new_plan
    out = cla.empty(q, want.shape, np.float32)

    def run(name):
        la, _, fin = las[name]
        L.FIN_COLS_CPU = fin
        la.cols(q, x.base_data, 0, 1, shape[0], shape[1], out.base_data)
        return out.get()

    for name in las:
        assert np.allclose(run(name), want, rtol=1e-5), name
    nrep = max(3, min(300, int(2e7 / h.nbytes)))
    names = [*las, "numpy"]
    ts = {k: [] for k in names}
    for i in range(10):
        for k in names[i % 3:] + names[:i % 3]:
            t0 = time.perf_counter()
            for _ in range(nrep):
                h.sum(axis=0) if k == "numpy" else run(k)
            ts[k].append((time.perf_counter() - t0) / nrep * 1e6)
    md = {k: statistics.median(v) for k, v in ts.items()}
    print(f"{s:>11s} {cfg.short():34s} numpy {md['numpy']:8.1f} | "
          + " | ".join(f"{k} {md[k]:8.1f} (split {las[k][1].split:2d}) {md['numpy'] / md[k]:4.2f}x"
                       for k in las) + f" | old/new {md['old'] / md['new']:4.2f}")
L.FIN_COLS_CPU = new_fin
