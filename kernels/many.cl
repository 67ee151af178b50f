/* cltune: many small reductions in one launch (the `many` family).
 *
 * Built as kernels/reduce.cl's header (its op, type, load and store macros; its 1-D kernels left
 * out with -DCLT_NO_1D=1) followed by this file. Every tunable has a default below, so the file
 * compiles on its own; values reach it only as -D options made from a validated ManyConfig.
 *
 * OpenCL 1.2 has no arrays of pointers as kernel arguments: a launch takes CLT_MANY_K buffer
 * arguments x0 .. x{K-1} (slots the host does not use get a dummy buffer) and `meta`, a table
 * of k + 1 group prefixes followed by k element offsets and k lengths (idx_t each):
 *   meta[0 .. k]            first[j]: the first work-group of array j (first[k]: all groups)
 *   meta[k + 1 + j]         off[j]: array j starts at element off[j] of its buffer x_j
 *   meta[2k + 1 + j]        len[j]: its elements
 * Every array has at least one group (an empty one: a group that writes the identity).
 * A group finds its array by binary search in the prefix (uniform across the group), reduces
 * its chunk of CLT_MANY_STEPS blocks of CLT_WG * CLT_ITEMS * CLT_VEC elements, and either
 * writes the array's result (an array of one group) or its partial; clt_many_fin, a group per
 * array, finishes the arrays of more than one group. No atomics: the kernel boundary orders
 * the partials. CLT_MANY_NORM squares every element on load and writes the square root.
 */

#ifndef CLT_MANY_K
#define CLT_MANY_K 16 /* buffer arguments per launch: 8, 16 or 32 */
#endif
#ifndef CLT_MANY_STEPS
#define CLT_MANY_STEPS 4 /* blocks per group: a chunk is STEPS * WG * ITEMS * VEC elements */
#endif
#ifndef CLT_MANY_NORM
#define CLT_MANY_NORM 0 /* 1: sum of squares (CLT_OP 0), square root at the end */
#endif

#if CLT_MANY_NORM
#define SQ(v) ((v) * (v))
#define FINAL(v) sqrt(v)
#else
#define SQ(v) (v)
#define FINAL(v) (v)
#endif

#define XP(i) __global const CLT_IN_T *x##i
#if CLT_MANY_K == 8
#define X_PARAMS \
    XP(0), XP(1), XP(2), XP(3), XP(4), XP(5), XP(6), XP(7)
#elif CLT_MANY_K == 16
#define X_PARAMS \
    XP(0), XP(1), XP(2), XP(3), XP(4), XP(5), XP(6), XP(7), XP(8), XP(9), XP(10), XP(11),       \
    XP(12), XP(13), XP(14), XP(15)
#elif CLT_MANY_K == 32
#define X_PARAMS \
    XP(0), XP(1), XP(2), XP(3), XP(4), XP(5), XP(6), XP(7), XP(8), XP(9), XP(10), XP(11),       \
    XP(12), XP(13), XP(14), XP(15), XP(16), XP(17), XP(18), XP(19), XP(20), XP(21), XP(22),     \
    XP(23), XP(24), XP(25), XP(26), XP(27), XP(28), XP(29), XP(30), XP(31)
#else
#error "CLT_MANY_K must be 8, 16 or 32"
#endif

/* what an empty array gives: numpy's 0 for sums and norms (not the -0.0 of IDENT) */
#if CLT_OP == 0
#define EMPTY ((acc_t)0)
#else
#define EMPTY IDENT
#endif

#define PICK(i)                                                                                \
    case i:                                                                                    \
        p = x##i;                                                                              \
        break;

/* the buffer of slot j (uniform in a group: no divergence) */
#define SELECT(j)                                                                              \
    switch (j) {                                                                               \
        PICK(1) PICK(2) PICK(3) PICK(4) PICK(5) PICK(6) PICK(7) SELECT16 SELECT32 default :    \
            p = x0;                                                                            \
    }
#if CLT_MANY_K >= 16
#define SELECT16                                                                               \
    PICK(8) PICK(9) PICK(10) PICK(11) PICK(12) PICK(13) PICK(14) PICK(15)
