# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: float32 prefix sums along axis 0 (strided columns) with ScanConfig("cols", wg,
items columns a work-item, groups_per_cu) variants (CFGS) launched directly with the served
launcher's min_chunk, interleaved blocks in one process, beside numpy; every answer checked
against numpy in float64 first. ms a call, medians of REPEATS blocks of CALLS.

    DEV=1 python scripts/experiments/scan_cols_cpu.py
"""
import os, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher, serving_min_chunk
warnings.simplefilter("ignore")
info, dev = select(os.environ.get("DEV", "1"))
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 5))
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get("SHAPES", "33x100003,64x131072,1000x4000,4096x4096,300x300,17x20011").split(",")]
CFGS = eval(os.environ.get("CFGS", "[(1,16,4),(1,64,4),(1,256,4),(1,1024,4)]"))
s = cltune.get_scanner(q, "sum", np.float32)
v = ScanVariant("sum", "float32", "cols")
def block(f):
    t = time.perf_counter()
    for _ in range(CALLS): f()
    q.finish()
    return (time.perf_counter() - t) / CALLS * 1e3
print(f"# {dev.name}; float32 cumsum along axis 0; ms a call, median of {REPEATS}x{CALLS}; (wg, items, g/cu)")
rng = np.random.default_rng(5)
for shape in SHAPES:
    h = rng.random(shape, dtype=np.float32); x = cla.to_device(q, h); out = cla.empty(q, shape, np.float32)
    want = np.cumsum(h.astype(np.float64), axis=0)
    view, layout = s.view(shape, 0)
    fs = {}
    for w, i, g in CFGS:
        la = ScanLauncher(ctx, dev, info, v, ScanConfig("cols", wg=w, items=i, stage=0, group_scan=0, groups_per_cu=g), min_chunk=serving_min_chunk(info))
        la.enqueue(q, x.data, 0, out.data, 0, view)
        assert np.allclose(out.get(), want, rtol=1e-4, atol=1e-3), (shape, w, i, g)
        fs[f"wg{w} i{i} g{g}"] = lambda la=la: la.enqueue(q, x.data, 0, out.data, 0, view)
    fs["copy"] = lambda: cl.enqueue_copy(q, out.data, x.data)
    ho = np.empty_like(h); fs["numpy"] = lambda: np.cumsum(h, axis=0, out=ho)
    t = {k: [] for k in fs}
    for f in fs.values(): f()
    for rep in range(REPEATS):
        for k, f in fs.items(): t[k].append(block(f))
    print(f"{'x'.join(map(str, shape))}: " + " | ".join(f"{k} {statistics.median(u):.2f}" for k, u in t.items()), flush=True)
