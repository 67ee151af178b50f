/* cltune: the L2 norm of a whole contiguous float32 array on a CPU device, in vector registers
 * (served by cltune.stats.normvec on devices of type CPU).
 *
 * Every option has a default below, so the file compiles on its own; values reach it only as
 * -D integers made by cltune.stats.normvec from the device's vector width (house rule 2).
 *
 *   clt_normvec_chunks  work-item g sums the squares of its own contiguous chunk
 *                       [g * chunk, (g + 1) * chunk) of the n elements CLT_NV_W at a time
 *                       (vloadW, converted to doubleW, one fma per lane) into CLT_NV_U
 *                       independent accumulators (one is bound by the fma latency); then the
 *                       accumulators, the lanes and the tail (fewer than W elements) are
 *                       added. With `root` (one chunk: the host skips the finish) it writes
 *                       (float)sqrt(sum) to out[outoff], else the sum to part[partoff + g]
 *                       (0 for an empty chunk).
 *   clt_normvec_finish  one work-item adds the `parts` sums in order and writes
 *                       (float)sqrt(sum) to out[outoff].
 * The kernel boundary orders the partials: no atomics, no inter-group race.
 *
 * Why double: the square of a float is exact in double (24-bit significands, 48-bit product)
 * and can neither overflow (FLT_MAX^2 ~ 1.2e77, times 2^40 elements is still finite) nor
 * underflow (the smallest subnormal float squared is ~2e-90), so the only rounding is that of
 * the additions (relative error ~ (chunk / (W * U) + parts) * 1.1e-16) and the final sqrt and
 * conversion: as accurate as cltune.stats.kernels' expression path, and more than numpy's
 * float32 sum of squares. NaN and infinity follow IEEE arithmetic as numpy's: an infinity
 * squares to +inf, a NaN to NaN, and inf + NaN is NaN (no fast-math options: the additions
 * keep their order within an accumulator and the compiler may not drop NaN or inf).
 */

#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef CLT_NV_W
#define CLT_NV_W 16 /* lanes of a vector: 2, 4, 8 or 16 */
#endif
#ifndef CLT_NV_U
#define CLT_NV_U 2 /* accumulators a work-item keeps (1, 2 or 4): independent fma chains */
#endif
#if CLT_NV_W != 2 && CLT_NV_W != 4 && CLT_NV_W != 8 && CLT_NV_W != 16
#error "CLT_NV_W must be 2, 4, 8 or 16"
#endif
#if CLT_NV_U != 1 && CLT_NV_U != 2 && CLT_NV_U != 4
#error "CLT_NV_U must be 1, 2 or 4"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NV_DV CAT(double, CLT_NV_W)

/* block b (W elements from p) squared into accumulator a */
#define STEP(a, b)                                                                             \
    {                                                                                          \
        const NV_DV v_ = CAT(convert_, NV_DV)(CAT(vload, CLT_NV_W)(b, p));                     \
        a = fma(v_, v_, a);                                                                    \
    }

/* the sum of a vector's lanes, halves first */
inline double clt_nv_lanes(const NV_DV a) {
#if CLT_NV_W == 16
    const double8 h8 = a.lo + a.hi;
    const double4 h4 = h8.lo + h8.hi;
    const double2 h2 = h4.lo + h4.hi;
#elif CLT_NV_W == 8
    const double4 h4 = a.lo + a.hi;
    const double2 h2 = h4.lo + h4.hi;
#elif CLT_NV_W == 4
    const double2 h2 = a.lo + a.hi;
#else
    const double2 h2 = a;
#endif
    return h2.x + h2.y;
}

/* block b (W elements from p) added into accumulator a (the mean's sums) */
#define STEP1(a, b)                                                                            \
    { a += CAT(convert_, NV_DV)(CAT(vload, CLT_NV_W)(b, p)); }

/* the scan of a chunk's nb whole blocks with STEPM into a0 (the accumulators merged) */
#if CLT_NV_U >= 4
#define NV_MORE(STEPM, b) STEPM(a1, b + 1) STEPM(a2, b + 2) STEPM(a3, b + 3)
#elif CLT_NV_U >= 2
#define NV_MORE(STEPM, b) STEPM(a1, b + 1)
#else
#define NV_MORE(STEPM, b)
#endif
#define NV_SCAN(STEPM)                                                                         \
    {                                                                                          \
        long b = 0;                                                                            \
        for (; b <= nb - CLT_NV_U; b += CLT_NV_U) {                                            \
            STEPM(a0, b)                                                                       \
            NV_MORE(STEPM, b)                                                                  \
        }                                                                                      \
        for (; b < nb; ++b)                                                                    \
            STEPM(a0, b)                                                                       \
    }

