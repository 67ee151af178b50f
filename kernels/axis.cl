/* cltune reductions along an axis and over segments.
 *
 * Built as kernels/reduce.cl (its header: the op, element/accumulator/output types, loads,
 * OP/ACCUM/hreduce/STORE_OUT; -DCLT_NO_1D=1 leaves out its 1-D kernels) followed by this file.
 * Every tunable has a default so the pair compiles on its own; values reach it only as -D
 * options from cltune.axis_kernel.build_defines (a validated AxisConfig).
 *
 * An n-D array is viewed as (outer, R, inner), C order, and reduced over R:
 *   clt_ax_rows   inner == 1 (the reduced axis is contiguous): CLT_AX_LANES work-items share a
 *                 row (1: a work-item per row ... CLT_WG: a work-group per row), each lane
 *                 loads CLT_ITEMS vectors of CLT_VEC elements per step; the lanes of a row
 *                 combine in __local memory (a tree with uniform barriers) or, with
 *                 CLT_AX_WARP on NVIDIA, with shfl.sync.bfly. A long row is split over `split`
 *                 groups whose partials clt_ax_rows_fin combines.
 *   clt_ax_packed rows of 2..16 elements (CPUs): blocks of CLT_VEC rows, folded as a tree
 *                 of vectors in registers (lengths 2, 4, 8, 16 <= CLT_VEC) or transposed in
 *                 registers (any other length), CLT_VEC results stored at once; a group
 *                 streams a run of blocks.
 *   clt_ax_cols   inner > 1 (strided): CLT_AX_COLS work-items lie along the kept axis, each
 *                 owning CLT_VEC adjacent outputs (coalesced loads), CLT_WG / CLT_AX_COLS of
 *                 them stream rows; a tree in __local memory combines those; with split > 1
 *                 the rows are split over groups and clt_ax_cols_fin combines the partials.
 *   clt_ax_cols_narrow  inner of 1..16 (CPUs): each outer block read as a flat array, a
 *                 block of CLT_VEC rows being `inner` whole vectors, lane j of accumulator k
 *                 holding column (k * CLT_VEC + j) % inner; folded into the columns at the end.
 *   clt_ax_segs   segment i is x[offs[i] : offs[i+1]] (CSR row pointers, int or long): as
 *                 clt_ax_rows with the row bounds read from offs. Bounds that are negative,
 *                 decreasing or past n make that segment empty and record the lowest such
 *                 segment index in err[0] (atomic_min; the host reads it only when asked): no
 *                 load ever leaves x.
 * Barriers are never in divergent code: every work-item of a group reaches every barrier
 * (work-items past the last row do the same steps over an empty range).
 */

#ifndef CLT_AX_LANES
#define CLT_AX_LANES 1
#endif
#ifndef CLT_AX_COLS
#define CLT_AX_COLS 64
#endif
#ifndef CLT_AX_WARP
#define CLT_AX_WARP 0
#endif
#ifndef CLT_AX_ONEPASS
#define CLT_AX_ONEPASS 0 /* 1: the last group of a row block / column tile finishes its partials */
#endif
#ifndef CLT_AX_LOCKSTEP
#define CLT_AX_LOCKSTEP 0 /* cols: the group steps through rows together (a barrier a step) */
#endif
#ifndef CLT_AX_STREAM
#define CLT_AX_STREAM 0 /* cols: clt_ax_cols_stream (a work-item streams whole row strips) */
#endif
#ifndef CLT_AX_BLOCKED
#define CLT_AX_BLOCKED 0 /* rows, segs: a group takes a contiguous block of units (CPUs) */
#endif
#ifndef CLT_AX_LONG
#define CLT_AX_LONG 16 /* segments longer than CLT_AX_LONG * lanes * vec * items go to groups */
#endif

#define AX_RPG (CLT_WG / CLT_AX_LANES) /* rows per group */
#define AX_RT (CLT_WG / CLT_AX_COLS)   /* work-items along the reduced axis (cols) */

#if CLT_AX_WARP && CLT_HAVE_NV_PTX && CLT_AX_LANES > 1 && CLT_AX_LANES <= 32
#define AX_WARP_ACTIVE 1
#else
#define AX_WARP_ACTIVE 0
#endif

/* AXVA: a vector load the host promised is aligned to its size (`aligned` argument: the
 * offset and the row/column stride are multiples of CLT_VEC), so it can be one wide load;
 * vloadN (AXV) only assumes the element's alignment. */
#if CLT_VEC > 1 && !CLT_IS_HALF
#define LOADA_X(p, e)                                                                            \
    CAT(convert_, CAT(CLT_ACC_T, CLT_VEC))(*(__global const CAT(CLT_IN_T, CLT_VEC) *)((p) + (e)))
#else
#define LOADA_X(p, e) LOADV_X(0, (p) + (e))
#endif
#if CLT_OP == 4
#define AXV(e) (LOADV_X(0, xp + (e)) * LOADV_X(0, yp + (e)))
#define AXVA(e) (LOADA_X(xp, e) * LOADA_X(yp, e))
#define AX1(j) (LOAD1_X((j), xp) * LOAD1_X((j), yp))
#else
#define AXV(e) LOADV_X(0, xp + (e))
#define AXVA(e) LOADA_X(xp, e)
#define AX1(j) LOAD1_X((j), xp)
#endif
#define AXLOAD(e) (aligned ? AXVA(e) : AXV(e))

#if AX_WARP_ACTIVE
inline uint ax_shfl_xor_u32(uint v, uint mask) {
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
    return r;
}
inline acc_t ax_shfl_xor(acc_t v, uint mask) {
#if CLT_ACC_64
    uint2 u = as_uint2(v);
    u.x = ax_shfl_xor_u32(u.x, mask);
    u.y = ax_shfl_xor_u32(u.y, mask);
    return CAT(as_, CLT_ACC_T)(u);
#else
    return CAT(as_, CLT_ACC_T)(ax_shfl_xor_u32(as_uint(v), mask));
#endif
}
#endif

