/* cltune: argmax / argmin of a whole contiguous array on a CPU device, in vector registers
 * (served by cltune.stats.argvec on devices of type CPU).
 *
 * Every option has a default below, so the file compiles on its own; values reach it only as
 * -D integers made by cltune.stats.argvec from a supported dtype and the device's vector width
 * (house rule 2).
 *
 *   clt_argvec_chunks  work-item g scans its own contiguous chunk [g * chunk, (g + 1) * chunk)
 *                      of the n elements CLT_AV_W at a time (vloadW) into CLT_AV_U
 *                      accumulators, each a vector of the best values and a vector of the block
 *                      numbers they came from, updated by a compare and two selects (no branch:
 *                      the loop stays in vector registers on both CPU runtimes; several
 *                      accumulators, because one is bound by the compare -> select latency);
 *                      then the accumulators, the lanes and the tail (fewer than W elements)
 *                      are combined, and it writes the index of its chunk's winner to
 *                      part[partoff + g] (-1 for an empty chunk).
 *   clt_argvec_finish  one work-item combines the `parts` winners (reading their values again)
 *                      and writes the index to out[outoff]. With one chunk the host skips it:
 *                      clt_argvec_chunks writes the result itself.
 * The kernel boundary orders the partials: no atomics, no inter-group race.
 *
 * numpy's semantics: the first occurrence of the extreme wins; a NaN beats every number, and
 * the first NaN wins. A lane keeps its first extreme because its blocks are visited in order
 * and only a strictly greater value replaces it; accumulators, lanes, the tail and the chunks
 * are combined by value, ties by the smaller block number / index. NaNs stay out of the hot
 * compare chain: the loop only ORs `isnan` of every block into a mask, and a chunk that saw
 * one rescans itself up to its first NaN, its winner (a NaN in the tail alone is found by the
 * tail's own compare).
 * argmin is argmax of order-reversed values: `flip` is XORed into each value's bits: the sign
 * bit of a float (-x exactly; a NaN stays a NaN, -0.0 and 0.0 stay equal), every bit of an
 * integer (~x = MAX - x for unsigned, -1 - x for signed: exact, no overflow). flip = 0 is
 * argmax, so one program serves both.
 * Small integers (char, uchar, short, ushort) are compared widened to int lanes, whose block
 * numbers (int lanes too) fit the select of that lane width.
 * Indices are long (n and an index may pass 2^31); a block number counts vectors within one
 * chunk, in lanes of the compared values' width: the host keeps chunk / W below 2^31.
 */

#ifndef CLT_AV_TYPE
#define CLT_AV_TYPE 0 /* element: 0 float, 1 double, 2 char, 3 uchar, 4 short, 5 ushort,
                         6 int, 7 uint, 8 long, 9 ulong */
#endif
#ifndef CLT_AV_W
#define CLT_AV_W 16 /* lanes of a vector: 2, 4, 8 or 16 */
#endif
#ifndef CLT_AV_U
#define CLT_AV_U 2 /* accumulators a work-item keeps (1, 2 or 4): independent compare chains */
#endif

/* AV_T the element, AV_C what values are compared as, AV_M the mask and block-number lane of
 * AV_C's width */