/* NV_DECL: CLT_NV_U zero accumulators a0..; NV_MERGE: them added into a0 */
#if CLT_NV_U >= 4
#define NV_DECL NV_DV a0 = (NV_DV)(0.0), a1 = (NV_DV)(0.0), a2 = (NV_DV)(0.0), a3 = (NV_DV)(0.0);
#define NV_MERGE                                                                               \
    a0 += a2;                                                                                  \
    a1 += a3;                                                                                  \
    a0 += a1;
#elif CLT_NV_U >= 2
#define NV_DECL NV_DV a0 = (NV_DV)(0.0), a1 = (NV_DV)(0.0);
#define NV_MERGE a0 += a1;
#else
#define NV_DECL NV_DV a0 = (NV_DV)(0.0);
#define NV_MERGE
#endif

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_chunks(__global const float *x, const long xoff, const long n, const long chunk,
                   __global double *part, const long partoff, __global float *out,
                   const long outoff, const int root) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin); /* <= 0: a chunk past the end */
    __global const float *p = x + xoff + begin;
    const long nb = len > 0 ? len / CLT_NV_W : 0;
    double s = 0.0;
    if (nb > 0) {
        NV_DECL
        NV_SCAN(STEP)
        NV_MERGE
        s = clt_nv_lanes(a0);
    }
    for (long i = nb * CLT_NV_W; i < len; ++i) {
        const double v = (double)p[i];
        s = fma(v, v, s);
    }
    if (root)
        out[outoff] = (float)sqrt(s);
    else
        part[partoff + g] = s;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_finish(__global const double *part, const long parts, __global float *out,
                   const long outoff) {
    double s = 0.0;
    for (long g = 0; g < parts; ++g)
        s += part[g];
    out[outoff] = (float)sqrt(s);
}