/* The CLT_AX_LANES lanes of each row combine their values; the result is valid in lane 0.
 * Every work-item of the group calls it. After the last barrier a work-item reads only its
 * own slot, so a loop may call it again without another barrier. */
inline acc_t ax_lane_combine(acc_t v, __local acc_t *tile) {
#if CLT_AX_LANES == 1
    return v;
#elif AX_WARP_ACTIVE
    for (uint m = CLT_AX_LANES / 2; m > 0; m >>= 1) {
        const acc_t o = ax_shfl_xor(v, m); /* every lane shuffles: never inside OP's ?: */
        v = OP(v, o);
    }
    return v;
#else
    const uint lid = get_local_id(0);
    const uint lane = lid % CLT_AX_LANES;
    tile[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint st = CLT_AX_LANES / 2; st > 0; st >>= 1) {
        if (lane < st) tile[lid] = OP(tile[lid], tile[lid + st]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return tile[lid];
#endif
}

/* Lane `lane` of `nl` accumulates elements [start, end) of the row at `base` (nl is
 * CLT_AX_LANES, or CLT_WG for the long-segment kernel; a constant after inlining). */
inline acc_t ax_row_sum(__global const CLT_IN_T *xp
#if CLT_OP == 4
                        , __global const CLT_IN_T *yp
#endif
                        , const idx_t base, const idx_t start, const idx_t end, const uint lane,
                        const uint nl, const uint aligned) {
    accv_t acc[CLT_ITEMS];
    accv_t comp[CLT_ITEMS];
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) {
        acc[k] = (accv_t)IDENT;
        comp[k] = (accv_t)0;
    }
    const idx_t step = (idx_t)nl * CLT_VEC;
    idx_t i = start + (idx_t)lane * CLT_VEC;
    for (; i + (idx_t)(CLT_ITEMS - 1) * step + CLT_VEC <= end; i += (idx_t)CLT_ITEMS * step) {
#pragma unroll
        for (int k = 0; k < CLT_ITEMS; ++k) ACCUM(acc[k], comp[k], AXLOAD(base + i + k * step));
    }
    /* at most CLT_ITEMS - 1 whole vectors are left to this lane: loaded together, each into an
     * accumulator of its own (a loop over them waited for one load before it issued the next:
     * a row that is not a multiple of the step, 3000 floats at 256 lanes x 4 x 4, took 1.2x
     * the time of a row of 4096 on the H200) */
#pragma unroll
    for (int k = 0; k < CLT_ITEMS - 1; ++k) {
        if (i + (idx_t)k * step + CLT_VEC <= end)
            ACCUM(acc[k], comp[k], AXLOAD(base + i + (idx_t)k * step));
    }
    /* the last (end - start) % CLT_VEC elements, one per lane */
    acc_t s = IDENT;
    acc_t c = (acc_t)0;
    const idx_t vend = end - (end - start) % CLT_VEC;
    for (idx_t j = vend + lane; j < end; j += nl) ACCUM1(s, c, AX1(base + j));
#if CLT_KAHAN
    /* compensated to the end: the items' lanes go into (s, c) one by one, not through a plain
     * tree (without fp64, a float32 row would otherwise lose ulps at the combine) */
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) {
        acc_t h_[CLT_VEC];
#if CLT_VEC == 1
        h_[0] = ACC_FIN(acc[k], comp[k]);
#else
        CAT(vstore, CLT_VEC)(ACC_FIN(acc[k], comp[k]), 0, h_);
#endif
#pragma unroll
        for (int v = 0; v < CLT_VEC; ++v) ACCUM1(s, c, h_[v]);
    }
    return ACC_FIN(s, c);
#else
    s = ACC_FIN(s, c);
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) s = OP(s, hreduce(ACC_FIN(acc[k], comp[k])));
    return s;
#endif
}

#if CLT_OP == 4
#define AX_XY xp, yp
#else
#define AX_XY xp
#endif

/* The whole group combines v (a tree in __local memory); valid in lid 0, which then reads
 * only its own slot (a loop may call it again without another barrier). */
