/* cltune scans (prefix sums, products, running min/max): reduce-then-scan, segments optional.
 *
 * Every tunable has a default below so the file compiles on its own; values reach it only as
 * -D options produced by cltune.families.scan.kernel.build_defines() from a validated
 * ScanConfig and variant (house rule 2).
 *
 * Layout rows (the scanned axis is contiguous; a 1-D scan is one row): the n elements are cut
 * into `G` chunks of `chunk` elements, one per work-group.
 *   clt_scan_reduce  each group reduces its chunk (from its last segment head on) -> partials
 *   clt_scan_top     one group turns the G partials into each chunk's carry-in (an exclusive
 *                    segmented scan), in place
 *   clt_scan_down    each group scans its chunk a tile (CLT_WG * CLT_ITEMS elements) at a
 *                    time: a work-item scans CLT_ITEMS consecutive elements in registers, the
 *                    group scans the work-items' totals (CLT_GROUP_SCAN), the carry joins.
 * With G == 1 only clt_scan_down runs (one launch: small inputs). In one chained pass instead
 * (CLT_CHAIN, below): clt_scan_chain a tile a group, clt_scan_chunks a chunk a group (its
 * reduce, a look-back over the chunks before it, its scan).
 * Segments (CLT_SEG): 0 none; 1 rows of `seglen` elements (an axis scan of a C-ordered
 * array, heads at multiples of seglen); 2 CSR offsets offs[0..m] (offs[0] == 0, offs[m] == n,
 * heads at offs[k]). A value combines across a head only from the right: the scan of (head,
 * value) pairs with (f1, v1) . (f2, v2) = (f1 | f2, f2 ? v2 : v1 OP v2), associative, so the
 * chunks, tiles and work-items cut the input anywhere.
 * Layout cols (the scanned axis is strided, inner > 1): a work-item scans a strip of
 * CLT_ITEMS neighbouring columns serially along r, neighbouring work-items neighbouring strips
 * (coalesced); the columns are split into `S` chunks of rows (the same three steps; a group
 * is wc strips by CLT_WG / wc chunks, and the top step spreads each column's S partials over
 * tr lanes).
 *
 * Rounding: floating-point values are combined in the result type, as numpy's accumulate
 * does, but an element meets at most chunk / CLT_WG + CLT_ITEMS + chunk / tile +
 * 2 log2(CLT_WG) + log2(G) roundings (the chained pass: + G, its carry passes the tiles
 * before it one by one) where numpy's sequential scan has i (the bound
 * families/scan/reference.py validates against).
 */

#ifndef CLT_OP
#define CLT_OP 0 /* 0 sum, 1 prod, 2 min, 3 max */
#endif
#ifndef CLT_IN_T
#define CLT_IN_T float
#endif
#ifndef CLT_ACC_T
#define CLT_ACC_T float /* integers sum and multiply in the unsigned type of the result */
#endif
#ifndef CLT_OUT_T
#define CLT_OUT_T float
#endif
#ifndef CLT_OUT_AS
#define CLT_OUT_AS 0 /* 1: the result is the accumulator's bits (unsigned -> signed) */
#endif
#ifndef CLT_IS_FLOAT
#define CLT_IS_FLOAT 1
#endif
#ifndef CLT_IDENT_INT
#define CLT_IDENT_INT 0 /* min/max of integers: the type's limit (INT_MAX, ...) */
#endif
#ifndef CLT_NEEDS_FP64
#define CLT_NEEDS_FP64 0
#endif
#ifndef CLT_WG
#define CLT_WG 64
#endif
#ifndef CLT_ITEMS
#define CLT_ITEMS 4 /* consecutive elements a work-item scans per tile (<= 32) */
#endif
#ifndef CLT_STAGE
#define CLT_STAGE 1 /* 1: tiles pass through __local memory (coalesced loads and stores); 2
                       (CPUs, wg 1): a work-item scans its chunk CLT_ITEMS (8 or 16) elements
                       at a time in vector registers (VSCAN below; elsewhere as 0) */
#endif
#ifndef CLT_GROUP_SCAN
#define CLT_GROUP_SCAN 0 /* 0 __local tree with barriers; 1 subgroup scans (sums); 2 NVIDIA's
                            warp shuffles (inline PTX) */
#endif
#ifndef CLT_NV_PTX
#define CLT_NV_PTX 0 /* the host saw NVIDIA's platform: inline PTX may be used */
#endif
#ifndef CLT_SEG
#define CLT_SEG 0
#endif
#ifndef CLT_OFF64
#define CLT_OFF64 0 /* offsets are long (else int) */
#endif
#ifndef CLT_EXCL
#define CLT_EXCL 0 /* 1: exclusive (element i gets the value of the elements before it) */
#endif
#ifndef CLT_ACC_BITS
#define CLT_ACC_BITS 32 /* the accumulator's width */
#endif
#ifndef CLT_CHAIN
#define CLT_CHAIN 0 /* 1: build clt_scan_chain (needs cl_khr_int64_base_atomics); 2: the same,
                       its look-back reading the state words by volatile 64-bit loads; 3:
                       clt_scan_chunks (the chained pass over chunks of many tiles) */
#endif

#if CLT_NEEDS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define TILE (CLT_WG * CLT_ITEMS)
#define WG_ATTR __attribute__((reqd_work_group_size(CLT_WG, 1, 1)))

typedef CLT_ACC_T acc_t;

#if defined(cl_khr_subgroups) || (defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 300 && defined(__opencl_c_subgroups))
#define HAVE_SG 1
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#else
#define HAVE_SG 0
#endif
/* subgroup scans have add, min and max (no multiply); floats' min/max must keep NaN */
#if CLT_GROUP_SCAN == 1 && HAVE_SG && CLT_OP == 0
#define SG_SCAN 1
#else
#define SG_SCAN 0
#endif

/* NVIDIA's warp shuffles (inline PTX; warps of 32 consecutive work-items), for any op and
 * segment mode; the tree where there is no PTX or the group is not whole warps */
#if CLT_NV_PTX || defined(cl_nv_pragma_unroll)
#define HAVE_NV_PTX 1
#else
#define HAVE_NV_PTX 0
#endif
#if CLT_GROUP_SCAN == 2 && HAVE_NV_PTX && CLT_WG % 32 == 0
#define WARP_SCAN 1
#else
#define WARP_SCAN 0
#endif

/* ---- the operation ----------------------------------------------------------------------- */
#if CLT_OP == 0
#if CLT_IS_FLOAT
#define IDENT ((acc_t)(-0.0f)) /* -0.0 + x == x, and a sum of -0.0s stays -0.0 */
#else
#define IDENT ((acc_t)0)
#endif
#define EMPTY ((acc_t)0) /* an exclusive scan's empty prefix: numpy's empty sum is +0.0 */
#define OP(a, b) ((a) + (b))
#elif CLT_OP == 1
#define IDENT ((acc_t)1)
#define EMPTY IDENT
#define OP(a, b) ((a) * (b))
#elif CLT_OP == 2
#if CLT_IS_FLOAT
#define IDENT ((acc_t)INFINITY)
#define OP(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b)) /* NaN propagates, as numpy's */
#else
#define IDENT ((acc_t)CLT_IDENT_INT)
#define OP(a, b) min((a), (b))
#endif
#define EMPTY IDENT
#elif CLT_OP == 3
#if CLT_IS_FLOAT
#define IDENT ((acc_t)(-INFINITY))
#define OP(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#else
#define IDENT ((acc_t)CLT_IDENT_INT)
#define OP(a, b) max((a), (b))
#endif
#define EMPTY IDENT
#endif

/* element -> accumulator: through the result type (an int8 sums as a sign-extended long) */
#define LOAD(v) ((acc_t)(CLT_OUT_T)(v))
#if CLT_OUT_AS
#define STORE(p, v) (*(p) = CAT(as_, CLT_OUT_T)(v))
#else
#define STORE(p, v) (*(p) = (CLT_OUT_T)(v))
#endif

/* ---- segment heads ------------------------------------------------------------------------
 * HEADS_FROM(i) sets `h` to the first head at or after i (LONG_MAX: none); HEADS_NEXT() moves
 * it past the current one. Index 0 is always a head (the exclusive scan's empty prefix). */
#if CLT_SEG == 2
#if CLT_OFF64
#define OFFS(k) (((__global const long *)offs)[(k)])
#else
#define OFFS(k) ((long)((__global const int *)offs)[(k)])
#endif
/* the first k in [0, m) with offs[k] >= i (m: none) */
inline long first_at_or_after(__global const void *offs, const long m, const long i) {
    long lo = 0, hi = m;
    while (lo < hi) {
        const long mid = (lo + hi) >> 1;
        if (OFFS(mid) < i) lo = mid + 1; else hi = mid;
    }
    return lo;
}
#define SEG_ARGS , const long seglen, __global const void *offs, const long m
#define HEADS_FROM(i)                                                                            \
    long hk = first_at_or_after(offs, m, (i));                                                 \
    long h = hk < m ? OFFS(hk) : LONG_MAX
