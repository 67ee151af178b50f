# ruff: noqa  (one-off experiment, kept terse)
"""An explicit-vector argmax on a CPU device (#22 items 3 and 6) against numpy.argmax, float32, 2^24 + 5
elements: each work-item scans its own contiguous chunk W floats at a time (vloadW; isgreater /
isnan / select on a vector of values and a vector of block numbers, so the first occurrence and
the first NaN win as in numpy), then its W lanes and the partials are combined (here on the host;
the index is checked). Not integrated: served argmax today is the expression kernel (a struct
fold that neither CPU runtime vectorises). Usage:
    python scripts/experiments/argmax_vec.py Portable   # or Intel (a platform-name substring)
"""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla
dev = [d for p in cl.get_platforms() for d in p.get_devices() if sys.argv[1] in p.name][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
SRC = r'''
#define VT CAT(float, W)
#define IT CAT(int, W)
#define CAT_(a,b) a##b
#define CAT(a,b) CAT_(a,b)
#define VLOAD CAT(vload, W)
__kernel __attribute__((reqd_work_group_size(WG,1,1)))
void k(__global const float *x, const long n, const long chunk, __global long *outi, __global float *outv) {
  const long g = get_global_id(0);
  const long begin = g * chunk, end = min(begin + chunk, n);
  long bi_best = LONG_MAX; float v_best = -INFINITY;
  if (begin < end) {
    const long nb = (end - begin) / W;
    __global const float *xp = x + begin;
    VT best = (VT)(-INFINITY); IT bi = (IT)(0);
    for (int b = 0; b < (int)nb; ++b) {
      VT v = VLOAD(b, xp);
      IT m = isgreater(v, best) | (isnan(v) & ~isnan(best));
      best = select(best, v, m); bi = select(bi, (IT)(b), m);
    }
    float vb[W]; int ib[W];
    *(VT *)vb = best; *(IT *)ib = bi;
    if (nb > 0) for (int l = 0; l < W; ++l) {
      const float v = vb[l]; const long i = begin + (long)ib[l] * W + l;
      const int vn = v != v, bn = v_best != v_best;
      if (bi_best == LONG_MAX || (vn && !bn) || (!bn && (v > v_best)) || ((vn == bn) && (vn || v == v_best) && i < bi_best)) { v_best = v; bi_best = i; }
    }
    for (long i = begin + nb * W; i < end; ++i) {
      const float v = x[i];
      if (bi_best == LONG_MAX || v > v_best || (v != v && v_best == v_best)) { v_best = v; bi_best = i; }
    }
  }
  outi[g] = bi_best; outv[g] = v_best;
}
'''
n = (1 << 24) + 5
h = np.random.default_rng(0).random(n, dtype=np.float32); h[12345678] = 2.0; h[12345679] = 2.0
x = cla.to_device(q, h)
cus = dev.max_compute_units
print(dev.platform.name, "numpy", end=" ")
t = time.perf_counter(); [np.argmax(h) for _ in range(10)]; print("%.2f ms" % ((time.perf_counter() - t) / 10 * 1e3))
for W in (4, 8, 16):
  for wg in (1, 4):
    for gpc in (1, 4, 16):
        prg = cl.Program(ctx, SRC).build(options=[f"-DWG={wg}", f"-DW={W}"])
        G = cus * gpc * wg
        chunk = -(-n // G); chunk = -(-chunk // 64) * 64
        G = -(-n // chunk); G = -(-G // wg) * wg
        oi = cla.empty(q, G, np.int64); ov = cla.empty(q, G, np.float32)
        kern = prg.k
        def run(): kern(q, (G,), (wg,), x.data, np.int64(n), np.int64(chunk), oi.data, ov.data)
        run(); q.finish()
        vi, vv = oi.get(), ov.get(); got = vi[np.argmax(vv)]
        ts = []
        for _ in range(7):
          t = time.perf_counter(); run(); run(); q.finish(); ts.append((time.perf_counter() - t) / 2)
        print(f"W={W} wg={wg} g/cu={gpc}: {np.median(ts)*1e3:.2f} ms ok={got == 12345678}", flush=True)