#if CLT_AV_TYPE == 0
#define AV_T float
#define AV_C float
#define AV_M int
#define AV_FLOAT 1
#elif CLT_AV_TYPE == 1
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define AV_T double
#define AV_C double
#define AV_M long
#define AV_FLOAT 1
#elif CLT_AV_TYPE == 2
#define AV_T char
#elif CLT_AV_TYPE == 3
#define AV_T uchar
#elif CLT_AV_TYPE == 4
#define AV_T short
#elif CLT_AV_TYPE == 5
#define AV_T ushort
#elif CLT_AV_TYPE == 6
#define AV_T int
#define AV_C int
#define AV_M int
#elif CLT_AV_TYPE == 7
#define AV_T uint
#define AV_C uint
#define AV_M int
#elif CLT_AV_TYPE == 8
#define AV_T long
#define AV_C long
#define AV_M long
#elif CLT_AV_TYPE == 9
#define AV_T ulong
#define AV_C ulong
#define AV_M long
#else
#error "CLT_AV_TYPE must be 0..9"
#endif
#if CLT_AV_TYPE >= 2 && CLT_AV_TYPE <= 5
#define AV_C int
#define AV_M int
#define AV_WIDEN 1
#else
#define AV_WIDEN 0
#endif
#ifndef AV_FLOAT
#define AV_FLOAT 0
#endif
#if CLT_AV_W != 2 && CLT_AV_W != 4 && CLT_AV_W != 8 && CLT_AV_W != 16
#error "CLT_AV_W must be 2, 4, 8 or 16"
#endif
#if CLT_AV_U != 1 && CLT_AV_U != 2 && CLT_AV_U != 4
#error "CLT_AV_U must be 1, 2 or 4"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define AV_CV CAT(AV_C, CLT_AV_W)
#define AV_MV CAT(AV_M, CLT_AV_W)

#if AV_WIDEN
#define LOADV(b, p) CAT(convert_, AV_CV)(CAT(vload, CLT_AV_W)(b, p))
#else
#define LOADV(b, p) CAT(vload, CLT_AV_W)(b, p)
#endif
/* the order-reversing flip of a vector / of one value (argmin; flip = 0: argmax) */
#define FLIPV(v) CAT(as_, AV_CV)(CAT(as_, AV_MV)(v) ^ (AV_MV)(flip))
#define FLIP1(v) CAT(as_, AV_C)(CAT(as_, AV_M)(v) ^ flip)

/* the lanes where v beats best (all bits set): strictly larger. NaNs are not compared: a lane
 * that holds a NaN keeps it, and a NaN anywhere in a chunk is seen apart (`nans`), after which
 * the chunk's winner is its first NaN (a rescan up to it) */
#if AV_FLOAT
#define BETTER(v, best) isgreater(v, best)
#define SEE_NANS(v) nans |= isnan(v)
#else
#define BETTER(v, best) ((v) > (best))
#define SEE_NANS(v)
#endif

/* one block b into accumulator (best, blk) */
#define STEP(best, blk, b)                                                                     \
    {                                                                                          \
        const AV_CV v_ = FLIPV(LOADV(b, p));                                                   \
        SEE_NANS(v_);                                                                          \
        const AV_MV m_ = BETTER(v_, best);                                                     \
        best = select(best, v_, m_);                                                           \
        blk = select(blk, (AV_MV)(b), m_);                                                     \
    }
/* accumulator b into a, lane by lane: the larger value, on a tie the smaller block number */
#define MERGE(ba, ka, bb, kb)                                                                  \
    {                                                                                          \
        const AV_MV m_ = BETTER(bb, ba) | (((bb) == (ba)) & ((kb) < (ka)));                    \
        ba = select(ba, bb, m_);                                                               \
        ka = select(ka, kb, m_);                                                               \
    }

/* AV_SCAN: a chunk's nb >= 1 whole blocks from p into (b0, k0), declared here: CLT_AV_U
 * accumulators, each starting at block 0 (independent dependency chains), merged at the end,
 * then stored a lane each into lv (values) and lb (block numbers) */
#if CLT_AV_U >= 4
#define AV_DECL_MORE                                                                           \
    AV_CV b1 = b0, b2 = b0, b3 = b0;                                                           \
    AV_MV k1 = k0, k2 = k0, k3 = k0;
#define AV_STEP_MORE(b) STEP(b1, k1, b + 1) STEP(b2, k2, b + 2) STEP(b3, k3, b + 3)
#define AV_MERGE_MORE MERGE(b0, k0, b2, k2) MERGE(b1, k1, b3, k3) MERGE(b0, k0, b1, k1)
#elif CLT_AV_U >= 2
#define AV_DECL_MORE                                                                           \
    AV_CV b1 = b0;                                                                             \
    AV_MV k1 = k0;