#define HEADS_NEXT()                                                                             \
    do {                                                                                       \
        const long cur_ = h;                                                                   \
        while (hk < m && OFFS(hk) <= cur_) ++hk; /* empty segments share a head */             \
        h = hk < m ? OFFS(hk) : LONG_MAX;                                                      \
    } while (0)
/* the last head in [a, b) (< a: none) */
#define LAST_HEAD(a, b) ((b) > (a) ? OFFS(first_at_or_after(offs, m, (b)) - 1) : -1L)
#elif CLT_SEG == 1
#define SEG_ARGS , const long seglen, __global const void *offs, const long m
#define HEADS_FROM(i) long h = (((i) + seglen - 1) / seglen) * seglen
#define HEADS_NEXT() (h += seglen)
#define LAST_HEAD(a, b) ((b) > (a) ? (((b) - 1) / seglen) * seglen : -1L)
#else
#define SEG_ARGS , const long seglen, __global const void *offs, const long m
#define HEADS_FROM(i) long h = (i) == 0 ? 0L : LONG_MAX
#define HEADS_NEXT() (h = LONG_MAX)
#define LAST_HEAD(a, b) ((a) == 0 && (b) > 0 ? 0L : -1L)
#endif

#if WARP_SCAN
inline uint warp_up_u32(uint v, uint delta) {
    uint r;
    asm volatile("shfl.sync.up.b32 %0, %1, %2, 0x0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(delta));
    return r;
}
inline acc_t warp_up(acc_t v, uint delta) {
#if CLT_ACC_BITS == 64
    uint2 u = as_uint2(v);
    u.x = warp_up_u32(u.x, delta);
    u.y = warp_up_u32(u.y, delta);
    return CAT(as_, CLT_ACC_T)(u);
#elif CLT_ACC_BITS == 32
    return CAT(as_, CLT_ACC_T)(warp_up_u32(as_uint(v), delta));
#else
    return (acc_t)warp_up_u32((uint)v, delta); /* 8 and 16 bits: integers only */
#endif
}
#endif

/* ---- CPUs: a chunk scanned VW (CLT_ITEMS: 8 or 16) elements at a time in vector registers
 * (CLT_STAGE == 2) ---------------------------------------------------------------------------
 * One work-item a group walks its chunk: VW elements loaded as a vector, scanned in registers
 * (log2 VW shifted combines), the carry combined in, VW stored; the carry restarts at each
 * segment head. CLT_VU vectors a step: their scans are independent, the carry chain takes
 * one combine a step (carry . the step's own prefix of the vectors' totals), so neither pass
 * waits on an add's latency every vector. Sums, products and integer minima/maxima (floats'
 * min/max keep NaN element by element: the scalar path). */
#ifndef CLT_NT
#define CLT_NT 1 /* 1: the vector scan streams outputs of CLT_NT_BYTES and more past the caches
                    (where the compiler has __builtin_nontemporal_store) */
#endif
#ifndef CLT_NT_BYTES
#define CLT_NT_BYTES (8L << 20)
#endif
#ifndef CLT_VU
#define CLT_VU 4 /* vectors a step of the vector scan and reduce (1, 2, 4) */
#endif
#if CLT_STAGE == 2 && CLT_WG == 1 && (CLT_ITEMS == 8 || CLT_ITEMS == 16) &&                    \
    !(CLT_IS_FLOAT && CLT_OP >= 2)
#define VSCAN 1
#define VW CLT_ITEMS
#define VV CAT(CLT_ACC_T, VW)
#define OUTV CAT(CLT_OUT_T, VW)
#define VLOAD(p) CAT(convert_, VV)(CAT(convert_, OUTV)(CAT(vload, VW)(0, (p))))
#if CLT_OUT_AS
#define VOUT(v) CAT(as_, OUTV)(v)
#else
#define VOUT(v) CAT(convert_, OUTV)(v)
#endif
#define VSTORE(v, p) CAT(vstore, VW)(VOUT(v), 0, (p))
/* streaming stores (past the caches: a large output is not read back by the scan, and its
 * lines are then not fetched before being written), at addresses aligned to the vector */
#if CLT_NT && defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define HAVE_NT 1
#define VSTORE_NT(v, p) __builtin_nontemporal_store(VOUT(v), (__global OUTV *)(p))
#define MISALIGNED(p) (((ulong)(p)) & (ulong)(sizeof(OUTV) - 1))
#endif
#endif
#ifndef HAVE_NT
#define HAVE_NT 0
#endif
#define VOP(a, b) OP((a), (b)) /* +, * and integer min/max work on vectors */
#if VW == 16
#define VLAST(v) ((v).sf)
/* (carry, v0 .. v14): an exclusive scan's shift by one */
#define VSHIFT1(c, v)                                                                            \
    ((VV)((c), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6, (v).s7, (v).s8, (v).s9,  \
          (v).sa, (v).sb, (v).sc, (v).sd, (v).se))
inline VV vscan(VV v) {
    const acc_t I = IDENT;
    v = VOP(VSHIFT1(I, v), v);
    v = VOP((VV)(I, I, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7, v.s8, v.s9, v.sa, v.sb,
                 v.sc, v.sd), v);
    v = VOP((VV)(I, I, I, I, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7, v.s8, v.s9, v.sa,
                 v.sb), v);
    v = VOP((VV)(I, I, I, I, I, I, I, I, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7), v);
    return v;
}
inline acc_t vtotal(VV v) {
    const CAT(CLT_ACC_T, 8) h = VOP(v.lo, v.hi);
    return OP(OP(OP(h.s0, h.s1), OP(h.s2, h.s3)), OP(OP(h.s4, h.s5), OP(h.s6, h.s7)));
}
#else
#define VLAST(v) ((v).s7)
#define VSHIFT1(c, v) ((VV)((c), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6))
inline VV vscan(VV v) {
    const acc_t I = IDENT;
    v = VOP(VSHIFT1(I, v), v);
    v = VOP((VV)(I, I, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5), v);
    v = VOP((VV)(I, I, I, I, v.s0, v.s1, v.s2, v.s3), v);
    return v;
}
inline acc_t vtotal(VV v) {
    return OP(OP(OP(v.s0, v.s1), OP(v.s2, v.s3)), OP(OP(v.s4, v.s5), OP(v.s6, v.s7)));
}
#endif
#define VSTEP (VW * CLT_VU)
#else
#define VSCAN 0
#endif

/* ---- a group's combine of per-work-item (flag, value) pairs ------------------------------- */
/* (f1, v1) . (f2, v2) */
#define SEG_COMBINE(f1, v1, f2, v2, fo, vo)                                                      \
    do {                                                                                       \
        vo = (f2) ? (v2) : OP((v1), (v2));                                                     \
        fo = (f1) | (f2);                                                                      \
    } while (0)

/* The exclusive scan over the group's work-items of (f, v) (returned in *ef, *ev: the pairs
 * before this work-item; work-item 0 gets (0, IDENT)) and the group's total (*tf, *tv). Every
 * work-item calls it (barriers); sv/sf are __local scratch of CLT_WG. */
inline void group_scan(uint f, acc_t v, uint *ef, acc_t *ev, uint *tf, acc_t *tv,
                       __local acc_t *sv, __local uint *sf) {
    const uint lid = get_local_id(0);
#if SG_SCAN && CLT_SEG == 0
    /* unsegmented sums: the subgroups' own scans, then the subgroups' totals in __local */
    const acc_t incl = sub_group_scan_inclusive_add(v);
    const uint sg = get_sub_group_id(), nsg = get_num_sub_groups();
    if (get_sub_group_local_id() == get_sub_group_size() - 1) sv[sg] = incl;
    barrier(CLK_LOCAL_MEM_FENCE);
    acc_t before = IDENT, all = IDENT;
    for (uint k = 0; k < nsg; ++k) {
        const acc_t t = sv[k];
        if (k < sg) before = OP(before, t);
        all = OP(all, t);
    }
    *ev = OP(before, incl - v); /* exclusive within the subgroup: sums only (SG_SCAN) */
    *ef = 0;
    *tv = all;
    *tf = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
#elif WARP_SCAN
    /* the warp's inclusive scan of (f, v) by shfl.sync.up, then the warps' totals in __local
     * (one barrier to publish them, one before sv/sf are reused) */
    const uint lane = lid & 31u, w = lid >> 5;
#if !CLT_SEG
    f = 0u; /* no segments: the one head (element 0) has nothing before it to cut off */
#endif
    for (uint off = 1; off < 32; off <<= 1) {
        const acc_t pv = warp_up(v, off); /* every lane shuffles: never under a condition */
        const uint pf = CLT_SEG ? warp_up_u32(f, off) : 0u;
        if (lane >= off) SEG_COMBINE(pf, pv, f, v, f, v);
    }
    acc_t xv = warp_up(v, 1u);
    uint xf = CLT_SEG ? warp_up_u32(f, 1u) : 0u;
    if (lane == 0) {
        xv = IDENT;
        xf = 0u;
    }
    if (lane == 31u) {
        sv[w] = v;
        sf[w] = f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    acc_t bv = IDENT, av = IDENT;
    uint bf = 0u, af = 0u;
    for (uint k = 0; k < CLT_WG / 32; ++k) {
        const acc_t t = sv[k];
        const uint tfl = sf[k];
        if (k == w) {
            bv = av;
            bf = af;
        }
        SEG_COMBINE(af, av, tfl, t, af, av);
    }
    SEG_COMBINE(bf, bv, xf, xv, *ef, *ev);
    *tv = av;
    *tf = af;
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    sv[lid] = v;
    sf[lid] = f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < CLT_WG; off <<= 1) {
        acc_t pv = IDENT;
        uint pf = 0;
        const int take = lid >= off;
        if (take) {
            pv = sv[lid - off];
            pf = sf[lid - off];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (take) {
            SEG_COMBINE(pf, pv, f, v, f, v);
            sv[lid] = v;
            sf[lid] = f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *ev = lid > 0 ? sv[lid - 1] : IDENT;
    *ef = lid > 0 ? sf[lid - 1] : 0u;
    *tv = sv[CLT_WG - 1];
    *tf = sf[CLT_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE); /* sv/sf are free again */
#endif
}

/* ---- rows: 1) reduce each chunk from its last head on -------------------------------------- */
/* CHUNK_REDUCE(a, b): `last` (the chunk's last head, < a: none) and `total` (its elements
 * from that head on, combined), for every work-item of the group (barriers; sv is scratch) */
#if VSCAN
#define CHUNK_REDUCE(a, b)                                                                       \
    const long last = LAST_HEAD((a), (b));                                                     \
    acc_t total;                                                                               \
    {                                                                                          \
        VV va_[CLT_VU];                                                                        \
        _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_) va_[u_] = (VV)(IDENT);           \
        long i_ = last >= (a) ? last : (a);                                                    \
        for (; i_ + VSTEP <= (b); i_ += VSTEP) {                                               \
            _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_)                              \
                va_[u_] = VOP(va_[u_], VLOAD(xp + i_ + u_ * VW));                              \
        }                                                                                      \
        for (; i_ + VW <= (b); i_ += VW) va_[0] = VOP(va_[0], VLOAD(xp + i_));                 \
        _Pragma("unroll") for (int u_ = 1; u_ < CLT_VU; ++u_) va_[0] = VOP(va_[0], va_[u_]);   \
        total = vtotal(va_[0]);                                                                \
        for (; i_ < (b); ++i_) total = OP(total, LOAD(xp[i_]));                                \
    }
#else
#define CHUNK_REDUCE(a, b)                                                                       \
    const long last = LAST_HEAD((a), (b));                                                     \
    acc_t total;                                                                               \
    {                                                                                          \
        acc_t acc_[CLT_ITEMS];                                                                 \
        _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) acc_[k] = IDENT;                 \
        long i_ = (last >= (a) ? last : (a)) + lid;                                            \
        for (; i_ + (long)(CLT_ITEMS - 1) * CLT_WG < (b); i_ += (long)TILE) {                 \
            _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k)                              \
                acc_[k] = OP(acc_[k], LOAD(xp[i_ + (long)k * CLT_WG]));                         \
        }                                                                                      \
        for (; i_ < (b); i_ += CLT_WG) acc_[0] = OP(acc_[0], LOAD(xp[i_]));                    \
        _Pragma("unroll") for (int k = 1; k < CLT_ITEMS; ++k) acc_[0] = OP(acc_[0], acc_[k]);  \
        sv[lid] = acc_[0];                                                                     \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        for (uint s_ = CLT_WG / 2; s_ > 0; s_ >>= 1) {                                         \
            if (lid < s_) sv[lid] = OP(sv[lid], sv[lid + s_]);                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        }                                                                                      \
        total = sv[0];                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE); /* sv is free again */                                   \
    }
