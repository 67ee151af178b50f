# ruff: noqa  (one-off experiment, kept terse)
"""Strided-axis reductions on a CPU device: the stream plan's least piece size
(cltune.families.axis.launch.MIN_PIECE_BYTES) and groups per compute unit side by side, end to
end (`r(x, axis=0).get()` on a device array), numpy beside; one process, interleaved blocks.
Usage (a variant `g=G,min=BYTES`; g=0: the builtin config's):
    python scripts/experiments/axis_small.py DEVICE SHAPE[,SHAPE...] [VARIANT;VARIANT...]"""
from dataclasses import replace
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
import cltune.families.axis.launch as L
from cltune.device.select import select

info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
variants = (sys.argv[3] if len(sys.argv) > 3 else "g=0,min=0;g=0,min=65536").split(";")
r = cltune.get_reducer(q, "sum", np.float32)
print(f"{info.name[:30]}: us per call (median of 10 blocks, order rotated), numpy/this")
for s in sys.argv[2].split(","):
    shape = tuple(int(v) for v in s.split("x"))
    h = np.random.default_rng(1).random(shape, dtype=np.float32); x = cla.to_device(q, h)
    want = h.astype(np.float64).sum(axis=0)
    cfg = r.explain(shape, 0).config
    las = {}
    for v in variants:  # one launcher per variant (its plans are cached per launcher)
        kw = dict(p.split("=") for p in v.split(","))
        L.MIN_PIECE_BYTES = int(kw["min"]) or 1  # 0: no least piece
        c = replace(cfg, groups_per_cu=int(kw["g"])) if int(kw["g"]) else cfg
        la = L.AxisLauncher(ctx, dev, info, r.spec, c)
        las[v if v not in las else v + " (again)"] = (la, la.plan("cols", 1, shape[0],
                                                                 int(np.prod(shape[1:]))))
    out = cla.empty(q, want.shape, np.float32)
    def run(la):
        la.cols(q, x.base_data, 0, 1, shape[0], int(np.prod(shape[1:])), out.base_data)
        return out.get()
    for v, (la, _) in las.items():
        got = run(la)
        assert np.allclose(got, want, rtol=1e-5), v
    nrep = max(3, min(300, int(2e7 / h.nbytes)))
    names = [*las, "numpy"]
    ts = {k: [] for k in names}
    for i in range(10):  # each contender in every position of the order equally often
        for k in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            for _ in range(nrep):
                h.sum(axis=0) if k == "numpy" else run(las[k][0])
            ts[k].append((time.perf_counter() - t0) / nrep * 1e6)
    md = {k: statistics.median(v) for k, v in ts.items()}
    row = "  ".join(f"[{k}] {md[k]:7.1f} (split {las[k][1].split}) {md['numpy'] / md[k]:4.2f}x"
                    for k in las)
    print(f"{s:>11s} {cfg.short():28s} numpy {md['numpy']:7.1f}  {row}")