#else
#define SELECT16
#endif
#if CLT_MANY_K >= 32
#define SELECT32                                                                               \
    PICK(16) PICK(17) PICK(18) PICK(19) PICK(20) PICK(21) PICK(22) PICK(23) PICK(24) PICK(25)  \
        PICK(26) PICK(27) PICK(28) PICK(29) PICK(30) PICK(31)
#else
#define SELECT32
#endif

/* the array of group g: the last j < k with first[j] <= g (first[0] == 0 <= g < first[k]) */
inline uint many_find(__global const idx_t *meta, const uint k, const idx_t g) {
    uint lo = 0, hi = k;
    while (hi - lo > 1) {
        const uint mid = (lo + hi) >> 1;
        if (meta[mid] <= g) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* out[obase + j] = reduce(array j) for the k arrays of this launch; partials[pbase + g]: the
 * partial of group g where its array has more than one group. */
__kernel CLT_WG_ATTR void clt_many(X_PARAMS, __global const idx_t *meta, const uint k,
                                   __global acc_t *partials, const idx_t pbase,
                                   __global out_t *out, const uint obase,
                                   __local acc_t *tile) {
    const uint lid = get_local_id(0);
    const idx_t g = get_group_id(0);
    const uint j = many_find(meta, k, g);
    const idx_t first = meta[j];
    const idx_t groups = meta[j + 1] - first;
    const idx_t len = meta[2 * k + 1 + j];
    __global const CLT_IN_T *p;
    SELECT(j)
    p += meta[k + 1 + j];

    const idx_t block = (idx_t)CLT_WG * CLT_ITEMS * CLT_VEC;
    const idx_t start = (g - first) * (block * CLT_MANY_STEPS);
    const idx_t end = min(start + block * CLT_MANY_STEPS, len);

    accv_t acc[CLT_ITEMS];
    accv_t comp[CLT_ITEMS]; /* compensation (CLT_KAHAN: float32 on a device without fp64) */
#pragma unroll
    for (int q = 0; q < CLT_ITEMS; ++q) {
        acc[q] = (accv_t)IDENT;
        comp[q] = (accv_t)0;
    }
    idx_t i = start;
    for (; i + block <= end; i += block) {
#pragma unroll
        for (int q = 0; q < CLT_ITEMS; ++q) {
            const idx_t e = i + ((idx_t)q * CLT_WG + lid) * CLT_VEC;
            const accv_t v = LOADV_X(0, p + e);
            ACCUM(acc[q], comp[q], SQ(v));
        }
    }
    /* the rest of the chunk (the array's last), element by element */
    acc_t s = IDENT;
    acc_t c = (acc_t)0;
    for (idx_t e = i + lid; e < end; e += CLT_WG) {
        const acc_t v = LOAD1_X(e, p);
        ACCUM1(s, c, SQ(v));
    }
    s = ACC_FIN(s, c);
#pragma unroll
    for (int q = 0; q < CLT_ITEMS; ++q) s = OP(s, hreduce(ACC_FIN(acc[q], comp[q])));

    tile[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = CLT_WG / 2; stride > 0; stride >>= 1) {
        if (lid < stride) tile[lid] = OP(tile[lid], tile[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        if (groups == 1) STORE_OUT(out + obase + j, FINAL(len ? tile[0] : EMPTY));
        else partials[pbase + g] = tile[0];
    }
}

/* a group per array of this launch: the arrays of more than one group combine their partials */
__kernel CLT_WG_ATTR void clt_many_fin(__global const idx_t *meta, const uint k,
                                       __global acc_t *partials, const idx_t pbase,
                                       __global out_t *out, const uint obase,
                                       __local acc_t *tile) {
    const uint j = get_group_id(0);
    const idx_t first = meta[j];
    const idx_t groups = meta[j + 1] - first;
    if (groups <= 1) return; /* uniform in the group: no barrier is skipped by some only */
    const acc_t v = group_finish(partials + pbase + first, (uint)groups, tile);
    if (get_local_id(0) == 0) STORE_OUT(out + obase + j, FINAL(v));
}