#endif

/* A cols build (CLT_LAYOUT_COLS) compiles the cols kernels only: wide strips' CLT_ITEMS (up to
 * 1024) are no tile for the rows kernels (Intel's CPU compiler crashed, in 'Machine
 * InstCombiner', on the rows kernels of integer minima with 128 and more items) */
#ifndef CLT_LAYOUT_COLS
#define CLT_LAYOUT_COLS 0
#endif
#if !CLT_LAYOUT_COLS
__kernel WG_ATTR void
clt_scan_reduce(__global const CLT_IN_T *x, const long xoff, const long n, const long chunk
                SEG_ARGS, __global acc_t *pv, __global uint *pf) {
    __local acc_t sv[CLT_WG];
    const uint lid = get_local_id(0);
    const long a = (long)get_group_id(0) * chunk;
    const long b = min(a + chunk, n);
    __global const CLT_IN_T *xp = x + xoff;
    CHUNK_REDUCE(a, b)
    if (lid == 0) {
        pv[get_group_id(0)] = total;
        pf[get_group_id(0)] = last >= a;
    }
}

/* ---- 2) the chunks' carries: exclusive segmented scan of the G partials, in place -------- */
__kernel WG_ATTR void clt_scan_top(__global acc_t *pv, __global const uint *pf, const long G) {
    __local acc_t sv[CLT_WG];
    __local uint sf[CLT_WG];
    const uint lid = get_local_id(0);
    acc_t carry = IDENT;
    for (long base = 0; base < G; base += CLT_WG) {
        const long g = base + lid;
        const acc_t v = g < G ? pv[g] : IDENT;
        const uint f = g < G ? pf[g] : 0u;
        uint ef, tf;
        acc_t ev, tv;
        group_scan(f, v, &ef, &ev, &tf, &tv, sv, sf);
        acc_t mine;
        uint fo;
        SEG_COMBINE(0u, carry, ef, ev, fo, mine);
        if (g < G) pv[g] = mine;
        uint fc;
        SEG_COMBINE(0u, carry, tf, tv, fc, carry);
    }
}

/* ---- 3) scan each chunk with its carry-in --------------------------------------------------- */
#define PAD(j) ((j) + ((j) >> 5)) /* __local index: a work-item's CLT_ITEMS avoid one bank */
#if CLT_STAGE == 1
#define STAGE_DECL __local acc_t stage[PAD(TILE) + 1];
#else
#define STAGE_DECL
#endif

/* TILE_SCAN(t, b): the tile of elements [t, b) (t: its first) scanned without its carry, in
 * the caller's names: r[k] this work-item's elements scanned in registers (restarting at
 * heads, bit k of `heads`), (ef, ev) the pairs of the work-items before it, (tf, tv) the tile's
 * total. TILE_STORE(t, b, in): the results, `in` being everything before this work-item's
 * first element (the carry and the work-items before it), stored to op[t, b). Every
 * work-item runs both (barriers). Macros, not functions: Debian's PoCL 3.1 aborts building
 * the work-group loops of these barriers inside an inlined function inside the tile loop
 * ("Could not find a dominating alternative variable", max/int32, wg=1). */
#if CLT_STAGE == 1
#define TILE_LOAD(t, b)                                                                          \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) {                                    \
        const long i_ = (t) + (long)k * CLT_WG + lid;                                          \
        stage[PAD(k * CLT_WG + lid)] = i_ < (b) ? LOAD(xp[i_]) : IDENT;                        \
    }                                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) r[k] = stage[PAD(lid * CLT_ITEMS + k)];
#define TILE_PUT(t, b)                                                                           \
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read its elements from the stage */          \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) stage[PAD(lid * CLT_ITEMS + k)] = r[k]; \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) {                                    \
        const long i_ = (t) + (long)k * CLT_WG + lid;                                          \
        if (i_ < (b)) STORE(op + i_, stage[PAD(k * CLT_WG + lid)]);                            \
    }                                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE); /* the stage is free for the next tile */
#else
#define TILE_LOAD(t, b)                                                                          \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k)                                      \
        r[k] = t0 + k < (b) ? LOAD(xp[t0 + k]) : IDENT;
#define TILE_PUT(t, b)                                                                           \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k)                                      \
        if (t0 + k < (b)) STORE(op + t0 + k, r[k]);
#endif
#define TILE_SCAN(t, b)                                                                          \
    const long t0 = (t) + (long)lid * CLT_ITEMS; /* this work-item's first element */          \
    TILE_LOAD(t, b)                                                                            \
    HEADS_FROM(t0);                                                                            \
    uint heads = 0;                                                                            \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) {                                    \
        if (t0 + k == h && t0 + k < (b)) {                                                     \
            heads |= 1u << k;                                                                  \
            HEADS_NEXT();                                                                      \
        } else if (k > 0) {                                                                    \
            r[k] = OP(r[k - 1], r[k]);                                                         \
        }                                                                                      \
    }                                                                                          \
    uint ef, tf;                                                                               \
    acc_t ev, tv;                                                                              \
    group_scan(heads != 0, r[CLT_ITEMS - 1], &ef, &ev, &tf, &tv, sv, sf);
