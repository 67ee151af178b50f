# ruff: noqa  (one-off experiment, kept terse)
"""What holds the one-pass chained scan below the copy (#21, 1-D target 0.85)? Side by side on
one device, float32, n = 2^24..2^28, per call of a block of back-to-back calls (median of
rounds), GB/s counting 2n bytes:

- copy: clEnqueueCopyBuffer (the ceiling)
- tc_reg WGxI: one tile a group, loads to registers then stores (no __local, no scan): the
  ceiling of "a group reads its tile, then writes it"
- tc_stage WGxI: the same through the scan's padded __local transpose (two barriers each way)
- tc_persist WGxI: persistent groups taking tiles by an atomic ticket, the next tile's loads
  issued before the current tile's stores (software pipelining)
- chain <cfg>: the real clt_scan_chain (ScanLauncher), and `nolook <cfg>`: the same with its
  look-back removed (wrong answers, the time without the chain's wait)

    python scripts/experiments/scan_ceiling.py --device NVIDIA --sizes 2^24,2^26,2^28
"""
import argparse, statistics, time, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="NVIDIA")
ap.add_argument("--sizes", default="2^24,2^26,2^28")
ap.add_argument("--calls", type=int, default=10)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--small", action="store_true", help="a tiny grid (a smoke test on CPUs)")
a = ap.parse_args()
warnings.simplefilter("ignore")
from cltune.device.select import select
from cltune.families.scan import kernel as sk
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher

info, dev = select(a.device)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
print(f"# {info.name} ({info.platform}); compute units {info.compute_units}")

SRC = r"""
#define TILE (WG * ITEMS)
#define PAD(j) ((j) + ((j) >> 5))
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tc_reg(__global const float *x, __global float *y, const long n) {
    const long t = (long)get_group_id(0) * TILE; const uint lid = get_local_id(0);
    float r[ITEMS];
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; r[k] = i < n ? x[i] : 0.0f; }
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; if (i < n) y[i] = r[k]; }
}
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tc_stage(__global const float *x, __global float *y, const long n) {
    __local float st[PAD(TILE) + 1];
    const long t = (long)get_group_id(0) * TILE; const uint lid = get_local_id(0);
    float r[ITEMS];
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; st[PAD(k * WG + lid)] = i < n ? x[i] : 0.0f; }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) r[k] = st[PAD(lid * ITEMS + k)];
    #pragma unroll
    for (int k = 1; k < ITEMS; ++k) r[k] += r[k - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) st[PAD(lid * ITEMS + k)] = r[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; if (i < n) y[i] = st[PAD(k * WG + lid)]; }
}
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tc_persist(__global const float *x, __global float *y, const long n,
                volatile __global uint *ticket) {
    __local uint s_t;
    const uint lid = get_local_id(0);
    if (lid == 0) s_t = atomic_inc(ticket);
    barrier(CLK_LOCAL_MEM_FENCE);
    long t = (long)s_t * TILE;
    float cur[ITEMS];
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; cur[k] = i < n ? x[i] : 0.0f; }
    while (t < n) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) s_t = atomic_inc(ticket);
        barrier(CLK_LOCAL_MEM_FENCE);
        const long tn = (long)s_t * TILE;
        float nx[ITEMS];
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) { const long i = tn + (long)k * WG + lid; nx[k] = i < n ? x[i] : 0.0f; }
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) { const long i = t + (long)k * WG + lid; if (i < n) y[i] = cur[k]; }
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) cur[k] = nx[k];
        t = tn;
    }
}
"""


def per_call(fn, finish=q.finish):
    fn(); finish()
    got = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        finish()
        got.append((time.perf_counter() - t0) / a.calls)
    return statistics.median(got)


def sizes(t):
    return [2 ** int(s[2:]) if s.startswith("2^") else int(s) for s in t.split(",")]


grid = [(64, 8)] if a.small else [(128, 16), (128, 32), (256, 16), (256, 32), (512, 16), (1024, 8)]
progs = {}
for wg, it in grid:
    try:
        progs[(wg, it)] = cl.Program(ctx, SRC).build(options=[f"-DWG={wg}", f"-DITEMS={it}"])
    except Exception as e:
        print("build", wg, it, str(e)[:200])
v = ScanVariant("sum", "float32", "rows")
chain_cfgs = ([ScanConfig("rows", wg=64, items=8, chain=1)] if a.small else
              [ScanConfig("rows", wg=256, items=32, chain=1), ScanConfig("rows", wg=128, items=32, chain=1),
               ScanConfig("rows", wg=256, items=16, chain=1), ScanConfig("rows", wg=512, items=16, chain=1),
               ScanConfig("rows", wg=256, items=32, chain=2, group_scan=2)])
orig = sk.scan_source()
nolook = orig.replace("    LOOK_BACK(epoch)                                                                           \\\n", "")
assert nolook != orig, "the LOOK_BACK line moved: update the experiment"

for n in sizes(a.sizes):
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(q, h); y = cla.empty(q, n, np.float32)
    ticket = cla.zeros(q, 1, np.uint32)
    res = {}
    res["copy"] = per_call(lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=n * 4))
    for (wg, it), prg in progs.items():
        tiles = -(-n // (wg * it))
        res[f"tc_reg {wg}x{it}"] = per_call(lambda: prg.tc_reg(q, (tiles * wg,), (wg,), x.data, y.data, np.int64(n)))
        try:
            res[f"tc_stage {wg}x{it}"] = per_call(lambda: prg.tc_stage(q, (tiles * wg,), (wg,), x.data, y.data, np.int64(n)))
        except Exception as e:
            print("tc_stage", wg, it, str(e)[:100])
        k = prg.tc_persist
        occ = []
        for gpc in (1, 2, 4, 8):
            groups = min(tiles, info.compute_units * gpc)

            def run(groups=groups):
                ticket.fill(0)
                k(q, (groups * wg,), (wg,), x.data, y.data, np.int64(n), ticket.data)
            run(); q.finish()
            assert np.array_equal(y.get(), h), ("tc_persist wrong", wg, it, gpc)
            occ.append((per_call(run), gpc))
        t, g = min(occ)
        res[f"tc_persist {wg}x{it} g{g}"] = t
    view = (1, n, 1)
    for src_name, src in (("chain", orig), ("nolook", nolook)):
        sk.scan_source = lambda src=src: src
        for cfg in chain_cfgs:
            try:
                la = ScanLauncher(ctx, dev, info, v, cfg)
                la.enqueue(q, x.data, 0, y.data, 0, view); q.finish()
            except Exception as e:
                print(src_name, cfg.short(), str(e)[:200]); continue
            if src_name == "chain":
                got = y.get().astype(np.float64); want = np.cumsum(h, dtype=np.float64)
                assert np.max(np.abs(got - want) / np.maximum(want, 1)) < 1e-3, cfg.short()
            res[f"{src_name} {cfg.short()}"] = per_call(lambda la=la: la.enqueue(q, x.data, 0, y.data, 0, view))
    sk.scan_source = lambda: orig
    c = res["copy"]
    print(f"\nn = 2^{n.bit_length() - 1}")
    for kname, t in res.items():
        print(f"  {kname:>40}: {t * 1e6:9.1f} us  {2 * n * 4 / t / 1e12:5.2f} TB/s  {c / t:5.2f} of copy")