/* Along axis 0 of `cols` interleaved columns (a C-ordered (rows, cols) block at x[xoff], cols
 * dividing CLT_NV_W, 2..16): the chunks' scan over the block's n = rows x cols elements, whose
 * lane l always holds column l % cols (chunks start at multiples of CLT_NV_W); `square`: the
 * squares are summed (the L2 norm), else the values (the mean). The lanes and the tail are
 * added per column, and chunk g writes column c's sum to part[partoff + g * cols + c]. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_cols(__global const float *x, const long xoff, const long n, const long chunk,
                 const int cols, const int square, __global double *part, const long partoff) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin);
    __global const float *p = x + xoff + begin;
    const long nb = len > 0 ? len / CLT_NV_W : 0;
    double s[CLT_NV_W];
    for (int c = 0; c < cols; ++c)
        s[c] = 0.0;
    if (nb > 0) {
        NV_DECL
        if (square)
            NV_SCAN(STEP)
        else
            NV_SCAN(STEP1)
        NV_MERGE
        double lv[CLT_NV_W];
        CAT(vstore, CLT_NV_W)(a0, 0, lv);
        for (int l = 0; l < CLT_NV_W; ++l)
            s[l % cols] += lv[l];
    }
    for (long i = nb * CLT_NV_W; i < len; ++i) {
        const double v = (double)p[i];
        const int c = (int)(i % cols);
        s[c] = square ? fma(v, v, s[c]) : s[c] + v;
    }
    for (int c = 0; c < cols; ++c)
        part[partoff + g * cols + c] = s[c];
}

/* Column get_global_id(0): its `parts` chunk sums (from part[partoff]) added in order ->
 * out[outoff + column]: (float)sqrt(sum) with `square`, else (float)(sum / rows). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_cols_finish(__global const double *part, const long partoff, const long parts,
                        const int cols, const int square, const long rows,
                        __global float *out, const long outoff) {
    const int c = (int)get_global_id(0);
    double s = 0.0;
    for (long g = 0; g < parts; ++g)
        s += part[partoff + g * cols + c];
    out[outoff + c] = square ? (float)sqrt(s) : (float)(s / (double)rows);
}

/* The variance along axis 0 of `cols` interleaved columns, as clt_normvec_cols cuts them:
 * chunk g shifts each column by its own first value in the chunk (c, the value of lane
 * l % cols in the chunk's first vector: a chunk starts at a row) and sums d = x - c and d^2
 * in double a lane at a time; for each column it writes (n, c, s1, s2) as four doubles to
 * part[4 * (partoff + g * cols + column)] (n = 0: an empty chunk). Within a chunk of m rows
 * (c - mean)^2 <= m v, so M2 = s2 - s1^2/n keeps about 53 - 2 log2(m) bits at the worst. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_vcols(__global const float *x, const long xoff, const long n, const long chunk,
                  const int cols, __global double *part, const long partoff) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin);
    __global const float *p = x + xoff + begin;
    const long nb = len > 0 ? len / CLT_NV_W : 0;
    double sh[CLT_NV_W], s1[CLT_NV_W], s2[CLT_NV_W];
    for (int l = 0; l < CLT_NV_W; ++l) {
        sh[l] = len > 0 ? (double)p[l % cols] : 0.0;
        s1[l] = 0.0;
        s2[l] = 0.0;
    }
    if (nb > 0) {
        const NV_DV c = CAT(vload, CLT_NV_W)(0, sh);
        NV_DV a1 = (NV_DV)(0.0), a2 = (NV_DV)(0.0), b1 = (NV_DV)(0.0), b2 = (NV_DV)(0.0);
        long b = 0;
        for (; b + 1 < nb; b += 2) {
            const NV_DV u = CAT(convert_, NV_DV)(CAT(vload, CLT_NV_W)(b, p)) - c;
            const NV_DV v = CAT(convert_, NV_DV)(CAT(vload, CLT_NV_W)(b + 1, p)) - c;
            a1 += u;
            a2 = fma(u, u, a2);
            b1 += v;
            b2 = fma(v, v, b2);
        }
        if (b < nb) {
            const NV_DV u = CAT(convert_, NV_DV)(CAT(vload, CLT_NV_W)(b, p)) - c;
            a1 += u;
            a2 = fma(u, u, a2);
        }
        a1 += b1;
        a2 += b2;
        double l1[CLT_NV_W], l2[CLT_NV_W];
        CAT(vstore, CLT_NV_W)(a1, 0, l1);
        CAT(vstore, CLT_NV_W)(a2, 0, l2);
        for (int l = 0; l < CLT_NV_W; ++l) {
            s1[l % cols] += l1[l];
            s2[l % cols] += l2[l];
        }
    }
    for (long i = nb * CLT_NV_W; i < len; ++i) {
        const int k = (int)(i % cols);
        const double d = (double)p[i] - sh[k];
        s1[k] += d;
        s2[k] = fma(d, d, s2[k]);
    }
    const double rows = len > 0 ? (double)(len / cols) : 0.0;
    for (int k = 0; k < cols; ++k) {
        __global double *o = part + 4 * (partoff + g * cols + k);
        o[0] = rows;
        o[1] = sh[k];
        o[2] = s1[k];
        o[3] = s2[k];
    }
}

/* Column get_global_id(0): its `parts` chunks' (n, c, s1, s2) (from part[4 * partoff]) as
 * (n, mean, M2) merged in order by Chan, Golub and LeVeque's formula; var = M2 / max(n -
 * ddof, 0), NaN where the mean is not finite (an infinity or a NaN in the column: numpy's);
 * out[outoff + column] = (float)var, or (float)sqrt(var) with `root`. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_normvec_vcols_finish(__global const double *part, const long partoff, const long parts,
                         const int cols, const double ddof, const int root,
                         __global float *out, const long outoff) {
    const int k = (int)get_global_id(0);
    double n = 0.0, mean = 0.0, m2 = 0.0;
    for (long g = 0; g < parts; ++g) {
        __global const double *o = part + 4 * (partoff + g * cols + k);
        const double nb = o[0];
        if (nb == 0.0)
            continue;
        const double mb = o[1] + o[2] / nb;
        const double m2b = fmax(o[3] - o[2] * (o[2] / nb), 0.0);
        if (n == 0.0) {
            n = nb;
            mean = mb;
            m2 = m2b;
            continue;
        }
        const double t = n + nb, d = mb - mean, f = nb / t;
        m2 = m2 + m2b + d * d * n * f;
        mean = mean + d * f;
        n = t;
    }
    const double v = isfinite(mean) ? m2 / fmax(n - ddof, 0.0) : (double)NAN;
    out[outoff + k] = (float)(root ? sqrt(v) : v);
}

/* ---- statistics along short rows ----------------------------------------------------------
 * clt_normvec_rows{s,n,v}<L>, L 2..16: rows of L contiguous floats, row r at x[xoff + r * L], a
 * work-item a row (CPU compilers run CLT_NV_RG neighbouring work-items in vector lanes, the
 * row's loads as a strided gather of whole cache lines; a block of 16 rows transposed in
 * private memory ran 2-3x slower on PoCL). The row is held in registers:
 *   what 0  mean: the sum in double (huge values do not overflow it, where numpy's float32
 *           sum does) / len, rounded to float;
 *   what 1  L2 norm: sqrt of the sum of squares in double (exact squares: no overflow, no
 *           underflow, where numpy's float32 norm overflows);
 *   what 2  var: two passes over the held row (that mean, then the deviations d in float),
 *           corrected for the mean's rounding as Bjorck's two-pass (sum d^2 - (sum d)^2 /
 *           len: numpy's float32 var leaves that error in) / div (max(len - ddof, 0): 0
 *           gives inf or NaN, as numpy);
 *   what 3  std: sqrt of var;
 *   what 4  sum: the sum in double, rounded to float (`r(x, axis=-1)` of float32).
 * The deviations in float: the whole row in double ran 1.3-1.8x slower on PoCL.
 * out[outoff + r] is the float result; constant trip counts keep the row in registers. */