#if CLT_EXCL
#define TILE_APPLY(in)                                                                           \
    do {                                                                                       \
        acc_t prev_ = (in);                                                                    \
        _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k) {                                \
            const int hd_ = (heads >> k) & 1u;                                                 \
            const acc_t incl_ = (heads & ((2u << k) - 1u)) ? r[k] : OP((in), r[k]);           \
            const acc_t e_ = hd_ ? EMPTY : prev_;                                              \
            prev_ = incl_;                                                                     \
            r[k] = e_;                                                                         \
        }                                                                                      \
    } while (0)
#else
#define TILE_APPLY(in)                                                                           \
    _Pragma("unroll") for (int k = 0; k < CLT_ITEMS; ++k)                                      \
        if (!(heads & ((2u << k) - 1u))) r[k] = OP((in), r[k]);
#endif
#define TILE_STORE(t, b, in)                                                                     \
    TILE_APPLY(in);                                                                            \
    TILE_PUT(t, b)

/* CHUNK_SCAN(a, b, carry): the chunk [a, b) scanned a tile at a time into op, `carry` (a
 * variable: everything before a) carried across the tiles */
#if VSCAN && CLT_EXCL /* hd: the head the segment piece starts at (-1: none) */
#define VPUT(S, v, carry, t, hd)                                                                 \
    do {                                                                                       \
        VV e_ = VSHIFT1((carry), (v));                                                         \
        if ((t) == (hd)) e_.s0 = EMPTY; /* numpy's empty prefix */                             \
        S(e_, op + (t));                                                                       \
    } while (0)
#define SPUT(v, carry, t, hd) STORE(op + (t), (t) == (hd) ? EMPTY : (carry))
#else
#define VPUT(S, v, carry, t, hd) S((v), op + (t))
#define SPUT(v, carry, t, hd) STORE(op + (t), (v))
#endif
#if VSCAN && CLT_SEG == 1
/* Rows shorter than a vector (seglen < VW, and <= CLT_SEG_VMASK) (CPUs): every vector
 * scanned whole as (head flag, value) pairs, the flags from the row length (a head where the
 * position in the row is 0: a table of the VW phases), in log2(VW) shifted steps ((f1, v1) .
 * (f2, v2) = (f1 | f2, f2 ? v2 : v1 op v2)), the carry combined into the lanes before the
 * vector's first head. Piece by piece, such rows went one element at a time. float32 sums
 * (scripts/experiments/scan_seg_rows_ab.py, 2-core Intel Xeon, docs/logs/cpu-scan-seg-rows-
 * 2026-12-07.txt): rows of 5 1.38x / 1.94x faster on Debian's PoCL / Intel's runtime, rows of
 * 7 1.21x / 1.82x; rows of 16 and 100 ran slower this way (0.59-0.92x: a vector's flagged
 * steps cost more than a piece's plain ones where a row holds whole vectors) */
