# ruff: noqa  (one-off experiment, kept terse)
"""The chained scan's look-back on NVIDIA, by one work-item (CLT_LB_WARP 0: two barriers a
round, work-item 0 combining the window of 32 one entry after another) against a warp
(CLT_LB_WARP 1: a predecessor a lane, ballots, a butterfly of shuffles, one barrier at the
end). Same process, same configs, alternating blocks of back-to-back calls, medians; every
build first validated (awkward lengths, segments, exclusive, offsets) and checked against
numpy at each size. Off NVIDIA both builds are the same kernel (a control).

    python scripts/experiments/scan_lookback_ab.py --device NVIDIA --sizes 2^16,2^20,2^24,2^26,2^28
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--sizes", default="2^16,2^20,2^24,2^26,2^28")
ap.add_argument("--calls", type=int, default=10)
ap.add_argument("--repeats", type=int, default=7)
ap.add_argument("--configs", default="wg256-i32-c1,wg128-i32-c2-w,wg256-i16-c1-w")
a = ap.parse_args()
warnings.simplefilter("ignore")
from cltune.device.select import select
from cltune.families.scan import kernel as sk
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher
from cltune.families.scan.reference import validate
from cltune.opencl.build import BuildError

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
print(f"# {info.name} ({info.platform}); compute units {info.compute_units}", flush=True)
orig = sk.scan_source()


def cfg_of(t):
    p = t.split("-")
    return ScanConfig("rows", wg=int(p[0][2:]), items=int(p[1][1:]), stage=1,
                      group_scan=2 if "w" in p[3:] else 0, chain=int(p[2][1:]))


def per_call(fn):
    fn(); q.finish()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        fn()
    q.finish()
    return (time.perf_counter() - t0) / a.calls


builds = {}
for lbw in (0, 1):
    sk.scan_source = lambda lbw=lbw: f"#define CLT_LB_WARP {lbw}\n" + orig
    for t in a.configs.split(","):
        cfg = cfg_of(t)
        for v in (ScanVariant("sum", "float32"), ScanVariant("sum", "int32")):  # one and two state words
            la = ScanLauncher(ctx, dev, info, v, cfg)
            try:
                chk = validate(la, q, 200011)
                print(f"validate lbw={lbw} {cfg.short()} {v}: {'ok' if chk.ok else chk.reason}", flush=True)
            except BuildError as e:  # a form (segments) too big for local memory: as the tuner
                print(f"validate lbw={lbw} {cfg.short()} {v}: a form does not build ({str(e)[:80]})")
            if str(v).startswith("sum/float32"):
                builds[(lbw, t)] = la
sk.scan_source = lambda: orig

for s in a.sizes.split(","):
    n = 2 ** int(s[2:]) if s.startswith("2^") else int(s)
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(q, h); y = cla.empty(q, n, np.float32)
    want = np.cumsum(h, dtype=np.float64)
    view = (1, n, 1)
    for (lbw, t), la in builds.items():
        y.fill(0); la.enqueue(q, x.data, 0, y.data, 0, view); q.finish()
        err = np.max(np.abs(y.get() - want) / np.maximum(want, 1))
        assert err < 1e-4, (lbw, t, n, err)
    samples = {k: [] for k in [("copy", "")] + list(builds)}
    for _ in range(a.repeats):
        samples[("copy", "")].append(per_call(lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=n * 4)))
        for k, la in builds.items():
            samples[k].append(per_call(lambda la=la: la.enqueue(q, x.data, 0, y.data, 0, view)))
    med = {k: statistics.median(v) for k, v in samples.items()}
    c = med[("copy", "")]
    print(f"\nn = {s}: copy {c * 1e6:.1f} us")
    for t in a.configs.split(","):
        t0, t1 = med[(0, t)], med[(1, t)]
        print(f"  {cfg_of(t).short():>34}: serial {t0 * 1e6:8.1f} us ({c / t0:4.2f} of copy)  "
              f"warp {t1 * 1e6:8.1f} us ({c / t1:4.2f} of copy)  serial/warp {t0 / t1:4.2f}x", flush=True)