#ifndef CLT_NV_RG
#define CLT_NV_RG 256
#endif

/* clt_normvec_rows<kind><L>: rows of L elements, a kernel per length and kind (PoCL's
 * vectoriser gave up on one kernel switching over the lengths, and on one whose statistic
 * was a branch: 2-5x slower); within a kind only the last step is chosen (a select) */
#define NV_HEAD(KIND, L)                                                                       \
    __kernel __attribute__((reqd_work_group_size(CLT_NV_RG, 1, 1))) void                       \
    clt_normvec_rows##KIND##L(__global const float *x, const long xoff, const long rows,      \
                              const int what, const float div, __global float *out,           \
                              const long outoff) {                                             \
        const long r = get_global_id(0);                                                       \
        if (r >= rows) return;                                                                 \
        __global const float *p = x + xoff + r * L;                                            \
        float v_[L];                                                                           \
        _Pragma("unroll") for (int j = 0; j < L; ++j) v_[j] = p[j];

/* s: the sum in double, rounded (what 4), or the mean (what 0) */
#define NV_ROWS_S(L)                                                                           \
    NV_HEAD(s, L)                                                                              \
    double s_ = 0.0;                                                                           \
    _Pragma("unroll") for (int j = 0; j < L; ++j) s_ += (double)v_[j];                         \
    out[outoff + r] = (float)(what == 4 ? s_ : s_ / (double)L);                                \
    }

/* n: the L2 norm (what 1) */
#define NV_ROWS_N(L)                                                                           \
    NV_HEAD(n, L)                                                                              \
    double s_ = 0.0;                                                                           \
    _Pragma("unroll") for (int j = 0; j < L; ++j) s_ += (double)v_[j] * (double)v_[j];         \
    out[outoff + r] = (float)sqrt(s_);                                                         \
    }

/* v: var (what 2) or std (what 3) */
#define NV_ROWS_V(L)                                                                           \
    NV_HEAD(v, L)                                                                              \
    double s_ = 0.0;                                                                           \
    _Pragma("unroll") for (int j = 0; j < L; ++j) s_ += (double)v_[j];                         \
    const float m_ = (float)(s_ / (double)L);                                                  \
    float q_ = 0.0f, c_ = 0.0f;                                                                \
    _Pragma("unroll") for (int j = 0; j < L; ++j) {                                            \
        const float d_ = v_[j] - m_;                                                           \
        q_ += d_ * d_;                                                                         \
        c_ += d_;                                                                              \
    }                                                                                          \
    const float y_ = (q_ - c_ * c_ / (float)L) / div;                                          \
    out[outoff + r] = what == 3 ? sqrt(y_) : y_;                                               \
    }

#define NV_ROWS(L) NV_ROWS_S(L) NV_ROWS_N(L) NV_ROWS_V(L)

NV_ROWS(2)
NV_ROWS(3)
NV_ROWS(4)
NV_ROWS(5)
NV_ROWS(6)
NV_ROWS(7)
NV_ROWS(8)
NV_ROWS(9)
NV_ROWS(10)
NV_ROWS(11)
NV_ROWS(12)
NV_ROWS(13)
NV_ROWS(14)
NV_ROWS(15)
NV_ROWS(16)