#ifndef CLT_SEG_VMASK
#define CLT_SEG_VMASK VW
#endif
#if CLT_ACC_BITS == 64
#define MSK_T long
#elif CLT_ACC_BITS == 32
#define MSK_T int
#elif CLT_ACC_BITS == 16
#define MSK_T short
#else
#define MSK_T char
#endif
#define MV CAT(MSK_T, VW)
#define IV32 CAT(int, VW)
#if VW == 16
#define LANES ((IV32)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define SHV1(T, v, f)                                                                            \
    ((T)((f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6, (v).s7, (v).s8, (v).s9,   \
         (v).sa, (v).sb, (v).sc, (v).sd, (v).se))
#define SHV2(T, v, f)                                                                            \
    ((T)((f), (f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6, (v).s7, (v).s8,      \
         (v).s9, (v).sa, (v).sb, (v).sc, (v).sd))
#define SHV4(T, v, f)                                                                            \
    ((T)((f), (f), (f), (f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6, (v).s7,    \
         (v).s8, (v).s9, (v).sa, (v).sb))
#define SHV8(T, v, f)                                                                            \
    ((T)((f), (f), (f), (f), (f), (f), (f), (f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, \
         (v).s6, (v).s7))
#else
#define LANES ((IV32)(0, 1, 2, 3, 4, 5, 6, 7))
#define SHV1(T, v, f) ((T)((f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5, (v).s6))
#define SHV2(T, v, f) ((T)((f), (f), (v).s0, (v).s1, (v).s2, (v).s3, (v).s4, (v).s5))
#define SHV4(T, v, f) ((T)((f), (f), (f), (f), (v).s0, (v).s1, (v).s2, (v).s3))
#endif
/* one step of the flagged scan: lanes k >= S take (f[k-S], v[k-S]) . (f[k], v[k]) */
#define SEGV_STEP(SH, v, f)                                                                      \
    do {                                                                                       \
        const VV sv_ = SH(VV, v, IDENT);                                                       \
        const MV sf_ = SH(MV, f, (MSK_T)0);                                                    \
        v = select(VOP(sv_, v), v, f);                                                         \
        f = f | sf_;                                                                           \
    } while (0)
#if VW == 16
#define SEGV_SCAN(v, f)                                                                          \
    SEGV_STEP(SHV1, v, f);                                                                     \
    SEGV_STEP(SHV2, v, f);                                                                     \
    SEGV_STEP(SHV4, v, f);                                                                     \
    SEGV_STEP(SHV8, v, f)
#else
#define SEGV_SCAN(v, f)                                                                          \
    SEGV_STEP(SHV1, v, f);                                                                     \
    SEGV_STEP(SHV2, v, f);                                                                     \
    SEGV_STEP(SHV4, v, f)
#endif
#if CLT_EXCL /* h: the vector's head lanes (before the scan) */
#define SEGV_PUT(S, v, carry, t, h)                                                              \
    S(select(VSHIFT1((carry), (v)), (VV)(EMPTY), (h)), op + (t))
#define SEGS_PUT(v, carry, t, hd) STORE(op + (t), (hd) ? EMPTY : (carry))
#else
#define SEGV_PUT(S, v, carry, t, h) S((v), op + (t))
#define SEGS_PUT(v, carry, t, hd) STORE(op + (t), (v))
#endif
/* [t_, e) one element at a time (p_: t_'s position in its row) */
#define SEGS_STEPS(e)                                                                            \
    for (; t_ < (e); ++t_) {                                                                   \
        const int hd_ = p_ == 0;                                                               \
        const acc_t x_ = LOAD(xp[t_]);                                                         \
        const acc_t v_ = hd_ ? x_ : OP(carry, x_);                                             \
        SEGS_PUT(v_, carry, t_, hd_);                                                          \
        carry = v_;                                                                            \
        if (++p_ == (uint)seglen) p_ = 0;                                                      \
    }
/* the head lanes of the vector at position p_ of its row, as flags (-1); p_ moves on a vector */
#define SEGV_HEADS(h)                                                                            \
    do {                                                                                       \
        h = CAT(convert_, MV)(-(((IV32)((int)patt_[p_]) >> LANES) & 1));                      \
        p_ += step_;                                                                           \
        if (p_ >= (uint)seglen) p_ -= (uint)seglen;                                            \
    } while (0)
/* CLT_VU vectors a step, scanned independently; the carry's chain takes one combine a step
 * (carry . the step's own flagged prefix before each vector), as VLOOPS */
#define SEGV_LOOP(S, b)                                                                          \
    for (; t_ + VSTEP <= (b); t_ += VSTEP) {                                                   \
        VV s_[CLT_VU];                                                                         \
        MV h_[CLT_VU], f_[CLT_VU];                                                             \
        _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_) {                                \
            SEGV_HEADS(h_[u_]);                                                                \
            f_[u_] = h_[u_];                                                                   \
            s_[u_] = VLOAD(xp + t_ + u_ * VW);                                                 \
            SEGV_SCAN(s_[u_], f_[u_]);                                                         \
        }                                                                                      \
        acc_t pv_ = IDENT; /* the step's own prefix before vector u_, and whether it has a    \
                              head */                                                          \
        int pf_ = 0;                                                                           \
        _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_) {                                \
            const acc_t c_ = pf_ ? pv_ : OP(carry, pv_);                                       \
            const int any_ = any(f_[u_]);                                                      \
            pv_ = any_ ? VLAST(s_[u_]) : OP(pv_, VLAST(s_[u_]));                               \
            pf_ |= any_;                                                                       \
            const VV v_ = select(VOP((VV)(c_), s_[u_]), s_[u_], f_[u_]);                       \
            SEGV_PUT(S, v_, c_, t_ + u_ * VW, h_[u_]);                                         \
        }                                                                                      \
        carry = pf_ ? pv_ : OP(carry, pv_);                                                    \
    }                                                                                          \
    for (; t_ + VW <= (b); t_ += VW) {                                                         \
        MV h_, f_;                                                                             \
        SEGV_HEADS(h_);                                                                        \
        f_ = h_;                                                                               \
        VV v_ = VLOAD(xp + t_);                                                                \
        SEGV_SCAN(v_, f_);                                                                     \
        v_ = select(VOP((VV)(carry), v_), v_, f_);                                             \
        SEGV_PUT(S, v_, carry, t_, h_);                                                        \
        carry = VLAST(v_);                                                                     \
    }
#if HAVE_NT
#define SEGV_BODY(b)                                                                             \
    if (n * (long)sizeof(CLT_OUT_T) >= CLT_NT_BYTES) {                                         \
        long e0_ = t_;                                                                         \
        while (e0_ < (b) && MISALIGNED(op + e0_)) ++e0_;                                       \
        SEGS_STEPS(e0_)                                                                        \
        SEGV_LOOP(VSTORE_NT, b)                                                                \
    } else {                                                                                   \
        SEGV_LOOP(VSTORE, b)                                                                   \
    }
#else
#define SEGV_BODY(b) SEGV_LOOP(VSTORE, b)
#endif
#define CHUNK_SCAN_MASKED(a, b, carry)                                                           \
    {                                                                                          \
        uint patt_[VW]; /* the head lanes (bits) of a vector starting at position p */        \
        for (uint p = 0; p < (uint)seglen; ++p) {                                              \
            uint m = 0;                                                                        \
            for (uint k = p ? (uint)seglen - p : 0u; k < VW; k += (uint)seglen) m |= 1u << k;  \
            patt_[p] = m;                                                                      \
        }                                                                                      \
        const uint step_ = (uint)(VW % seglen);                                                \
        long t_ = (a);                                                                         \
        uint p_ = (uint)(t_ % seglen);                                                         \
        SEGV_BODY(b)                                                                           \
        SEGS_STEPS(b)                                                                          \
    }
#endif
#if VSCAN /* segment piece by segment piece: the carry restarts at each head */
/* VLOOPS(S): the vectors of the piece [t_, e_), stored by S: CLT_VU at a time (their scans
 * independent, the carry's chain one combine a step), then one at a time */
#define VLOOPS(S)                                                                                \
    for (; t_ + VSTEP <= e_; t_ += VSTEP) {                                                    \
        VV s_[CLT_VU];                                                                         \
        acc_t c_[CLT_VU]; /* the carry before each vector */                                   \
        _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_)                                  \
            s_[u_] = vscan(VLOAD(xp + t_ + u_ * VW));                                          \
        acc_t p_ = VLAST(s_[0]); /* the step's own prefix: off the carry's chain */            \
        c_[0] = carry;                                                                         \
        _Pragma("unroll") for (int u_ = 1; u_ < CLT_VU; ++u_) {                                \
            c_[u_] = OP(carry, p_);                                                            \
            p_ = OP(p_, VLAST(s_[u_]));                                                        \
        }                                                                                      \
        _Pragma("unroll") for (int u_ = 0; u_ < CLT_VU; ++u_) {                                \
            const VV v_ = VOP((VV)(c_[u_]), s_[u_]);                                           \
            VPUT(S, v_, c_[u_], t_ + u_ * VW, hd_);                                            \
        }                                                                                      \
        carry = OP(carry, p_);                                                                 \
    }                                                                                          \
    for (; t_ + VW <= e_; t_ += VW) {                                                          \
        VV v_ = VOP((VV)(carry), vscan(VLOAD(xp + t_)));                                       \
        VPUT(S, v_, carry, t_, hd_);                                                           \
        carry = VLAST(v_);                                                                     \
    }
#define SSTEPS(cond)                                                                             \
    for (; t_ < e_ && (cond); ++t_) {                                                          \
        const acc_t v_ = OP(carry, LOAD(xp[t_]));                                              \
        SPUT(v_, carry, t_, hd_);                                                              \
        carry = v_;                                                                            \
    }
#if HAVE_NT /* large outputs: up to the vectors' alignment one at a time, then streamed */
#define VPIECE                                                                                   \
    if (n * (long)sizeof(CLT_OUT_T) >= CLT_NT_BYTES) {                                         \
        SSTEPS(MISALIGNED(op + t_))                                                            \
        VLOOPS(VSTORE_NT)                                                                      \
    } else {                                                                                   \
        VLOOPS(VSTORE)                                                                         \
    }
#else
#define VPIECE VLOOPS(VSTORE)
#endif
#if CLT_SEG == 1
#define CHUNK_SCAN(a, b, carry)                                                                  \
    if (seglen < VW && seglen <= CLT_SEG_VMASK) {                                              \
        CHUNK_SCAN_MASKED(a, b, carry)                                                         \
    } else {                                                                                   \
        CHUNK_SCAN_PIECES(a, b, carry)                                                         \
    }
#else
#define CHUNK_SCAN(a, b, carry) CHUNK_SCAN_PIECES(a, b, carry)
#endif
#define CHUNK_SCAN_PIECES(a, b, carry)                                                           \
    {                                                                                          \
        HEADS_FROM(a);                                                                         \
        long t_ = (a);                                                                         \
        while (t_ < (b)) {                                                                     \
            long hd_ = -1;                                                                     \
            if (t_ == h) {                                                                     \
                hd_ = t_;                                                                      \
                carry = IDENT;                                                                 \
                HEADS_NEXT();                                                                  \
            }                                                                                  \
            const long e_ = min(h, (long)(b));                                                 \
            VPIECE                                                                             \
            SSTEPS(1)                                                                          \
        }                                                                                      \
    }
#else
#define CHUNK_SCAN(a, b, carry)                                                                  \
    for (long t = (a); t < (b); t += TILE) {                                                   \
        acc_t r[CLT_ITEMS];                                                                    \
        TILE_SCAN(t, (b))                                                                      \
        acc_t in;                                                                              \
        uint fi;                                                                               \
        SEG_COMBINE(0u, carry, ef, ev, fi, in); /* everything before my first element */       \
        TILE_STORE(t, (b), in)                                                                 \
        SEG_COMBINE(0u, carry, tf, tv, fi, carry);                                             \
    }
#endif

__kernel WG_ATTR void
clt_scan_down(__global const CLT_IN_T *x, const long xoff, const long n, const long chunk
              SEG_ARGS, __global const acc_t *carries, const uint has_carries,
              __global CLT_OUT_T *out, const long ooff) {
    __local acc_t sv[CLT_WG];
    __local uint sf[CLT_WG];
    STAGE_DECL
    const long a = (long)get_group_id(0) * chunk;
    const long b = min(a + chunk, n);
    __global const CLT_IN_T *xp = x + xoff;
    __global CLT_OUT_T *op = out + ooff;
    acc_t carry = has_carries ? carries[get_group_id(0)] : IDENT;
    const uint lid = get_local_id(0);
    CHUNK_SCAN(a, b, carry)
}

/* ---- rows in one pass: a chained scan with decoupled look-back ------------------------------
 * A group takes a ticket (an atomic counter: tiles are handed out in the order groups start,
 * so a group only ever waits on groups that already run, on any device that runs a started
 * group to its end), scans its tile, publishes the tile's total (state A) in status[ticket],
 * then walks back over its predecessors' states, CLT_LB at a time, combining totals until it
 * meets an inclusive prefix (state P) or a tile holding a segment head, publishes its own
 * inclusive prefix (P) and stores the tile with that carry: ~2n bytes moved (CUB's decoupled
 * look-back), one launch, no partials buffer to clear between calls.
 * A state word (64 bits, written and read only by 64-bit atomics) holds the value's 32 bits
 * (high), the call's epoch (bits 3..31: words of earlier calls read as "not yet"), the tile's
 * head flag (bit 2) and the state (bits 0..1: 0 not yet, 1 A, 2 P). A 64-bit accumulator
 * takes two words, each with its half and the same flags: a reader takes the pair only when
 * both carry the same epoch and state, so no fence orders the two stores. */
#if CLT_CHAIN
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifndef CLT_LB
#define CLT_LB (CLT_WG < 32 ? CLT_WG : 32)
#endif
#define ST_A 1u
#define ST_P 2u
#define EPOCH_MASK 0x1FFFFFFFu
#if CLT_ACC_BITS == 64
#define NW 2
#if CLT_IS_FLOAT
#define ENC(v) as_ulong(v)
#define DEC(u) as_double(u)
#else
#define ENC(v) ((ulong)(v))
#define DEC(u) ((acc_t)(u))
#endif
#else
#define NW 1
#if CLT_IS_FLOAT
#define ENC(v) ((ulong)as_uint(v))
#define DEC(u) as_float((uint)(u))
#else
#define ENC(v) ((ulong)(uint)(v))
#define DEC(u) ((acc_t)(uint)(u))
#endif
#endif
#if CLT_CHAIN == 2
/* a volatile load of an aligned 64-bit word: one transaction on the GPUs this is offered on
 * (the tuner validates it there); the word carries value, epoch and state together, so no
 * other store needs ordering against it */
#define LB_READ(p) (*(p))
#else
#define LB_READ(p) atom_add((p), 0ul)
#endif
#define LOW(st, f, epoch) (((ulong)(epoch) << 3) | ((ulong)(f) << 2) | (ulong)(st))

inline void publish(volatile __global ulong *status, const long g, const uint st,
                    const uint f, const acc_t v, const uint epoch) {
    const ulong e = ENC(v);
#if NW == 2
    atom_xchg(status + 2 * g, ((e & 0xFFFFFFFFul) << 32) | LOW(st, f, epoch));
    atom_xchg(status + 2 * g + 1, (e & 0xFFFFFFFF00000000ul) | LOW(st, f, epoch));
#else
    atom_xchg(status + g, (e << 32) | LOW(st, f, epoch));
#endif
}

/* LOOK_BACK: every work-item walks back from s_look over the predecessors' state words (a
 * window of CLT_LB at a time, lid 0 combining) until an inclusive prefix or a segment head;
 * then (s_f, s_v) is everything before this group's tile or chunk */
/* READ_STATE(k, lo, st, v): window entry k's low word, state (0 unless this call's epoch and,
 * for two words, both halves agree) and value */
#if NW == 2
#define READ_STATE(k, lo, st, v)                                                                 \
    do {                                                                                       \
        const ulong w0_ = win[(k) * NW], w1_ = win[(k) * NW + 1];                              \
        lo = (uint)w0_;                                                                        \
        st = ((lo >> 3) & EPOCH_MASK) == epoch ? (lo & 3u) : 0u;                               \
        if ((uint)w1_ != lo) st = 0u; /* the halves of two different states */                 \
        v = DEC((w0_ >> 32) | (w1_ & 0xFFFFFFFF00000000ul));                                   \
    } while (0)
#else
#define READ_STATE(k, lo, st, v)                                                                 \
    do {                                                                                       \
        const ulong w0_ = win[(k) * NW];                                                       \
        lo = (uint)w0_;                                                                        \
        st = ((lo >> 3) & EPOCH_MASK) == epoch ? (lo & 3u) : 0u;                               \
        v = DEC(w0_ >> 32);                                                                    \
    } while (0)
#endif

/* CLT_LB_WARP (NVIDIA, whole warps, a window of 32): the first warp alone walks back, a
 * predecessor a lane: two ballots find the first "not yet" (m) and the first inclusive prefix
 * or head (s), a butterfly of shuffles combines the window's entries before both, no barrier
 * until the walk ends (the group's other warps wait at one). Else every round takes two
 * barriers and work-item 0 combines the window one entry after another. */
#ifndef CLT_LB_WARP
#define CLT_LB_WARP 1
#endif
#if CLT_LB_WARP == 1 && HAVE_NV_PTX && CLT_WG % 32 == 0 && CLT_LB == 32
#define LB_WARP 1
inline uint lb_ballot(const int p) {
    uint r;
    asm volatile("{ .reg .pred q; setp.ne.s32 q, %1, 0; vote.sync.ballot.b32 %0, q, 0xffffffff; }"
                 : "=r"(r) : "r"(p));
    return r;
}
inline uint lb_xor_u32(const uint v, const uint lane_mask) {
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=r"(r) : "r"(v), "r"(lane_mask));
    return r;
}
inline acc_t lb_xor(const acc_t v, const uint lane_mask) {
#if CLT_ACC_BITS == 64
    uint2 u = as_uint2(v);
    u.x = lb_xor_u32(u.x, lane_mask);
    u.y = lb_xor_u32(u.y, lane_mask);
    return CAT(as_, CLT_ACC_T)(u);
#elif CLT_ACC_BITS == 32
    return CAT(as_, CLT_ACC_T)(lb_xor_u32(as_uint(v), lane_mask));
#else
    return (acc_t)lb_xor_u32((uint)v, lane_mask);
#endif
}
#elif CLT_LB_WARP == 2 && CLT_WG == 32 && CLT_LB == 32
/* tests on any device: the same walk with the ballots and shuffles emulated in __local memory
 * (the group is the one warp, so every work-item reaches their barriers) */
#define LB_WARP 2
inline uint lb_ballot_emu(__local uint *sh, const int p) {
    const uint lid = get_local_id(0);
    sh[lid] = p ? (1u << lid) : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = 0;
    for (int k = 0; k < 32; ++k) r |= sh[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
inline acc_t lb_xor_emu(__local acc_t *sh, const acc_t v, const uint lane_mask) {
    const uint lid = get_local_id(0);
    sh[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    const acc_t r = sh[lid ^ lane_mask];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#define lb_ballot(p) lb_ballot_emu(lb_sh, (p))
#define lb_xor(v, m) lb_xor_emu(lb_shv, (v), (m))
#else
#define LB_WARP 0
#endif
#if LB_WARP
/* the lowest set bit's index (x != 0; OpenCL C 1.2 has clz, not ctz) */
#define LB_LOW(x) (31 - (int)clz((x) & (0u - (x))))
#endif
/* the look-back's __local state: the window of work-item 0's walk, or the emulation's
 * scratch (the warp's walk keeps its window in registers) */
#if LB_WARP == 2
#define LB_DECL                                                                                  \
    __local uint lb_sh[32];                                                                    \
    __local acc_t lb_shv[32];
#elif LB_WARP
#define LB_DECL
#else
#define LB_DECL __local ulong win[CLT_LB * NW];
#endif

#if LB_WARP
#if NW == 2
#define LB_LOAD(j, w0_, w1_)                                                                     \
    const ulong w0_ = (j) >= 0 ? LB_READ(status + (j) * NW) : 0ul;                             \
    const ulong w1_ = (j) >= 0 ? LB_READ(status + (j) * NW + 1) : 0ul
#define LB_DECODE(w0_, w1_, lo, st, v)                                                           \
    lo = (uint)w0_;                                                                            \
    st = ((lo >> 3) & EPOCH_MASK) == epoch && (uint)w1_ == lo ? (lo & 3u) : 0u;                \
    v = DEC((w0_ >> 32) | (w1_ & 0xFFFFFFFF00000000ul))
#else
#define LB_LOAD(j, w0_, w1_) const ulong w0_ = (j) >= 0 ? LB_READ(status + (j)) : 0ul
#define LB_DECODE(w0_, w1_, lo, st, v)                                                           \
    lo = (uint)w0_;                                                                            \
    st = ((lo >> 3) & EPOCH_MASK) == epoch ? (lo & 3u) : 0u;                                   \
    v = DEC(w0_ >> 32)
#endif
/* lane k holds predecessor look - k; lanes before min(s, m) (and s itself when s < m) are
 * combined (they hold no head: s is the first), the nearest on the right */
#define LOOK_BACK(epoch)                                                                         \
    if (lid < 32) {                                                                            \
        /* (s_v, s_f): lane 0's result is written back, only after a walk (its ballots order  \
           the lanes' reads before that write) */                                              \
        acc_t cv = s_v;                                                                        \
        uint cf = s_f, done = s_done;                                                          \
        const uint walk = !done;                                                               \
        long look = s_look;                                                                    \
        while (!done) { /* ballots: every lane takes the same turns */                         \
            const long j = look - (long)lid;                                                   \
            LB_LOAD(j, w0_, w1_);                                                              \
            uint lo, st;                                                                       \
            acc_t v;                                                                           \
            LB_DECODE(w0_, w1_, lo, st, v);                                                    \
            const uint f = (lo >> 2) & 1u;                                                     \
            const uint ny = lb_ballot(st == 0u), stop = lb_ballot(st == ST_P || f);            \
            const uint heads = lb_ballot(f);                                                   \
            const int m_ = ny ? LB_LOW(ny) : 32, s_ = stop ? LB_LOW(stop) : 32;                \
            const int lim = s_ < m_ ? s_ : m_ - 1;                                             \
            acc_t t = (int)lid <= lim ? v : IDENT;                                             \
            _Pragma("unroll") for (uint d = 1; d < 32; d <<= 1) {                               \
                const acc_t o_ = lb_xor(t, d); /* every lane shuffles: OP reads twice */       \
                t = OP(t, o_);                                                                 \
            }                                                                                  \
            if (lim >= 0) cv = OP(t, cv);                                                      \
            if (s_ < m_) {                                                                     \
                done = 1;                                                                      \
                cf = (heads >> s_) & 1u;                                                       \
            } else {                                                                           \
                look -= m_;                                                                    \
            }                                                                                  \
        }                                                                                      \
        if (lid == 0 && walk) {                                                                \
            s_v = cv;                                                                          \
            s_f = cf;                                                                          \
        }                                                                                      \
    }                                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);
#else
#define LOOK_BACK(epoch)                                                                         \
    while (!s_done) { /* s_done is the group's: every work-item takes the same turns */         \
        const long look = s_look;                                                               \
        if (lid < CLT_LB) {                                                                     \
            const long j = look - (long)lid;                                                    \
            _Pragma("unroll") for (int w = 0; w < NW; ++w)                                      \
                win[lid * NW + w] = j >= 0 ? LB_READ(status + j * NW + w) : 0ul;                \
        }                                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
        if (lid == 0) {                                                                         \
            acc_t cv = s_v;                                                                     \
            uint cf = s_f, done = 0;                                                            \
            int k = 0;                                                                          \
            for (; k < CLT_LB && !done; ++k) {                                                  \
                uint lo, st;                                                                    \
                acc_t v;                                                                        \
                READ_STATE(k, lo, st, v);                                                       \
                if (st == 0u) break; /* not yet: read again from here */                        \
                const uint f = (lo >> 2) & 1u;                                                  \
                SEG_COMBINE(f, v, cf, cv, cf, cv); /* the predecessor's on the left */          \
                done = st == ST_P || f;                                                         \
            }                                                                                   \
            s_v = cv;                                                                           \
            s_f = cf;                                                                           \
            s_look = look - k;                                                                  \
            s_done = done;                                                                      \
        }                                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    }
#endif

/* The chained kernels' parameters, and their start: a ticket (every work-item gets the
 * group's g), the range [a, b) it covers (a group past n returns: never with the host's ticket
 * base, and the group's, so uniform), the pointers */
#define CHAIN_PARAMS                                                                             \
    __global const CLT_IN_T *x, const long xoff, const long n, const long chunk SEG_ARGS,      \
        volatile __global ulong *status, volatile __global uint *ticket, const uint base,      \
        const uint epoch, __global CLT_OUT_T *out, const long ooff
#define CHAIN_START                                                                              \
    __local acc_t sv[CLT_WG];                                                                  \
    __local uint sf[CLT_WG];                                                                   \
    STAGE_DECL                                                                                 \
    LB_DECL                                                                                    \
    __local long s_g, s_look;                                                                  \
    __local acc_t s_v;                                                                         \
    __local uint s_f, s_done;                                                                  \
    const uint lid = get_local_id(0);                                                          \
    if (lid == 0) s_g = (long)(atomic_inc(ticket) - base);                                     \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    const long g = s_g;                                                                        \
    const long a = g * chunk;                                                                  \
    if (a >= n) return;                                                                        \
    const long b = min(a + chunk, n);                                                          \
    __global const CLT_IN_T *xp = x + xoff;                                                    \
    __global CLT_OUT_T *op = out + ooff;
/* CHAIN_CARRY(f, v): publish this group's total (f, v) (already inclusive, P, when it is the
 * first group or holds a head; else A), look back, publish the inclusive prefix; leaves
 * `carry` (everything before a) in every work-item */
#define CHAIN_CARRY(f, v)                                                                        \
    if (lid == 0) {                                                                            \
        publish(status, g, (g == 0 || (f)) ? ST_P : ST_A, (f), (v), epoch);                    \
        s_v = IDENT;                                                                           \
        s_f = 0;                                                                               \
        s_look = g - 1;                                                                        \
        s_done = g == 0;                                                                       \
    }                                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    LOOK_BACK(epoch)                                                                           \
    acc_t carry = s_v;                                                                         \
    if (lid == 0 && g > 0 && !(f)) {                                                           \
        uint pf_;                                                                              \
        acc_t pv_;                                                                             \
        SEG_COMBINE(s_f, carry, (f), (v), pf_, pv_);                                           \
        publish(status, g, ST_P, pf_, pv_, epoch);                                             \
    }

__kernel WG_ATTR void clt_scan_chain(CHAIN_PARAMS) {
    CHAIN_START
    acc_t r[CLT_ITEMS];
    TILE_SCAN(a, b)
    CHAIN_CARRY(tf, tv)
    acc_t in;
    uint fi;
    SEG_COMBINE(0u, carry, ef, ev, fi, in);
    TILE_STORE(a, b, in)
}

/* The chained pass by chunks (CLT_CHAIN == 3; CPUs: a few large chunks, each read twice while
 * it is in cache, so ~2n bytes from memory): a group takes a ticket for a chunk of many tiles,
 * reduces it (from its last head on) and publishes the total, looks back as above, publishes
 * its inclusive prefix and scans the chunk with that carry. */
__kernel WG_ATTR void clt_scan_chunks(CHAIN_PARAMS) {
    CHAIN_START
    CHUNK_REDUCE(a, b)
    const uint hf = last >= a;
    CHAIN_CARRY(hf, total)
    CHUNK_SCAN(a, b, carry)
}
#endif

#endif /* !CLT_LAYOUT_COLS */

/* ---- cols: (outer, R, inner), the scanned axis strided by inner ---------------------------- */
/* Work-item c owns a strip of CLT_ITEMS neighbouring columns q0 .. q0 + CLT_ITEMS - 1 of outer
 * block o (c = o * strips + q0 / CLT_ITEMS) and scans them over the rows of chunk s,
 * [s * chunk, +chunk): a row's strip is contiguous (CPUs: one cache line, SIMD across the
 * columns), neighbouring work-items neighbouring strips (GPUs: coalesced). A group is wc
 * strips by CLT_WG / wc chunks (wc: a power of two <= CLT_WG from the host; few columns, as
 * 2^20 x 16, then still give every work-item of the group a chunk of its own). */
#ifndef CLT_COLS_BATCH
#define CLT_COLS_BATCH 1 /* GPUs: rows (and partials) loaded together before their stores */
#endif
#define COLS_BATCH CLT_COLS_BATCH
#define COLS_SETUP                                                                               \
    const long strips = (inner + CLT_ITEMS - 1) / CLT_ITEMS;                                   \
    const uint lid_ = get_local_id(0);                                                         \
    const long c = (long)get_group_id(0) * wc + lid_ % wc;                                     \
    const long s = (long)get_group_id(1) * (CLT_WG / wc) + lid_ / wc;                          \
    if (c >= outer * strips || s * chunk >= R) return;                                         \
    const long o = c / strips, q0 = (c - o * strips) * CLT_ITEMS;                               \
    const int width = (int)min((long)CLT_ITEMS, inner - q0);                                    \
    const long ncols = outer * inner;                                                          \
    const long j0 = s * chunk, j1 = min(j0 + chunk, R);                                        \
    const long at = o * R * inner + q0;                                                        \
    const long pcol = o * inner + q0; /* this strip's first column among all columns */

/* Wide strips (CLT_ITEMS 64..1024: CPUs): a strip's row is CLT_ITEMS contiguous columns,
 * taken in vectors of 16 (sums, products, integer min/max; floats' min/max, and the columns
 * past the last whole vector, one at a time), the rows one after another. Each row of a strip
 * is then a contiguous run the prefetchers follow (a strip of 16 columns touched one cache
 * line per row, rows `inner` elements apart), and the strip's running values stay in
 * private memory (the cache). */
#if CLT_ITEMS > 32
#define COLS_WIDE 1
#if !(CLT_IS_FLOAT && CLT_OP >= 2)
#define CW_VEC 1
#define CWV CAT(CLT_ACC_T, 16)
#define CWOUTV CAT(CLT_OUT_T, 16)
#define CW_LOAD(p) CAT(convert_, CWV)(CAT(convert_, CWOUTV)(vload16(0, (p))))
#if CLT_OUT_AS
#define CW_OUT(v) CAT(as_, CWOUTV)(v)
#else
#define CW_OUT(v) CAT(convert_, CWOUTV)(v)
#endif
#else
#define CW_VEC 0
#endif
#else
#define COLS_WIDE 0
#define CW_VEC 0
#endif

__kernel WG_ATTR void
clt_scan_cols_reduce(__global const CLT_IN_T *x, const long xoff, const long outer,
                     const long R, const long inner, const long chunk, const uint wc,
                     __global acc_t *pv) {
    COLS_SETUP
    __global const CLT_IN_T *col = x + xoff + at;
    acc_t acc[CLT_ITEMS];
#if COLS_WIDE
    for (int k = 0; k < CLT_ITEMS; ++k) acc[k] = IDENT;
    const int wv = CW_VEC ? (width & ~15) : 0;
    for (long j = j0; j < j1; ++j) {
        __global const CLT_IN_T *row = col + j * inner;
#if CW_VEC
        for (int k = 0; k < wv; k += 16)
            vstore16(OP(vload16(0, acc + k), CW_LOAD(row + k)), 0, acc + k);
#endif
        for (int k = wv; k < width; ++k) acc[k] = OP(acc[k], LOAD(row[k]));
    }
#else
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) acc[k] = IDENT;
    if (width == CLT_ITEMS) {
        for (long j = j0; j < j1; ++j) {
#pragma unroll
            for (int k = 0; k < CLT_ITEMS; ++k) acc[k] = OP(acc[k], LOAD(col[j * inner + k]));
        }
    } else {
        for (long j = j0; j < j1; ++j)
            for (int k = 0; k < width; ++k) acc[k] = OP(acc[k], LOAD(col[j * inner + k]));
    }
#endif
    for (int k = 0; k < width; ++k) pv[s * ncols + pcol + k] = acc[k];
}

/* each column's S partials -> its chunks' carries (exclusive), in place. A group holds
 * CLT_WG / tr columns, tr lanes each (tr: a power of two <= CLT_WG from the host): a lane
 * reduces its run of S / tr partials, the lanes' totals are scanned in order in __local
 * memory, and each lane turns its run into carries (tr == 1: one work-item a column, serial;
 * few columns of many chunks, as 2^20 x 16, spread each column over up to CLT_WG lanes).
 * Every work-item reaches both barriers. */
__kernel WG_ATTR void clt_scan_cols_top(__global acc_t *pv, const long ncols, const long S,
                                        const uint tr) {
    __local acc_t tot[CLT_WG];
    const uint lid = get_local_id(0), tc = CLT_WG / tr;
    const uint lane = lid / tc, cl = lid - lane * tc;
    const long c = (long)get_group_id(0) * tc + cl;
    const long per = (S + tr - 1) / tr;
    const long s0 = min((long)lane * per, S), s1 = min(s0 + per, S);
    acc_t t = IDENT;
    if (c < ncols) {
        for (long s = s0; s < s1; ++s) t = OP(t, pv[s * ncols + c]);
    }
    tot[lid] = t;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0) {
        acc_t carry = IDENT;
        for (uint l = 0; l < tr; ++l) {
            const acc_t v = tot[l * tc + cl];
            tot[l * tc + cl] = carry;
            carry = OP(carry, v);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c < ncols) {
        acc_t carry = tot[lid];
        long s = s0;
#if COLS_BATCH > 1 /* a batch of partials loaded before any is overwritten (see cols_down) */
        for (; s + COLS_BATCH <= s1; s += COLS_BATCH) {
            acc_t v[COLS_BATCH];
#pragma unroll
            for (int b = 0; b < COLS_BATCH; ++b) v[b] = pv[(s + b) * ncols + c];
#pragma unroll
            for (int b = 0; b < COLS_BATCH; ++b) {
                pv[(s + b) * ncols + c] = carry;
                carry = OP(carry, v[b]);
            }
        }
#endif
        for (; s < s1; ++s) {
            const acc_t v = pv[s * ncols + c];
            pv[s * ncols + c] = carry;
            carry = OP(carry, v);
        }
    }
}

/* column k of the strip at row j, value v: its output (before the element when exclusive),
 * then on */
#if CLT_EXCL
#define COLS_STEPV(j, k, v)                                                                      \
    do {                                                                                       \
        const acc_t v_ = (v);                                                                  \
        STORE(oc + (j) * inner + (k), run[k]);                                                 \
        run[k] = OP(run[k], v_);                                                               \
    } while (0)
#else
#define COLS_STEPV(j, k, v)                                                                      \
    do {                                                                                       \
        run[k] = OP(run[k], (v));                                                              \
        STORE(oc + (j) * inner + (k), run[k]);                                                 \
    } while (0)
#endif
#define COLS_STEP(j, k) COLS_STEPV(j, k, LOAD(col[(j) * inner + (k)]))

__kernel WG_ATTR void
clt_scan_cols_down(__global const CLT_IN_T *x, const long xoff, const long outer, const long R,
                   const long inner, const long chunk, const uint wc,
                   __global const acc_t *carries, const uint has_carries,
                   __global CLT_OUT_T *out, const long ooff) {
    COLS_SETUP
    __global const CLT_IN_T *col = x + xoff + at;
    __global CLT_OUT_T *oc = out + ooff + at;
    acc_t run[CLT_ITEMS];
#if !COLS_WIDE
#pragma unroll
#endif
    for (int k = 0; k < CLT_ITEMS; ++k) {
        run[k] = (has_carries && k < width) ? carries[s * ncols + pcol + k]
                                            : IDENT;
#if CLT_EXCL
        if (j0 == 0) run[k] = EMPTY; /* numpy's empty prefix (+0.0 for sums) */
#endif
    }
#if COLS_WIDE
    const int wv = CW_VEC ? (width & ~15) : 0;
    for (long j = j0; j < j1; ++j) {
#if CW_VEC
        __global const CLT_IN_T *row = col + j * inner;
        __global CLT_OUT_T *orow = oc + j * inner;
        for (int k = 0; k < wv; k += 16) {
            const CWV v = CW_LOAD(row + k);
            CWV r = vload16(0, run + k);
#if CLT_EXCL
            vstore16(CW_OUT(r), 0, orow + k);
            r = OP(r, v);
#else
            r = OP(r, v);
            vstore16(CW_OUT(r), 0, orow + k);
#endif
            vstore16(r, 0, run + k);
        }
#endif
        for (int k = wv; k < width; ++k) COLS_STEP(j, k);
    }
#else
    long j = j0;
#if COLS_BATCH > 1
    /* GPUs: a batch of rows loaded before any of them is stored (x and out may be one
     * buffer, so the compiler could not hoist a load above the previous row's store: a
     * memory round trip a row) */
    if (width == CLT_ITEMS) {
        for (; j + COLS_BATCH <= j1; j += COLS_BATCH) {
            acc_t v[COLS_BATCH][CLT_ITEMS];
#pragma unroll
            for (int b = 0; b < COLS_BATCH; ++b)
#pragma unroll
                for (int k = 0; k < CLT_ITEMS; ++k) v[b][k] = LOAD(col[(j + b) * inner + k]);
#pragma unroll
            for (int b = 0; b < COLS_BATCH; ++b)
#pragma unroll
                for (int k = 0; k < CLT_ITEMS; ++k) COLS_STEPV(j + b, k, v[b][k]);
        }
    }
#endif
    if (width == CLT_ITEMS) {
        for (; j < j1; ++j) {
#pragma unroll
            for (int k = 0; k < CLT_ITEMS; ++k) COLS_STEP(j, k);
        }
    } else {
        for (; j < j1; ++j) {
            for (int k = 0; k < width; ++k) COLS_STEP(j, k);
        }
    }
#endif
}

#if COLS_BATCH > 1
/* GPUs, short columns in one launch with a group's carries: a group is wc strips (CLT_ITEMS
 * neighbouring columns each, neighbouring work-items on neighbouring strips: coalesced) by
 * CLT_WG / wc chunks of `chunk` <= COLS_BATCH rows. Each work-item loads its chunk's rows at
 * once (one memory round trip), scans them in registers and leaves the chunk's total in
 * __local memory; after the barrier it combines the totals of its column's earlier chunks
 * (in order) into its carry and stores its rows. A work-item a whole column left few columns
 * (10^4) with 40 groups of 256 on a 132-SM device, each walking its column in batches of
 * COLS_BATCH rows. Every work-item reaches the barrier (no early return). */
__kernel WG_ATTR void
clt_scan_cols_tile(__global const CLT_IN_T *x, const long xoff, const long outer, const long R,
                   const long inner, const long chunk, const uint wc,
                   __global CLT_OUT_T *out, const long ooff) {
    __local acc_t tot[CLT_WG * CLT_ITEMS];
    const long strips = (inner + CLT_ITEMS - 1) / CLT_ITEMS;
    const uint lid = get_local_id(0);
    const uint cl = lid % wc, sk = lid / wc;
    const long c = (long)get_group_id(0) * wc + cl;
    const int live = c < outer * strips;
    const long o = live ? c / strips : 0;
    const long q0 = live ? (c - o * strips) * CLT_ITEMS : 0;
    const int width = live ? (int)min((long)CLT_ITEMS, inner - q0) : 0;
    const long j0 = (long)sk * chunk;
    const int rows = (int)max(0L, min(chunk, R - j0));
    const long at = o * R * inner + q0;
    __global const CLT_IN_T *col = x + xoff + at;
    __global CLT_OUT_T *oc = out + ooff + at;
    acc_t v[COLS_BATCH][CLT_ITEMS];
#pragma unroll
    for (int b = 0; b < COLS_BATCH; ++b)
#pragma unroll
        for (int k = 0; k < CLT_ITEMS; ++k)
            v[b][k] = (b < rows && k < width) ? LOAD(col[(j0 + b) * inner + k]) : IDENT;
#pragma unroll
    for (int b = 1; b < COLS_BATCH; ++b)
#pragma unroll
        for (int k = 0; k < CLT_ITEMS; ++k) v[b][k] = OP(v[b - 1][k], v[b][k]);
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) tot[lid * CLT_ITEMS + k] = v[COLS_BATCH - 1][k];
    barrier(CLK_LOCAL_MEM_FENCE);
    acc_t run[CLT_ITEMS];
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) run[k] = IDENT;
    for (uint t = 0; t < sk; ++t)
#pragma unroll
        for (int k = 0; k < CLT_ITEMS; ++k) run[k] = OP(run[k], tot[(t * wc + cl) * CLT_ITEMS + k]);
#pragma unroll
    for (int b = 0; b < COLS_BATCH; ++b) {
        if (b < rows) {
#pragma unroll
            for (int k = 0; k < CLT_ITEMS; ++k) {
                if (k < width) {
#if CLT_EXCL
                    const acc_t e = (j0 + b == 0) ? EMPTY : b ? OP(run[k], v[b - 1][k]) : run[k];
                    STORE(oc + (j0 + b) * inner + k, e);
#else
                    STORE(oc + (j0 + b) * inner + k, OP(run[k], v[b][k]));
#endif
                }
            }
        }
    }
}
#endif

/* which paths the compiler took: [subgroup scan, warp shuffles] */
__kernel void clt_scan_probe(__global int *flags) {
    flags[0] = SG_SCAN;
    flags[1] = WARP_SCAN;
}
