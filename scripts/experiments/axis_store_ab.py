# ruff: noqa  (one-off experiment, kept terse)
"""A/B of the CPU stream kernel's result store (kernels/axis.cl, clt_ax_cols_stream): a float
result vector converted and stored at once (`vector`) against element by element (`scalar`,
the store before 2026-12-03), same config and plan, one process, both builds side by side;
device time (profiling queue) of the kernel, medians of 9 rounds of 10 calls, the order
alternating each round. Usage:
    python scripts/experiments/axis_store_ab.py DEVICE SHAPE[,SHAPE...]   (axis 0 of 2-D)"""
import sys, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune
import cltune.families.axis.kernel as K
from cltune.device.select import select
from cltune.families.axis.launch import AxisLauncher

GUARD = "#if CLT_IS_FLOAT && !CLT_IS_HALF && CLT_VEC > 1\n        if (split == 1) {"
info, dev = select(sys.argv[1]); ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
r = cltune.get_reducer(q, "sum", np.float32)
src = K.axis_source()
assert GUARD in src
variants = {"vector": src, "scalar": src.replace(GUARD, "#if 0\n        if (split == 1) {")}
print(f"{info.name[:30]}: device us of the stream kernel, axis 0")
for s in sys.argv[2].split(","):
    shape = tuple(int(v) for v in s.split("x"))
    h = np.random.default_rng(1).random(shape, dtype=np.float32); x = cla.to_device(q, h)
    cfg = r.explain(shape, 0).config
    out = cla.empty(q, shape[1], np.float32)
    want = h.astype(np.float64).sum(0)
    las = {}
    for name, text in variants.items():
        K.axis_source = lambda text=text: text
        la = AxisLauncher(ctx, dev, info, r.spec, cfg)
        la.cols(q, x.base_data, 0, 1, shape[0], shape[1], out.base_data); q.finish()
        assert np.allclose(out.get(), want, rtol=1e-5), name
        las[name] = la
    K.axis_source = lambda: src
    ts = {k: [] for k in las}
    for i in range(9):
        for k in (list(las) if i % 2 == 0 else list(las)[::-1]):
            evs = [las[k].cols(q, x.base_data, 0, 1, shape[0], shape[1], out.base_data)[0]
                   for _ in range(10)]
            q.finish()
            ts[k].append(statistics.median((e.profile.end - e.profile.start) / 1e3 for e in evs))
    md = {k: statistics.median(v) for k, v in ts.items()}
    split = las["vector"].plan("cols", 1, shape[0], shape[1]).split
    print(f"{s:>11s} {cfg.short():34s} split {split:2d}  vector {md['vector']:8.1f}  "
          f"scalar {md['scalar']:8.1f}  scalar/vector {md['scalar'] / md['vector']:4.2f}")