#define AV_STEP_MORE(b) STEP(b1, k1, b + 1)
#define AV_MERGE_MORE MERGE(b0, k0, b1, k1)
#else
#define AV_DECL_MORE
#define AV_STEP_MORE(b)
#define AV_MERGE_MORE
#endif
#define AV_SCAN                                                                                \
    AV_CV b0 = FLIPV(LOADV(0, p));                                                             \
    AV_MV k0 = (AV_MV)(0);                                                                     \
    SEE_NANS(b0);                                                                              \
    AV_DECL_MORE                                                                               \
    {                                                                                          \
        AV_M b = 1;                                                                            \
        for (; b <= nb - CLT_AV_U; b += CLT_AV_U) {                                            \
            STEP(b0, k0, b)                                                                    \
            AV_STEP_MORE(b)                                                                    \
        }                                                                                      \
        for (; b < nb; ++b)                                                                    \
            STEP(b0, k0, b)                                                                    \
    }                                                                                          \
    AV_MERGE_MORE                                                                              \
    AV_C lv[CLT_AV_W];                                                                         \
    AV_M lb[CLT_AV_W];                                                                         \
    CAT(vstore, CLT_AV_W)(b0, 0, lv);                                                          \
    CAT(vstore, CLT_AV_W)(k0, 0, lb);

/* whether value v at index i beats bv at index bi: larger, or a NaN over a number; equal
 * values and two NaNs: the smaller index */
inline int clt_av_beats(const AV_C v, const long i, const AV_C bv, const long bi) {
#if AV_FLOAT
    const int vn = isnan(v), bn = isnan(bv);
    if (vn || bn)
        return vn && (!bn || i < bi);
#endif
    return v > bv || (v == bv && i < bi);
}

/* the best of `parts` chunk winners part[0], part[step], part[2 step], ... (indices into
 * x[xoff..]; -1: an empty chunk): its index, -1 where every chunk was empty */
inline long clt_av_pick(__global const AV_T *x, const long xoff, const AV_M flip,
                        __global const long *part, const long parts, const long step) {
    long bi = -1;
    AV_C bv = (AV_C)0;
    for (long g = 0; g < parts; ++g) {
        const long i = part[g * step];
        if (i < 0)
            continue;
        const AV_C v = FLIP1((AV_C)x[xoff + i]);
        if (bi < 0 || clt_av_beats(v, i, bv, bi)) {
            bv = v;
            bi = i;
        }
    }
    return bi;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_argvec_chunks(__global const AV_T *x, const long xoff, const long n, const long chunk,
                  const AV_M flip, __global long *part, const long partoff) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin); /* <= 0: a chunk past the end */
    __global const AV_T *p = x + xoff + begin;
    const AV_M nb = len > 0 ? (AV_M)(len / CLT_AV_W) : (AV_M)0;
    long bi = -1; /* within the chunk */
    AV_C bv = (AV_C)0;
#if AV_FLOAT
    AV_MV nans = (AV_MV)(0);
#endif
    if (nb > 0) {
        AV_SCAN
        bv = lv[0];
        bi = (long)lb[0] * CLT_AV_W;
        for (int l = 1; l < CLT_AV_W; ++l) {
            const long i = (long)lb[l] * CLT_AV_W + l;
            if (clt_av_beats(lv[l], i, bv, bi)) {
                bv = lv[l];
                bi = i;
            }
        }
    }
    for (long i = (long)nb * CLT_AV_W; i < len; ++i) {
        const AV_C v = FLIP1((AV_C)p[i]);
        if (bi < 0 || clt_av_beats(v, i, bv, bi)) {
            bv = v;
            bi = i;
        }
    }
#if AV_FLOAT
    if (any(nans)) { /* the first NaN of the chunk wins (one in the tail was found above) */
        for (long i = 0; i < len; ++i) {
            if (isnan(p[i])) {
                bi = i;
                break;
            }
        }
    }