inline acc_t ax_group_combine(acc_t v, __local acc_t *tile) {
    const uint lid = get_local_id(0);
    tile[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint st = CLT_WG / 2; st > 0; st >>= 1) {
        if (lid < st) tile[lid] = OP(tile[lid], tile[lid + st]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return tile[lid];
}

/* One pass: after a group stored its partials of unit `block`, is it the last of the
 * `split` groups of that block? (The threadfence reduction of kernels/reduce.cl: partials go
 * through PUT_PARTIAL/GET_PARTIAL, atomics when CLT_PASSES == 1.) Uniform per group. */
#if CLT_AX_ONEPASS
inline int ax_last_of(__global uint *tickets, const idx_t block, const uint split,
                      __local uint *flag) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#if CLT_HAVE_NV_PTX
    asm volatile("membar.gl;");
#endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0) *flag = (atomic_inc(tickets + block) == split - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int last = *flag;
    if (last) {
#if CLT_HAVE_NV_PTX
        asm volatile("membar.gl;");
#endif
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    return last;
}
#endif

/* ---- contiguous axis --------------------------------------------------------------------- */
/* Work unit u: row block u / split, piece u % split of each row ([piece*chunk, +chunk)).
 * Each group takes units g, g + groups, ... (the loop is uniform per group). */
/* clt_ax_rows's arguments (clt_ax_packed takes the same: one argument setter serves both) */
#define AX_ROWS_PARAMS                                                                           \
    __global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t rows, const idx_t len,    \
        const uint split, const idx_t chunk, const uint aligned, __global acc_t *partials,     \
        __global uint *tickets, __global out_t *out, __local acc_t *tile
__kernel CLT_WG_ATTR void
clt_ax_rows(AX_ROWS_PARAMS) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
#if CLT_AX_ONEPASS
    __local uint is_last;
#endif
    const uint lid = get_local_id(0);
    const uint lane = lid % CLT_AX_LANES;
    const idx_t units = ((rows + AX_RPG - 1) / AX_RPG) * split;
#if CLT_AX_BLOCKED
    /* CPUs: a group takes a contiguous block of units, so a core streams its rows in memory
     * order (a group-stride walk jumps groups x rows ahead after each row block) */
    const idx_t per = (units + get_num_groups(0) - 1) / get_num_groups(0);
    const idx_t u_end = min(units, (idx_t)(get_group_id(0) + 1) * per);
    for (idx_t u = (idx_t)get_group_id(0) * per; u < u_end; ++u) {
#else
    for (idx_t u = get_group_id(0); u < units; u += get_num_groups(0)) {
#endif
        const uint piece = (uint)(u % split);
        const idx_t row = (u / split) * AX_RPG + lid / CLT_AX_LANES;
        const int live = row < rows;
        const idx_t start = (idx_t)piece * chunk;
        const idx_t end = live ? min(start + chunk, len) : start;
        acc_t r = ax_row_sum(AX_XY, live ? row * len : 0, start, end, lane, CLT_AX_LANES,
                             aligned);
        r = ax_lane_combine(r, tile);
        if (live && lane == 0) {
            if (split == 1)
                STORE_OUT(out + row, r);
            else
                PUT_PARTIAL(partials, row * split + piece, r);
        }
#if CLT_AX_ONEPASS
        if (split > 1 && ax_last_of(tickets, u / split, split, &is_last)) {
            acc_t t = IDENT, tc = (acc_t)0; /* compensated where the pieces were (CLT_KAHAN) */
            if (live)
                for (uint j = lane; j < split; j += CLT_AX_LANES)
                    ACCUM1(t, tc, GET_PARTIAL(partials, row * split + j));
            t = ax_lane_combine(ACC_FIN(t, tc), tile);
            if (live && lane == 0) STORE_OUT(out + row, t);
            if (lid == 0) atomic_xchg(tickets + u / split, 0u); /* ready for the next launch */
        }
#endif
    }
}

/* ---- short rows, packed (CPUs) ------------------------------------------------------------
 * Rows of len = 2, 4, 8 or 16 <= CLT_VEC elements: a block of CLT_VEC rows is len whole
 * vectors, folded as a tree in registers: each step joins the pairwise folds (even and odd
 * lanes: (x0 op x1), (x2 op x3), ...) of two vectors into one, so that after log2(len) steps
 * one vector holds the block's CLT_VEC row values in order, stored at once (each row folded
 * pairwise, the order of a fold of the row alone). A vector's rows folded by themselves and
 * stored a few values at a time took 4 folds and a scalar store a row of 16 (1048576x16 float32
 * at 0.55 of the 1-D sum on both CPU runtimes). A group streams a contiguous block of `chunk`
 * blocks; the rows past the last whole block (fewer than CLT_VEC) go to the last group's
 * work-items, folded in the same order. A work-item per row with the row in one vector left
 * the loads and stores a row apart (2-6 GB/s on PoCL for rows of 4-16 floats).
 * The arguments are clt_ax_rows's (split, aligned, partials, tickets and tile unused).
 * Built where the host may launch it (-DCLT_AX_PACKED=1: CPUs, a work-item a row). */
#ifndef CLT_AX_PACKED
#define CLT_AX_PACKED 0
#endif
#if CLT_AX_PACKED
/* AXP_JOIN(a, b): the pairwise folds of a and of b, joined into one vector (CLT_VEC 2: two
 * values) */
#define AXP_JOIN(a, b) ((accv_t)(OP((a).even, (a).odd), OP((b).even, (b).odd)))
#define AXP_CAT_(a, b) a##b
#define AXP_CAT(a, b) AXP_CAT_(a, b)
#define AXP_PUT_EACH(L, o, r)                                                                    \
    _Pragma("unroll") for (uint j_ = 0; j_ < (CLT_VEC >> (L)); ++j_)                           \
        STORE_OUT((o) + j_, ((const acc_t *)&(r))[j_])
/* AXP_NT(w, o, v): v (w outputs) to o, bypassing the caches where o is aligned to the vector
 * (the results are not read again here; a plain store first reads each line it writes) */
#define AXP_NT(w, o, v)                                                                          \
    do {                                                                                       \
        if (((size_t)(o) & (sizeof(CAT(CLT_OUT_T, w)) - 1)) == 0)                              \
            __builtin_nontemporal_store((v), (__global CAT(CLT_OUT_T, w) *)(o));               \
        else                                                                                   \
            CAT(vstore, w)((v), 0, (o));                                                       \
    } while (0)

/* rows of 2^L elements: blocks of CLT_VEC rows, 2^L vector loads each */
#define AXP_TREE(L)                                                                              \
    do {                                                                                       \
        const idx_t nv_ = rows / CLT_VEC; /* whole blocks */                                   \
        const idx_t b1_ = min(b0 + chunk, nv_);                                                \
        for (idx_t v_ = b0 + lid; v_ < b1_; v_ += CLT_WG) {                                    \
            accv_t t_[1 << (L)];                                                               \
            _Pragma("unroll") for (int k = 0; k < (1 << (L)); ++k)                             \
                t_[k] = AXV((v_ * (1 << (L)) + k) * CLT_VEC);                                  \
            _Pragma("unroll") for (int w = (1 << (L)) / 2; w > 0; w /= 2)                      \
                _Pragma("unroll") for (int j = 0; j < w; ++j)                                  \
                    t_[j] = AXP_JOIN(t_[2 * j], t_[2 * j + 1]);                                \
            AXP_PUT_BLOCK(out + v_ * CLT_VEC, t_[0]);                                          \
        }                                                                                      \
        if (get_group_id(0) == get_num_groups(0) - 1) {                                        \
            for (idx_t r = nv_ * CLT_VEC + lid; r < rows; r += CLT_WG) {                       \
                acc_t t_[1 << (L)];                                                            \
                _Pragma("unroll") for (int j = 0; j < (1 << (L)); ++j)                         \
                    t_[j] = AX1(r * (1 << (L)) + j);                                           \
                _Pragma("unroll") for (int w = (1 << (L)) / 2; w > 0; w /= 2)                  \
                    _Pragma("unroll") for (int j = 0; j < w; ++j)                              \
                        t_[j] = OP(t_[2 * j], t_[2 * j + 1]);                                  \
                STORE_OUT(out + r, t_[0]);                                                     \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* rows of any other length <= 16 (3, 5, 6, 7, 9..15, or a power of two > CLT_VEC): a block of
 * CLT_VEC rows is len whole vectors, loaded into private memory and summed as len vectors
 * that each hold one element of every row (a transpose in registers: a[i * len + j], i over
 * the rows), one vector of CLT_VEC results stored at once; `chunk` blocks a group. The rows
 * past the last whole block go to the last group's work-items, one by one in the same order.
 * A work-item a row left rows of 7 floats at 4 GB/s on PoCL (0.07 of its 1-D sum). */
#define AXP_ANY()                                                                                \
    do {                                                                                       \
        const uint ln_ = (uint)len;                                                            \
        const idx_t nv_ = rows / CLT_VEC; /* whole blocks */                                   \
        const idx_t b1_ = min(b0 + chunk, nv_);                                                \
        for (idx_t v_ = b0 + lid; v_ < b1_; v_ += CLT_WG) {                                    \
            acc_t a_[CLT_VEC * 16];                                                            \
            for (uint k = 0; k < ln_; ++k)                                                     \
                CAT(vstore, CLT_VEC)(AXV((v_ * ln_ + k) * CLT_VEC), k, a_);                    \
            accv_t s_ = AXP_COL(a_, ln_, 0);                                                   \
            for (uint j = 1; j < ln_; ++j) s_ = OP(s_, AXP_COL(a_, ln_, j));                   \
            AXP_PUT_BLOCK(out + v_ * CLT_VEC, s_);                                             \
        }                                                                                      \
        if (get_group_id(0) == get_num_groups(0) - 1) {                                        \
            for (idx_t r = nv_ * CLT_VEC + lid; r < rows; r += CLT_WG) {                       \
                acc_t t_ = AX1(r * ln_);                                                       \
                for (uint j = 1; j < ln_; ++j) t_ = OP(t_, AX1(r * ln_ + j));                  \
                STORE_OUT(out + r, t_);                                                        \
            }                                                                                  \
        }                                                                                      \
    } while (0)
/* AXP_COL(a, l, j): element j of each of the block's CLT_VEC rows of length l, as a vector */
#if CLT_VEC == 16
#define AXP_COL(a, l, j)                                                                         \
    ((accv_t)(a[j], a[(l) + j], a[2 * (l) + j], a[3 * (l) + j], a[4 * (l) + j], a[5 * (l) + j],  \
              a[6 * (l) + j], a[7 * (l) + j], a[8 * (l) + j], a[9 * (l) + j], a[10 * (l) + j],    \
              a[11 * (l) + j], a[12 * (l) + j], a[13 * (l) + j], a[14 * (l) + j],                \
              a[15 * (l) + j]))
#elif CLT_VEC == 8
#define AXP_COL(a, l, j)                                                                         \
    ((accv_t)(a[j], a[(l) + j], a[2 * (l) + j], a[3 * (l) + j], a[4 * (l) + j], a[5 * (l) + j],  \
              a[6 * (l) + j], a[7 * (l) + j]))
#elif CLT_VEC == 4
#define AXP_COL(a, l, j) ((accv_t)(a[j], a[(l) + j], a[2 * (l) + j], a[3 * (l) + j]))
#else
#define AXP_COL(a, l, j) ((accv_t)(a[j], a[(l) + j]))
#endif
#if CLT_IS_FLOAT && !CLT_IS_HALF
#define AXP_PUT_BLOCK(o, r) AXP_NT(CLT_VEC, o, CAT(convert_, CAT(CLT_OUT_T, CLT_VEC))(r))
#else
#define AXP_PUT_BLOCK(o, r) AXP_PUT_EACH(0, o, r)
#endif

__kernel CLT_WG_ATTR void
clt_ax_packed(AX_ROWS_PARAMS) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    const uint lid = get_local_id(0);
    const idx_t b0 = (idx_t)get_group_id(0) * chunk; /* this group's first vector */
#if CLT_VEC >= 2
    if (len == 2) AXP_TREE(1);
#endif
#if CLT_VEC >= 4
    if (len == 4) AXP_TREE(2);
#endif
#if CLT_VEC >= 8
    if (len == 8) AXP_TREE(3);
#endif
#if CLT_VEC >= 16
    if (len == 16) AXP_TREE(4);
#endif
    /* (not len & (len - 1): LLVM makes that a popcount, which Oclgrind cannot run) */
    if (len > CLT_VEC || (len != 2 && len != 4 && len != 8 && len != 16)) AXP_ANY();
}
#endif /* CLT_AX_PACKED */

/* The `split` partials of each row (partials[row * split + piece]) -> out[row]. */
__kernel CLT_WG_ATTR void
clt_ax_rows_fin(__global const acc_t *partials, const idx_t rows, const uint split,
                __global out_t *out, __local acc_t *tile) {
    const uint lid = get_local_id(0);
    const uint lane = lid % CLT_AX_LANES;
    const idx_t row = (idx_t)get_group_id(0) * AX_RPG + lid / CLT_AX_LANES;
    const int live = row < rows;
    acc_t s = IDENT, c = (acc_t)0; /* compensated where the pieces were (CLT_KAHAN) */
    if (live)
        for (uint j = lane; j < split; j += CLT_AX_LANES)
            ACCUM1(s, c, GET_PARTIAL(partials, row * split + j));
    s = ax_lane_combine(ACC_FIN(s, c), tile);
    if (live && lane == 0) STORE_OUT(out + row, s);
}

/* ---- strided axis ------------------------------------------------------------------------ */
/* The AX_RT work-items of each column combine their CLT_VEC values `m` in a tree over ty in
 * __local memory; the group's result ends in ty == 0's `m`. Every work-item of the group
 * calls it; after the last barrier each reads only its own slots (callable in a loop). */
inline void ax_cols_tree(acc_t *m, __local acc_t *tile, const uint lid, const uint ty) {
#if AX_RT > 1
#pragma unroll
    for (int v = 0; v < CLT_VEC; ++v) tile[lid * CLT_VEC + v] = m[v];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint st = AX_RT / 2; st > 0; st >>= 1) {
        if (ty < st) {
#pragma unroll
            for (int v = 0; v < CLT_VEC; ++v)
                tile[lid * CLT_VEC + v] =
                    OP(tile[lid * CLT_VEC + v], tile[(lid + st * CLT_AX_COLS) * CLT_VEC + v]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int v = 0; v < CLT_VEC; ++v) m[v] = tile[lid * CLT_VEC + v];
#endif
}

/* Group g: piece g % split of the rows, column tile (g / split) % ctiles of outer block
 * g / (split * ctiles). Work-item (tx, ty) owns columns col .. col + CLT_VEC - 1 and rows
 * r0 + ty, r0 + ty + AX_RT, ... */
inline void ax_cols_unit(__global const CLT_IN_T *xp
#if CLT_OP == 4
                         , __global const CLT_IN_T *yp
#endif
                         , const idx_t g, const idx_t outer, const idx_t R, const idx_t inner,
                         const uint split, const idx_t chunk, const idx_t ctiles,
                         const uint aligned, __global acc_t *partials, __global uint *tickets,
                         __global out_t *out, __local acc_t *tile, __local uint *is_last,
                         const uint lid, const uint tx, const uint ty) {
    const uint piece = (uint)(g % split);
    const idx_t t = (g / split) % ctiles;
    const idx_t o = g / split / ctiles;
    const idx_t col = (t * CLT_AX_COLS + tx) * CLT_VEC;
    const idx_t r0 = (idx_t)piece * chunk;
    const idx_t r1 = min(r0 + chunk, R);
    const idx_t base = o * R * inner + col;

    accv_t acc[CLT_ITEMS];
    accv_t comp[CLT_ITEMS];
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) {
        acc[k] = (accv_t)IDENT;
        comp[k] = (accv_t)0;
    }
    acc_t edge[CLT_VEC], edgec[CLT_VEC]; /* the last, partial vector of columns: scalar loads */
#pragma unroll
    for (int v = 0; v < CLT_VEC; ++v) {
        edge[v] = IDENT;
        edgec[v] = (acc_t)0;
    }
#if CLT_AX_LOCKSTEP
    /* CPUs: the group steps through rows together, a barrier per step, so a CPU compiler runs
     * the work-items of one step back to back: the group streams whole contiguous rows instead
     * of each work-item walking down its own column strip (the same trip count for all) */
    const int full = o < outer && col + CLT_VEC <= inner;
    const int part = !full && o < outer && col < inner;
    for (idx_t rb = r0; rb < r1; rb += (idx_t)CLT_ITEMS * AX_RT) {
#pragma unroll
        for (int k = 0; k < CLT_ITEMS; ++k) {
            const idx_t r = rb + (idx_t)k * AX_RT + ty;
            if (full && r < r1) {
                ACCUM(acc[k], comp[k], AXLOAD(base + r * inner));
            } else if (part && r < r1) {
#pragma unroll
                for (int v = 0; v < CLT_VEC; ++v)
                    if (col + v < inner) ACCUM1(edge[v], edgec[v], AX1(base + r * inner + v));
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    if (o < outer && col + CLT_VEC <= inner) {
        idx_t r = r0 + ty;
        for (; r + (idx_t)(CLT_ITEMS - 1) * AX_RT < r1; r += (idx_t)CLT_ITEMS * AX_RT) {
#pragma unroll
            for (int k = 0; k < CLT_ITEMS; ++k)
                ACCUM(acc[k], comp[k], AXLOAD(base + (r + k * AX_RT) * inner));
        }
        for (; r < r1; r += AX_RT) ACCUM(acc[0], comp[0], AXLOAD(base + r * inner));
    } else if (o < outer && col < inner) {
        for (idx_t r = r0 + ty; r < r1; r += AX_RT) {
#pragma unroll
            for (int v = 0; v < CLT_VEC; ++v)
                if (col + v < inner) ACCUM1(edge[v], edgec[v], AX1(base + r * inner + v));
        }
    }
#endif
#if CLT_KAHAN && CLT_ITEMS > 1
    {   /* the items combined compensated, component by component */
        accv_t s_ = ACC_FIN(acc[0], comp[0]), c_ = (accv_t)0;
#pragma unroll
        for (int k = 1; k < CLT_ITEMS; ++k) ACCUM(s_, c_, ACC_FIN(acc[k], comp[k]));
        acc[0] = ACC_FIN(s_, c_);
    }
#else
    acc[0] = ACC_FIN(acc[0], comp[0]);
#pragma unroll
    for (int k = 1; k < CLT_ITEMS; ++k) acc[0] = OP(acc[0], ACC_FIN(acc[k], comp[k]));
#endif
#pragma unroll
    for (int v = 0; v < CLT_VEC; ++v) edge[v] = ACC_FIN(edge[v], edgec[v]);
    acc_t mine[CLT_VEC];
#if CLT_VEC == 1
    mine[0] = OP(acc[0], edge[0]);
#else
    CAT(vstore, CLT_VEC)(acc[0], 0, mine);
#pragma unroll
    for (int v = 0; v < CLT_VEC; ++v) mine[v] = OP(mine[v], edge[v]);
#endif

    ax_cols_tree(mine, tile, lid, ty);
    if (ty == 0 && o < outer) {
#pragma unroll
        for (int v = 0; v < CLT_VEC; ++v) {
            if (col + v < inner) {
                if (split == 1)
                    STORE_OUT(out + o * inner + col + v, mine[v]);
                else
                    PUT_PARTIAL(partials, (o * split + piece) * inner + col + v, mine[v]);
            }
        }
    }
#if CLT_AX_ONEPASS
    /* the last group of this column tile adds up its `split` pieces: work-item (tx, ty) takes
     * pieces ty, ty + AX_RT, ... of its columns, then the tree over ty */
    if (split > 1 && ax_last_of(tickets, g / split, split, is_last)) {
        acc_t fin[CLT_VEC];
#pragma unroll
        for (int v = 0; v < CLT_VEC; ++v) {
            fin[v] = IDENT;
            acc_t fc = (acc_t)0; /* compensated where the pieces were (CLT_KAHAN) */
            if (col + v < inner)
                for (uint j = ty; j < split; j += AX_RT)
                    ACCUM1(fin[v], fc, GET_PARTIAL(partials, (o * split + j) * inner + col + v));
            fin[v] = ACC_FIN(fin[v], fc);
        }
        ax_cols_tree(fin, tile, lid, ty);
        if (ty == 0) {
#pragma unroll
            for (int v = 0; v < CLT_VEC; ++v)
                if (col + v < inner) STORE_OUT(out + o * inner + col + v, fin[v]);
        }
        if (lid == 0) atomic_xchg(tickets + g / split, 0u);
    }
#endif
}

__kernel CLT_WG_ATTR void
clt_ax_cols(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t outer,
            const idx_t R, const idx_t inner, const uint split, const idx_t chunk,
            const idx_t ctiles, const uint aligned, __global acc_t *partials,
            __global uint *tickets, __global out_t *out, __local acc_t *tile) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    __local uint is_last;
    const uint lid = get_local_id(0);
    const uint tx = lid % CLT_AX_COLS;
    const uint ty = lid / CLT_AX_COLS;
    const idx_t units = outer * ctiles * split;
    for (idx_t g = get_group_id(0); g < units; g += get_num_groups(0))
        ax_cols_unit(AX_XY, g, outer, R, inner, split, chunk, ctiles, aligned, partials,
                     tickets, out, tile, &is_last, lid, tx, ty);
}

/* CPUs: as numpy adds rows. Work-item u owns strip t of CLT_AX_COLS vectors (CLT_AX_COLS *
 * CLT_VEC columns) of outer block o and piece `piece` of the rows, keeps the strip's
 * accumulators in private memory (a CPU's stack, in L1) and streams its rows one after the
 * other: contiguous loads, each row's strip read once. No barriers, no __local memory. */
__kernel void
clt_ax_cols_stream(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t outer,
                   const idx_t R, const idx_t inner, const uint split, const idx_t chunk,
                   const idx_t ctiles, const uint aligned, __global acc_t *partials,
                   __global out_t *out) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    const idx_t u = get_global_id(0);
    if (u >= outer * ctiles * split) return;
    const uint piece = (uint)(u % split);
    const idx_t t = (u / split) % ctiles;
    const idx_t o = u / split / ctiles;
    const idx_t c0 = t * (CLT_AX_COLS * CLT_VEC);
    const idx_t width = min((idx_t)(CLT_AX_COLS * CLT_VEC), inner - c0);
    const uint nv = (uint)(width / CLT_VEC); /* full vectors in this strip */
    const uint tail = (uint)(width - (idx_t)nv * CLT_VEC);
    const idx_t r0 = (idx_t)piece * chunk;
    const idx_t r1 = min(r0 + chunk, R);
    accv_t acc[CLT_AX_COLS];
    acc_t edge[CLT_VEC];
    for (uint j = 0; j < CLT_AX_COLS; ++j) acc[j] = (accv_t)IDENT;
    for (uint v = 0; v < CLT_VEC; ++v) edge[v] = IDENT;
    idx_t r = r0;
#if CLT_KAHAN
    /* compensated: every row into the accumulators through ACCUM (no rows combined first) */
    accv_t comp[CLT_AX_COLS];
    acc_t edgec[CLT_VEC];
    for (uint j = 0; j < CLT_AX_COLS; ++j) comp[j] = (accv_t)0;
    for (uint v = 0; v < CLT_VEC; ++v) edgec[v] = (acc_t)0;
    for (; r < r1; ++r) {
        const idx_t row = (o * R + r) * inner + c0;
        for (uint j = 0; j < nv; ++j) ACCUM(acc[j], comp[j], AXLOAD(row + (idx_t)j * CLT_VEC));
        for (uint v = 0; v < tail; ++v)
            ACCUM1(edge[v], edgec[v], AX1(row + (idx_t)nv * CLT_VEC + v));
    }
    for (uint j = 0; j < nv; ++j) acc[j] = ACC_FIN(acc[j], comp[j]);
    for (uint v = 0; v < tail; ++v) edge[v] = ACC_FIN(edge[v], edgec[v]);
#endif
    for (; r + CLT_ITEMS <= r1; r += CLT_ITEMS) { /* CLT_ITEMS rows a pass: fewer acc updates */
        const idx_t row = (o * R + r) * inner + c0;
        for (uint j = 0; j < nv; ++j) {
            accv_t v_ = AXLOAD(row + (idx_t)j * CLT_VEC);
#pragma unroll
            for (int k = 1; k < CLT_ITEMS; ++k) {
                const accv_t w_ = AXLOAD(row + (idx_t)k * inner + (idx_t)j * CLT_VEC);
                v_ = OP(v_, w_);
            }
            acc[j] = OP(acc[j], v_);
        }
        for (uint v = 0; v < tail; ++v) {
            for (int k = 0; k < CLT_ITEMS; ++k) {
                const acc_t w_ = AX1(row + (idx_t)k * inner + (idx_t)nv * CLT_VEC + v);
                edge[v] = OP(edge[v], w_);
            }
        }
    }
    for (; r < r1; ++r) {
        const idx_t row = (o * R + r) * inner + c0;
        for (uint j = 0; j < nv; ++j) {
            const accv_t v_ = AXLOAD(row + (idx_t)j * CLT_VEC);
            acc[j] = OP(acc[j], v_);
        }
        for (uint v = 0; v < tail; ++v) {
            const acc_t w_ = AX1(row + (idx_t)nv * CLT_VEC + v);
            edge[v] = OP(edge[v], w_);
        }
    }
    const idx_t dst = split == 1 ? o * inner + c0 : (o * split + piece) * inner + c0;
    for (uint j = 0; j < nv; ++j) {
#if CLT_IS_FLOAT && !CLT_IS_HALF && CLT_VEC > 1
        if (split == 1) { /* a float result: the vector converted and stored at once */
            CAT(vstore, CLT_VEC)(CAT(convert_, CAT(CLT_OUT_T, CLT_VEC))(acc[j]), 0,
                                 out + dst + (idx_t)j * CLT_VEC);
            continue;
        }
#endif
        acc_t m[CLT_VEC];
#if CLT_VEC == 1
        m[0] = acc[j];
#else
        CAT(vstore, CLT_VEC)(acc[j], 0, m);
#endif
        for (uint v = 0; v < CLT_VEC; ++v) {
            if (split == 1)
                STORE_OUT(out + dst + (idx_t)j * CLT_VEC + v, m[v]);
            else
                partials[dst + (idx_t)j * CLT_VEC + v] = m[v];
        }
    }
    for (uint v = 0; v < tail; ++v) {
        if (split == 1)
            STORE_OUT(out + dst + (idx_t)nv * CLT_VEC + v, edge[v]);
        else
            partials[dst + (idx_t)nv * CLT_VEC + v] = edge[v];
    }
}

/* CPUs, few columns (inner = 1..AXN_MAX): each outer block is read as a flat array, a block
 * of CLT_VEC rows being `inner` whole vectors. Work-item u takes piece u % split (`chunk`
 * blocks) of outer block u / split and adds vector k of each block into accumulator k, so that
 * lane j of accumulator k only ever sees column (k * CLT_VEC + j) % inner; at the end the
 * lanes are folded into their columns. Full-width loads of whole contiguous blocks, instead of
 * one short vector (or scalars) a row: 2-7 columns of 2-4 x 10^6 rows had read at 0.3-0.7 of
 * the 1-D sum's GB/s. `inner` is a constant in each case of the switch (accumulators in
 * registers). The last piece also takes the rows past the last whole block. Results go to out
 * (split 1) or partials[(o * split + piece) * inner + c] for clt_ax_cols_fin. Built where the
 * host may launch it (-DCLT_AX_NARROW=1: CPUs, streamed columns). */
#ifndef CLT_AX_NARROW
#define CLT_AX_NARROW 0
#endif
#if CLT_AX_NARROW && CLT_VEC > 1
#define AXN_MAX 16
#define AXN_CASE(N)                                                                              \
    case N: {                                                                                  \
        accv_t acc_[N], comp_[N];                                                              \
        _Pragma("unroll") for (int k = 0; k < (N); ++k) {                                      \
            acc_[k] = (accv_t)IDENT;                                                           \
            comp_[k] = (accv_t)0;                                                              \
        }                                                                                      \
        for (idx_t b = b0; b < b1; ++b) {                                                      \
            const idx_t e_ = base + b * ((N) * CLT_VEC);                                       \
            _Pragma("unroll") for (int k = 0; k < (N); ++k)                                    \
                ACCUM(acc_[k], comp_[k], AXV(e_ + k * CLT_VEC));                               \
        }                                                                                      \
        _Pragma("unroll") for (int k = 0; k < (N); ++k) {                                      \
            acc_t h_[CLT_VEC];                                                                 \
            CAT(vstore, CLT_VEC)(ACC_FIN(acc_[k], comp_[k]), 0, h_);                           \
            _Pragma("unroll") for (int j = 0; j < CLT_VEC; ++j)                                \
                ACCUM1(col[(k * CLT_VEC + j) % (N)], colc[(k * CLT_VEC + j) % (N)], h_[j]);    \
        }                                                                                      \
    } break

__kernel void
clt_ax_cols_narrow(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t outer,
                   const idx_t R, const idx_t inner, const uint split, const idx_t chunk,
                   __global acc_t *partials, __global out_t *out) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    const idx_t u = get_global_id(0);
    if (u >= outer * split) return;
    const uint piece = (uint)(u % split);
    const idx_t o = u / split;
    const idx_t base = o * R * inner;
    const idx_t nb = R / CLT_VEC; /* whole blocks */
    const idx_t b0 = min((idx_t)piece * chunk, nb);
    const idx_t b1 = min(b0 + chunk, nb);
    acc_t col[AXN_MAX], colc[AXN_MAX];
#pragma unroll
    for (int c = 0; c < AXN_MAX; ++c) {
        col[c] = IDENT;
        colc[c] = (acc_t)0;
    }
    switch ((uint)inner) {
        AXN_CASE(1);
        AXN_CASE(2);
        AXN_CASE(3);
        AXN_CASE(4);
        AXN_CASE(5);
        AXN_CASE(6);
        AXN_CASE(7);
        AXN_CASE(8);
        AXN_CASE(9);
        AXN_CASE(10);
        AXN_CASE(11);
        AXN_CASE(12);
        AXN_CASE(13);
        AXN_CASE(14);
        AXN_CASE(15);
        AXN_CASE(16);
        default: break;
    }
    if (piece == split - 1) {
        for (idx_t r = nb * CLT_VEC; r < R; ++r)
            for (uint c = 0; c < (uint)inner; ++c)
                ACCUM1(col[c], colc[c], AX1(base + r * inner + c));
    }
    const idx_t dst = split == 1 ? o * inner : (o * split + piece) * inner;
    for (uint c = 0; c < (uint)inner; ++c) {
        const acc_t v = ACC_FIN(col[c], colc[c]);
        if (split == 1)
            STORE_OUT(out + dst + c, v);
        else
            partials[dst + c] = v;
    }
}
#endif /* CLT_AX_NARROW */

/* partials[(o * split + piece) * inner + i] over piece -> out[o * inner + i]. A group of
 * CLT_WG work-items takes `fcols` consecutive outputs (a power of two <= CLT_WG, from the
 * host: few outputs get many work-items each); CLT_WG / fcols of them stride the pieces, then
 * a tree in __local memory. Loads of neighbouring outputs are neighbours (coalesced). */
__kernel CLT_WG_ATTR void
clt_ax_cols_fin(__global const acc_t *partials, const idx_t outer, const idx_t inner,
                const uint split, const uint fcols, __global out_t *out,
                __local acc_t *tile) {
    const uint lid = get_local_id(0);
    const uint tx = lid % fcols;
    const uint ty = lid / fcols;
    const uint nty = CLT_WG / fcols;
    const idx_t k = (idx_t)get_group_id(0) * fcols + tx;
    const int live = k < outer * inner;
    const idx_t o = live ? k / inner : 0;
    const idx_t i = live ? k - o * inner : 0;
    acc_t s = IDENT, c = (acc_t)0; /* compensated where the pieces were (CLT_KAHAN) */
    if (live)
        for (uint j = ty; j < split; j += nty) ACCUM1(s, c, partials[(o * split + j) * inner + i]);
    tile[lid] = ACC_FIN(s, c);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint st = nty / 2; st > 0; st >>= 1) {
        if (ty < st) tile[lid] = OP(tile[lid], tile[lid + st * fcols]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (live && ty == 0) STORE_OUT(out + k, tile[lid]);
}

/* ---- segments ---------------------------------------------------------------------------- */
/* offs: m + 1 bounds, long when off64 else int. init is combined into every segment (the
 * identity unless the caller gave `initial`). */
__kernel CLT_WG_ATTR void
clt_ax_segs(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t n,
            __global const int *offs, const uint off64, const idx_t m, const acc_t init,
            __global uint *err, __global uint *long_list, __global uint *long_count,
            __global out_t *out, __local acc_t *tile) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    const uint lid = get_local_id(0);
    const uint lane = lid % CLT_AX_LANES;
    const idx_t units = (m + AX_RPG - 1) / AX_RPG;
#if CLT_AX_BLOCKED
    const idx_t per = (units + get_num_groups(0) - 1) / get_num_groups(0);
    const idx_t u_end = min(units, (idx_t)(get_group_id(0) + 1) * per);
    for (idx_t u = (idx_t)get_group_id(0) * per; u < u_end; ++u) {
#else
    for (idx_t u = get_group_id(0); u < units; u += get_num_groups(0)) {
#endif
    const idx_t seg = u * AX_RPG + lid / CLT_AX_LANES;
    const int live = seg < m;
    long b = 0, e = 0;
    if (live) {
        if (off64) {
            b = ((__global const long *)offs)[seg];
            e = ((__global const long *)offs)[seg + 1];
        } else {
            b = offs[seg];
            e = offs[seg + 1];
        }
    }
    if (b < 0 || e < b || e > (long)n) {
        if (lane == 0) atomic_min(err, (uint)min(seg, (idx_t)0xfffffffeu));
        b = e = 0;
    }
    /* a long segment goes to clt_ax_segs_long (a work-group each), so that one long segment
     * never holds up a few lanes while the rest of the device idles; not where a group is one
     * work-item walking its block of segments in memory order (CPUs): there a group of its
     * own would be the same work-item, out of order (4096 segments of ~4096 floats 2.4-4.0
     * ms where 3.5-5.2, docs/logs/cpu-axis-rows-blocked-2026-12-06.txt) */
#if CLT_AX_BLOCKED && CLT_WG == 1
    const int is_long = 0;
#else
    const int is_long = (e - b) > (long)CLT_AX_LONG * CLT_AX_LANES * CLT_VEC * CLT_ITEMS;
#endif
    if (is_long) {
        if (lane == 0) long_list[atomic_inc(long_count)] = (uint)seg;
        e = b;
    }
    acc_t r = ax_row_sum(AX_XY, 0, (idx_t)b, (idx_t)e, lane, CLT_AX_LANES, 0u);
    r = ax_lane_combine(r, tile);
    r = OP(r, init);
#if CLT_IS_FLOAT && (CLT_OP == 0 || CLT_OP == 4)
    if (e == b) r = init + (acc_t)0; /* numpy: an empty sum is +0.0 (a sum of -0.0s is -0.0) */
#endif
    if (live && lane == 0 && !is_long) STORE_OUT(out + seg, r);
    }
}

/* The long segments clt_ax_segs listed: group i takes entries i, i + groups, ... of the list
 * (its length read from the device: no host round trip). The last group to finish empties
 * the list for the next launch. */
__kernel CLT_WG_ATTR void
clt_ax_segs_long(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS,
                 __global const int *offs, const uint off64, const acc_t init,
                 __global const uint *long_list, __global uint *long_count,
                 __global uint *ticket, __global out_t *out, __local acc_t *tile) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    __local uint is_last;
    const uint lid = get_local_id(0);
    const uint count = atomic_add(long_count, 0u);
    for (uint i = get_group_id(0); i < count; i += get_num_groups(0)) {
        const uint seg = long_list[i];
        long b, e;
        if (off64) {
            b = ((__global const long *)offs)[seg];
            e = ((__global const long *)offs)[seg + 1];
        } else {
            b = offs[seg];
            e = offs[seg + 1];
        }
        acc_t r = ax_row_sum(AX_XY, 0, (idx_t)b, (idx_t)e, lid, CLT_WG, 0u);
        r = ax_group_combine(r, tile);
        if (lid == 0) STORE_OUT(out + seg, OP(r, init));
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) is_last = (atomic_inc(ticket) == get_num_groups(0) - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (is_last && lid == 0) {
        atomic_xchg(long_count, 0u);
        atomic_xchg(ticket, 0u);
    }
}

__kernel void clt_ax_probe(__global int *flags) {
    flags[0] = CLT_HAVE_SUBGROUPS;
    flags[1] = CLT_HAVE_NV_PTX;
    flags[2] = AX_WARP_ACTIVE;
}
