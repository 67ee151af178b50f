# ruff: noqa  (one-off experiment, kept terse)
"""#40 on CPUs: float32 prefix sums along short rows (the rows layout with a head every `r`
elements), the served config's launcher built twice: segment pieces (-DCLT_SEG_VMASK=0: the
carry restarts at each head, a row's vectors and its scalar steps) against whole vectors of
flagged pairs (kernels/scan.cl's CHUNK_SCAN_MASKED, rows up to CLT_SEG_VMASK), beside the
same launcher over the flat array (one segment). Launches interleaved in one process, every
answer checked against numpy first; ms a call, median of REPEATS blocks of CALLS.

    DEV=1 SHAPES=100003x33,1000003x5 python scripts/experiments/scan_seg_rows_ab.py
"""
import os, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
from cltune.families.scan import kernel as sk
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher, serving_min_chunk
warnings.simplefilter("ignore")
info, dev = select(os.environ.get("DEV", "1"))
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
CALLS, REPEATS = int(os.environ.get("CALLS", 3)), int(os.environ.get("REPEATS", 7))
SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get("SHAPES", "100003x33,1000003x5,300007x7,200003x16,100003x100,40009x300").split(",")]
EXCL = bool(int(os.environ.get("EXCL", "0")))
s = cltune.get_scanner(q, "sum", np.float32)
v = ScanVariant("sum", "float32", "rows")
defines, source = sk.build_defines, sk.scan_source()
mode = {"pieces": False}
sk.build_defines = lambda *a, **kw: defines(*a, **kw) + (["-DCLT_SEG_VMASK=0"] if mode["pieces"] else [])
class Twin(ScanLauncher):  # builds with its own -DCLT_SEG_VMASK, whenever it builds
    pieces = False
    def built(self, form=None):
        mode["pieces"] = self.pieces
        sk.scan_source = lambda: source + ("\n/* pieces */\n" if self.pieces else "")
        return super().built(form)
def launcher(pieces):
    la = Twin(ctx, dev, info, v, s.explain((1 << 22,), axis=None).config, min_chunk=serving_min_chunk(info))
    la.pieces = pieces
    return la
las = {"pieces": launcher(True), "vectors": launcher(False)}
print(f"# {dev.name}; float32 {'exclusive ' if EXCL else ''}cumsum along rows; config {las['pieces'].cfg.short()}; ms a call, median of {REPEATS}x{CALLS}")
rng = np.random.default_rng(5)
for shape in SHAPES:
    h = rng.random(shape, dtype=np.float32); x = cla.to_device(q, h); out = cla.empty(q, shape, np.float32)
    want = np.cumsum(h.astype(np.float64), axis=1)
    if EXCL:
        want = np.concatenate([np.zeros((shape[0], 1)), want[:, :-1]], axis=1)
    fs = {}
    for name, la in las.items():
        la.enqueue(q, x.data, 0, out.data, 0, (shape[0], shape[1], 1), exclusive=EXCL); q.finish()
        assert np.allclose(out.get(), want, rtol=1e-4, atol=1e-3), (shape, name)
        fs[name] = lambda la=la: la.enqueue(q, x.data, 0, out.data, 0, (shape[0], shape[1], 1), exclusive=EXCL)
    fs["flat"] = lambda: las["vectors"].enqueue(q, x.data, 0, out.data, 0, (1, h.size, 1), exclusive=EXCL)
    t = {k: [] for k in fs}
    for f in fs.values(): f()
    for rep in range(REPEATS):
        for k, f in (fs.items() if rep % 2 else reversed(fs.items())):
            t0 = time.perf_counter()
            for _ in range(CALLS): f()
            q.finish(); t[k].append((time.perf_counter() - t0) / CALLS * 1e3)
    m = {k: statistics.median(u) for k, u in t.items()}
    print(f"{'x'.join(map(str, shape))}: " + " | ".join(f"{k} {u:.2f}" for k, u in m.items())
          + f" | vectors/pieces {m['pieces'] / m['vectors']:.2f}x, of flat {m['flat'] / m['vectors']:.2f}", flush=True)
