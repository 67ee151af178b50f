# ruff: noqa  (one-off experiment, kept terse)
"""copy_if's kernel shape on a GPU (#21 compaction target): (work-group size, items a
work-item, groups per compute unit) swept for `cltune.copy_if(x, "ary[i] > 0.5")` on random
float32 (half kept), every answer checked against numpy, then timed in blocks of calls (one
finish), median of rounds. The served shape is `compact._shape_of`'s.
    python scripts/experiments/compact_shapes.py --device NVIDIA --sizes 2^20,2^24,2^26
"""
import argparse, statistics, sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
from cltune.families.scan import compact

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="0")
ap.add_argument("--sizes", default="2^20,2^24")
ap.add_argument("--calls", type=int, default=20)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--wgs", default="128,256")
ap.add_argument("--items", default="4,8,16")
ap.add_argument("--per-cu", default="4,8,16")
ap.add_argument("--ballot", default="0", help="scatter modes to sweep: 0 __local packing, 1 warp ballots (NVIDIA)")
a = ap.parse_args()
info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
served, served_ballot = compact._shape_of, compact._use_ballot
PRED = "ary[i] > 0.5"

def timed(f):
    f(); q.finish(); ts = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        for _ in range(a.calls): f()
        q.finish(); ts.append((time.perf_counter() - t) / a.calls * 1e6)
    return statistics.median(ts)

print(f"# {dev.name}: copy_if(x, {PRED!r}), float32, us per call (median of {a.repeats} x {a.calls})")
for s in a.sizes.split(","):
    n = 2 ** int(s[2:]) if s.startswith("2^") else int(s)
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    want = h[h > 0.5]
    x = cla.to_device(q, h)
    compact._shape_of, compact._use_ballot = served, served_ballot
    base = timed(lambda: cltune.copy_if(x, PRED))
    print(f"n={s}: served {served(dev, 4, bool(served_ballot(dev)))} ballot={served_ballot(dev)}: {base:.1f} us", flush=True)
    res = []
    for bal, wg in [(b, w) for b in map(int, a.ballot.split(",")) for w in map(int, a.wgs.split(","))]:
        compact._use_ballot = lambda d, bal=bal: bal
        for it in map(int, a.items.split(",")):
            for pc in map(int, a.per_cu.split(",")):
                def shape(d, o, b=False, wg=wg, it=it, pc=pc): return wg, it, pc
                compact._shape_of = shape
                try:
                    out, cnt, _ = cltune.copy_if(x, PRED)
                    c = int(cnt.get())
                    ok = c == want.size and np.array_equal(out.get()[:c], want)
                except Exception as e:
                    print(f"  b{bal} {wg}x{it} per_cu={pc}: {type(e).__name__} {str(e)[:80]}"); continue
                t = timed(lambda: cltune.copy_if(x, PRED))
                res.append((t, bal, wg, it, pc))
                print(f"  b{bal} {wg}x{it} per_cu={pc}: {t:.1f} us{'' if ok else '  WRONG'}", flush=True)
    res.sort()
    if res:
        t, bal, wg, it, pc = res[0]
        print(f"n={s}: best b{bal} {wg}x{it} per_cu={pc} {t:.1f} us (served {base:.1f})")
compact._shape_of, compact._use_ballot = served, served_ballot
