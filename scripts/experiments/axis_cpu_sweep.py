# ruff: noqa  (one-off experiment, kept terse)
"""Axis configs on a CPU device against numpy, one shape at a time, interleaved blocks in one
process: the builtin config (cltune.families.axis.defaults) beside alternatives given as
AxisConfig keyword sets. Times the launch + finish (no allocation, no read back). Usage:
    python scripts/experiments/axis_cpu_sweep.py DEVICE ROWSxCOLS[xDEPTH] AXIS ['wg=1,cols=8,vec=16,items=4,groups_per_cu=8,stream=1' ...]"""
import sys, time, statistics, numpy as np, pyopencl as cl, pyopencl.array as cla
from cltune.device.select import select
from cltune.core.ops import OpSpec
from cltune.core.shapes import geometry
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import builtin_axis_config
from cltune.families.axis.launch import AxisLauncher

info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
shape = tuple(int(v) for v in sys.argv[2].split("x")); axis = int(sys.argv[3])
sp = OpSpec("sum", "float32")
h = np.random.default_rng(1).random(shape, dtype=np.float32)
x = cla.to_device(q, h)
g = geometry(shape, True, axis, False)
kind = "rows" if g.inner == 1 else "cols"
a, b = (g.outer, g.r) if kind == "rows" else (g.r, g.inner)
out = cla.empty(q, g.outer * g.inner, np.float64 if False else np.float32)
cfgs = {"builtin": builtin_axis_config(info, kind, a, b, sp.vector_element_bytes)}
for s in sys.argv[4:]:
    kw = {k: int(v) for k, v in (p.split("=") for p in s.split(","))}
    if kw.get("cols"):
        kw.setdefault("lanes", 0); kw["wg"] = max(kw.get("wg", 1), kw["cols"])
    cfgs[s] = AxisConfig(**kw)
want = h.astype(np.float64).sum(axis=axis).ravel()
def call(la):
    if kind == "rows":
        return la.rows(q, x.base_data, 0, g.outer, g.r, out.base_data)
    return la.cols(q, x.base_data, 0, g.outer, g.r, g.inner, out.base_data)
las = {}
for k, c in cfgs.items():
    la = AxisLauncher(ctx, dev, info, sp, c); call(la); q.finish()
    err = np.max(np.abs(out.get() - want) / np.maximum(1, np.abs(want)))
    p = la.plan(kind, *( (g.outer, g.r, 1) if kind == "rows" else (g.outer, g.r, g.inner)))
    print(f"{k:50s} {c.short():36s} groups {p.groups} split {p.split} err {err:.1e}")
    las[k] = la
nrep = max(1, int(3e8 / max(h.nbytes, 1) / len(cfgs)))
import cltune
r1 = cltune.get_reducer(q, "sum", np.float32); r1(x).get()
ts = {k: [] for k in [*las, "numpy", "1-D r(x)"]}
for _ in range(9):
    for k in ts:
        t0 = time.perf_counter()
        for _ in range(nrep):
            if k == "numpy": h.sum(axis=axis)
            elif k == "1-D r(x)": r1(x); q.finish()
            else: call(las[k]); q.finish()
        ts[k].append((time.perf_counter() - t0) / nrep * 1e6)
md = {k: statistics.median(v) for k, v in ts.items()}
print(f"{info.name[:24]} {sys.argv[2]} axis {axis} ({kind} {a}x{b}), {nrep} calls a block")
for k, v in md.items():
    print(f"  {k:50s} {v:9.1f} us  numpy/this {md['numpy'] / v:5.2f}x")
