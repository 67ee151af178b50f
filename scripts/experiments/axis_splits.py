# ruff: noqa  (one-off experiment, kept terse)
"""Device time of each kernel of an axis sum (float32, 2-D C arrays; axis 0: the strided
layout, 1: the rows layout) on a device, with the plan the builtin config gets (split =
pieces per column strip or row): the first kernel and, where split > 1, the finishing kernel.
Profiling queue, median of 32 calls after 8. Usage:
    python scripts/experiments/axis_splits.py DEVICE SHAPE[,SHAPE...] [AXIS]"""
import sys, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla, cltune
from cltune.device.select import select
from cltune.families.axis.launch import AxisLauncher

info, dev = select(sys.argv[1]); ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
r = cltune.get_reducer(q, "sum", np.float32)
axis = int(sys.argv[3]) if len(sys.argv) > 3 else 0
print(f"{info.name[:30]}: axis {axis}, device us per kernel (first, finish)")
for s in sys.argv[2].split(","):
    shape = tuple(int(v) for v in s.split("x"))
    h = np.random.default_rng(1).random(shape, dtype=np.float32); x = cla.to_device(q, h)
    cfg = r.explain(shape, axis).config
    out = cla.empty(q, shape[1 - axis], np.float32)
    call = ((lambda: la.cols(q, x.base_data, 0, 1, shape[0], shape[1], out.base_data))
            if axis == 0 else (lambda: la.rows(q, x.base_data, 0, shape[0], shape[1],
                                               out.base_data)))
    layout, dims = ("cols", (1, shape[0], shape[1])) if axis == 0 else ("rows", (*shape, 1))
    la = AxisLauncher(ctx, dev, info, r.spec, cfg)
    ts = []
    for i in range(40):
        evs = call(); q.finish()
        if i >= 8:
            ts.append([(e.profile.end - e.profile.start) / 1e3 for e in evs]
                      + [(evs[-1].profile.end - evs[0].profile.start) / 1e3])
    assert np.allclose(out.get(), h.astype(np.float64).sum(axis), rtol=1e-5)
    med = [round(statistics.median(c), 1) for c in zip(*ts)]
    print(f"{s:>11s} {cfg.short():34s} split {la.plan(layout, *dims).split:3d} "
          f"kernels {med[:-1]} first start to last end {med[-1]}")