#endif
    part[partoff + g] = bi < 0 ? -1L : begin + bi;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_argvec_finish(__global const AV_T *x, const long xoff, const long parts, const AV_M flip,
                  __global const long *part, __global long *out, const long outoff) {
    const long bi = clt_av_pick(x, xoff, flip, part, parts, 1);
    out[outoff] = bi;
}

/* Along rows: row `get_global_id(0)` of `rowlen` elements from x[xoff] was cut into `parts`
 * chunks by clt_argvec_chunks (one launch per row, xoff at the row, partoff = row * parts:
 * indices within the row); its winner -> out[outoff + row]. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_argvec_rows(__global const AV_T *x, const long xoff, const long rowlen, const long parts,
                const AV_M flip, __global const long *part, __global long *out,
                const long outoff) {
    const long row = get_global_id(0);
    const long base = xoff + row * rowlen;
    const long bi = clt_av_pick(x, base, flip, part + row * parts, parts, 1);
    out[outoff + row] = bi;
}

/* Along axis 0 of `cols` interleaved columns (a C-ordered (rows, cols) slab at x[xoff], cols
 * dividing CLT_AV_W, 2..16): the same scan as clt_argvec_chunks over the slab's n = rows x cols
 * elements, whose lane l then always holds column l % cols (chunks start at multiples of
 * CLT_AV_W); the lanes, the tail and a NaN rescan are combined per column, and chunk g writes
 * column c's winner, a flat index within the slab, to part[partoff + g * cols + c] (-1 for an
 * empty chunk). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_argvec_cols(__global const AV_T *x, const long xoff, const long n, const long chunk,
                const AV_M flip, const int cols, __global long *part, const long partoff) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin);
    __global const AV_T *p = x + xoff + begin;
    const AV_M nb = len > 0 ? (AV_M)(len / CLT_AV_W) : (AV_M)0;
    long ci[CLT_AV_W]; /* per column: its winner within the chunk (-1: none yet) and value */
    AV_C cv[CLT_AV_W];
    for (int c = 0; c < cols; ++c) {
        ci[c] = -1;
        cv[c] = (AV_C)0;
    }
#if AV_FLOAT
    AV_MV nans = (AV_MV)(0);
#endif
    if (nb > 0) {
        AV_SCAN
        for (int l = 0; l < CLT_AV_W; ++l) {
            const int c = l % cols;
            const long i = (long)lb[l] * CLT_AV_W + l;
            if (ci[c] < 0 || clt_av_beats(lv[l], i, cv[c], ci[c])) {
                cv[c] = lv[l];
                ci[c] = i;
            }
        }
    }
    for (long i = (long)nb * CLT_AV_W; i < len; ++i) {
        const int c = (int)(i % cols);
        const AV_C v = FLIP1((AV_C)p[i]);
        if (ci[c] < 0 || clt_av_beats(v, i, cv[c], ci[c])) {
            cv[c] = v;
            ci[c] = i;
        }
    }
#if AV_FLOAT
    if (any(nans)) { /* each column's first NaN wins (one in the tail was found above) */
        int seen = 0;
        for (long i = 0; i < len && seen != (1 << cols) - 1; ++i) {
            const int c = (int)(i % cols);
            if (!(seen & (1 << c)) && isnan(p[i])) {
                ci[c] = i;
                seen |= 1 << c;
            }
        }
    }
#endif
    for (int c = 0; c < cols; ++c)
        part[partoff + g * cols + c] = ci[c] < 0 ? -1L : begin + ci[c];
}

/* Column get_global_id(0) of clt_argvec_cols' `parts` chunks (from part[partoff]): its
 * winner's row -> out[outoff + column]. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_argvec_cols_finish(__global const AV_T *x, const long xoff, const long parts,
                       const AV_M flip, const int cols, __global const long *part,
                       const long partoff, __global long *out, const long outoff) {
    const int c = (int)get_global_id(0);
    const long bi = clt_av_pick(x, xoff, flip, part + partoff + c, parts, cols);
    out[outoff + c] = bi / cols;
}
