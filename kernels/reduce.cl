/* cltune reduction kernels: one source, every strategy, op and element type chosen by -D.
 *
 * Every tunable has a default below so the file compiles on its own. Values reach it only as
 * -D options produced by cltune.config.build_defines() from a validated Config.
 *
 * Stage 1 (clt_stage1): each work-item accumulates CLT_ITEMS vector loads of CLT_VEC elements per
 * step in registers, then the work-group combines them with CLT_STRATEGY:
 *   0 local_tree     tile in __local memory (dynamic argument), tree with a barrier after
 *                    every phase; barriers never sit in divergent code
 *   1 subgroup       sub_group_reduce_* per subgroup, one partial per subgroup
 *   2 subgroup_local sub_group_reduce_*, then the subgroup partials through __local memory
 *   3 warp_shuffle   NVIDIA: shfl.sync.down in inline PTX per warp, then __local across warps
 *   4 serial         no cooperation: each work-item streams its own contiguous chunk
 * Where a strategy's feature is missing, it falls back to local_tree (CLT_SG_ACTIVE /
 * CLT_WARP_ACTIVE say which path was compiled; clt_probe reports them to the host).
 * Partials are finished on the device: by clt_stage2 (CLT_PASSES == 2) or by the last work-group
 * to finish stage 1 (CLT_PASSES == 1, atomic ticket).
 */

#ifndef CLT_OP
#define CLT_OP 0 /* 0 sum, 1 prod, 2 min, 3 max, 4 dot */
#endif
#ifndef CLT_IN_T
#define CLT_IN_T float
#endif
#ifndef CLT_ACC_T
#define CLT_ACC_T float
#endif
#ifndef CLT_OUT_T
#define CLT_OUT_T float
#endif
#ifndef CLT_OUT_U
#define CLT_OUT_U uint
#endif
#ifndef CLT_IS_FLOAT
#define CLT_IS_FLOAT 1
#endif
#ifndef CLT_IS_HALF
#define CLT_IS_HALF 0
#endif
#ifndef CLT_NEEDS_FP64
#define CLT_NEEDS_FP64 0
#endif
#ifndef CLT_STRATEGY
#define CLT_STRATEGY 0
#endif
#ifndef CLT_WG
#define CLT_WG 64
#endif
#ifndef CLT_LANES
#define CLT_LANES 1
#endif
#ifndef CLT_ITEMS
#define CLT_ITEMS 4
#endif
#ifndef CLT_VEC
#define CLT_VEC 4
#endif
#ifndef CLT_PASSES
#define CLT_PASSES 2
#endif
#ifndef CLT_KAHAN
#define CLT_KAHAN 0
#endif
#ifndef CLT_INDEX64
#define CLT_INDEX64 0
#endif
#ifndef CLT_ACC_64
#define CLT_ACC_64 0 /* the accumulator is 8 bytes wide */
#endif
#ifndef CLT_HOOK
#define CLT_HOOK 0 /* 1: the in-group combine is clt_hook_combine, from a strategy's own source */
#endif
#ifndef CLT_REQD_WG
#define CLT_REQD_WG 1 /* 0: no reqd_work_group_size (to query the kernel's own limit) */
#endif
#if CLT_REQD_WG
#define CLT_WG_ATTR __attribute__((reqd_work_group_size(CLT_WG, 1, 1)))
#else
#define CLT_WG_ATTR
#endif
#ifndef CLT_NV_PTX
#define CLT_NV_PTX 0 /* the host saw NVIDIA's platform: inline PTX may be used */
#endif

#if CLT_NEEDS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if CLT_INDEX64
typedef ulong idx_t;
#else
typedef uint idx_t;
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef CLT_ACC_T acc_t;

/* ---- feature guards ---------------------------------------------------------------------- */
#if defined(cl_khr_subgroups) || (defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 300 && defined(__opencl_c_subgroups))
#define CLT_HAVE_SUBGROUPS 1
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#else
#define CLT_HAVE_SUBGROUPS 0
#endif

#if CLT_NV_PTX || defined(cl_nv_pragma_unroll)
#define CLT_HAVE_NV_PTX 1
#else
#define CLT_HAVE_NV_PTX 0
#endif

/* subgroup builtins have no multiply */
#if (CLT_STRATEGY == 1 || CLT_STRATEGY == 2) && CLT_HAVE_SUBGROUPS && CLT_OP != 1
#define CLT_SG_ACTIVE 1
#else
#define CLT_SG_ACTIVE 0
#endif
#if CLT_STRATEGY == 3 && CLT_HAVE_NV_PTX
#define CLT_WARP_ACTIVE 1
#else
#define CLT_WARP_ACTIVE 0
#endif
#if CLT_STRATEGY == 4
#define CLT_SERIAL 1
#else
#define CLT_SERIAL 0
#endif

/* ---- the operation ----------------------------------------------------------------------- */
#if CLT_OP == 0 || CLT_OP == 4
#if CLT_IS_FLOAT
#define IDENT ((acc_t)(-0.0f)) /* -0.0 + x == x for every x, and keeps the sum of -0.0s -0.0 */
#else
#define IDENT ((acc_t)0)
#endif
#define OP(a, b) ((a) + (b))
#define SG_REDUCE(v) sub_group_reduce_add(v)
#elif CLT_OP == 1
#define IDENT ((acc_t)1)
#define OP(a, b) ((a) * (b))
#elif CLT_OP == 2
#if CLT_IS_FLOAT
#define IDENT ((acc_t)INFINITY)
/* NaN propagates as in numpy.min; (a != a) is isnan(a) as one vector compare */
#define OP(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))
#else
#define IDENT CAT(CAT(CLT_IN_T, _), MAX_VALUE)
#define OP(a, b) min((a), (b))
#endif
#define SG_REDUCE(v) sub_group_reduce_min(v)
#elif CLT_OP == 3
#if CLT_IS_FLOAT
#define IDENT ((acc_t)(-INFINITY))
#define OP(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#else
#define IDENT CAT(CAT(CLT_IN_T, _), MIN_VALUE)
#define OP(a, b) max((a), (b))
#endif
#define SG_REDUCE(v) sub_group_reduce_max(v)
#endif

/* integer limits by type name, for IDENT */
#define int_MAX_VALUE INT_MAX
#define int_MIN_VALUE INT_MIN
#define uint_MAX_VALUE UINT_MAX
#define uint_MIN_VALUE 0u
#define long_MAX_VALUE LONG_MAX
#define long_MIN_VALUE LONG_MIN
#define ulong_MAX_VALUE ULONG_MAX
#define ulong_MIN_VALUE 0ul

/* ---- loads: element type -> accumulator type ----------------------------------------------- */
#if CLT_VEC == 1
typedef acc_t accv_t;
#if CLT_IS_HALF
#define LOADV_X(i, p) ((acc_t)vload_half((i), (p)))
#else
#define LOADV_X(i, p) ((acc_t)(p)[(i)])
#endif
#else
typedef CAT(CLT_ACC_T, CLT_VEC) accv_t;
#if CLT_IS_HALF
#define LOADV_X(i, p) CAT(convert_, CAT(CLT_ACC_T, CLT_VEC))(CAT(vload_half, CLT_VEC)((i), (p)))
#else
#define LOADV_X(i, p) CAT(convert_, CAT(CLT_ACC_T, CLT_VEC))(CAT(vload, CLT_VEC)((i), (p)))
#endif
#endif
#if CLT_IS_HALF
#define LOAD1_X(j, p) ((acc_t)vload_half((j), (p)))
#else
#define LOAD1_X(j, p) ((acc_t)(p)[(j)])
#endif

#if CLT_OP == 4
#define LOADV(i) (LOADV_X(i, xp) * LOADV_X(i, yp))
#define LOAD1(j) (LOAD1_X(j, xp) * LOAD1_X(j, yp))
#define Y_ARGS , __global const CLT_IN_T *y, const idx_t yoff
#define Y_SETUP __global const CLT_IN_T *yp = y + yoff;
#else
#define LOADV(i) LOADV_X(i, xp)
#define LOAD1(j) LOAD1_X(j, xp)
#define Y_ARGS
#define Y_SETUP
#endif

/* accumulate v into s (with compensation c when CLT_KAHAN); ACC_FIN(s, c) is the value.
 * Products (CLT_OP == 1): s * v == t + e exactly (an FMA gives e), and the error terms are
 * carried in c, so that s + c is the product (Graillat's compensated product); sums and dots:
 * Kahan's compensated sum, s - c. */
#if CLT_KAHAN && CLT_OP == 1
#define ACCUM(s, c, v)                                                                           \
    do {                                                                                         \
        const accv_t v_ = (v);                                                                   \
        const accv_t t_ = (s) * v_;                                                              \
        (c) = fma((c), v_, fma((s), v_, -t_));                                                   \
        (s) = t_;                                                                                \
    } while (0)
#define ACCUM1(s, c, v)                                                                          \
    do {                                                                                         \
        const acc_t v_ = (v);                                                                    \
        const acc_t t_ = (s) * v_;                                                               \
        (c) = fma((c), v_, fma((s), v_, -t_));                                                   \
        (s) = t_;                                                                                \
    } while (0)
#define ACC_FIN(s, c) ((s) + (c))
#elif CLT_KAHAN
#define ACC_FIN(s, c) ((s) - (c))
#define ACCUM(s, c, v)                                                                           \
    do {                                                                                         \
        accv_t y_ = (v) - (c);                                                                   \
        accv_t t_ = (s) + y_;                                                                    \
        (c) = (t_ - (s)) - y_;                                                                   \
        (s) = t_;                                                                                \
    } while (0)
#define ACCUM1(s, c, v)                                                                          \
    do {                                                                                         \
        acc_t y_ = (v) - (c);                                                                    \
        acc_t t_ = (s) + y_;                                                                     \
        (c) = (t_ - (s)) - y_;                                                                   \
        (s) = t_;                                                                                \
    } while (0)
#else
#define ACC_FIN(s, c) (s)
/* the operand is evaluated once (OP may use its arguments more than once) */
#define ACCUM(s, c, v)                                                                           \
    do {                                                                                         \
        const accv_t v_ = (v);                                                                   \
        (s) = OP((s), v_);                                                                       \
    } while (0)
#define ACCUM1(s, c, v)                                                                          \
    do {                                                                                         \
        const acc_t v_ = (v);                                                                    \
        (s) = OP((s), v_);                                                                       \
    } while (0)
#endif

/* horizontal combine of one vector accumulator */
inline acc_t hreduce(accv_t v) {
#if CLT_VEC >= 16
    CAT(CLT_ACC_T, 8) v8 = OP(v.lo, v.hi);
#elif CLT_VEC == 8
    CAT(CLT_ACC_T, 8) v8 = v;
#endif
#if CLT_VEC >= 8
    CAT(CLT_ACC_T, 4) v4 = OP(v8.lo, v8.hi);
#elif CLT_VEC == 4
    CAT(CLT_ACC_T, 4) v4 = v;
#endif
#if CLT_VEC >= 4
    CAT(CLT_ACC_T, 2) v2 = OP(v4.lo, v4.hi);
#elif CLT_VEC == 2
    CAT(CLT_ACC_T, 2) v2 = v;
#endif
#if CLT_VEC >= 2
    return OP(v2.lo, v2.hi);
#else
    return v;
#endif
}

/* write the final value (integers bit-exactly through the unsigned type of the result width) */
#if CLT_IS_HALF
#define STORE_OUT(out, v) vstore_half((float)(v), 0, (out))
#elif CLT_IS_FLOAT
#define STORE_OUT(out, v) (out)[0] = (CLT_OUT_T)(v)
#else
#define STORE_OUT(out, v) (out)[0] = CAT(as_, CLT_OUT_T)((CLT_OUT_U)(v))
#endif
#if CLT_IS_HALF
typedef half out_t;
#else
typedef CLT_OUT_T out_t;
#endif

/* ---- partials crossing work-groups --------------------------------------------------------
 * With CLT_PASSES == 1 the last group reads partials other groups wrote in the same launch.
 * Plain accesses there would be an inter-group data race (OpenCL 1.2 orders nothing across
 * work-groups), so every store and load of a partial is an atomic on its bit pattern
 * (xchg to store, add 0 to load): coherent at device scope on every implementation, and what
 * Oclgrind's race checker accepts. Two-pass builds use plain accesses (the kernel boundary
 * orders them). */
#if CLT_PASSES == 1 && CLT_ACC_64
#if defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#else
#error "single pass with a 64-bit accumulator needs cl_khr_int64_base_atomics"
#endif
#define PUT_PARTIAL(p, j, v) atom_xchg((volatile __global long *)(p) + (j), as_long(v))
#define GET_PARTIAL(p, j)                                                                        \
    CAT(as_, CLT_ACC_T)(atom_add((volatile __global long *)(p) + (j), 0L))
#elif CLT_PASSES == 1
#define PUT_PARTIAL(p, j, v) atomic_xchg((volatile __global int *)(p) + (j), as_int(v))
#define GET_PARTIAL(p, j) CAT(as_, CLT_ACC_T)(atomic_add((volatile __global int *)(p) + (j), 0))
#else
#define PUT_PARTIAL(p, j, v) ((p)[(j)] = (v))
#define GET_PARTIAL(p, j) ((p)[(j)])
#endif

/* ---- warp shuffle (NVIDIA inline PTX) ------------------------------------------------------ */
#if CLT_WARP_ACTIVE
inline uint shfl_down_u32(uint v, uint delta) {
    uint r;
    asm volatile("shfl.sync.down.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(delta));
    return r;
}
inline acc_t shfl_down(acc_t v, uint delta) {
#if CLT_ACC_64
    uint2 u = as_uint2(v);
    u.x = shfl_down_u32(u.x, delta);
    u.y = shfl_down_u32(u.y, delta);
    return CAT(as_, CLT_ACC_T)(u);
#else
    return CAT(as_, CLT_ACC_T)(shfl_down_u32(as_uint(v), delta));
#endif
}
inline acc_t warp_reduce(acc_t v) {
    for (uint off = 16; off > 0; off >>= 1) {
        const acc_t o = shfl_down(v, off); /* every lane shuffles: never inside OP's ?: */
        v = OP(v, o);
    }
    return v; /* valid in lane 0 */
}
#endif

/* ---- finishing a list of partials inside one work-group ------------------------------------ */
/* Every work-item of the group calls this (it holds barriers); the result is valid in lid 0.
 * `tile` holds at least CLT_WG elements. */
inline acc_t group_finish(__global volatile const acc_t *partials, const uint m,
                          __local acc_t *tile) {
    const uint lid = get_local_id(0);
    acc_t s = IDENT;
    acc_t c = (acc_t)0;
    for (uint j = lid; j < m; j += CLT_WG) ACCUM1(s, c, GET_PARTIAL(partials, j));
    s = ACC_FIN(s, c);
    tile[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = CLT_WG / 2; stride > 0; stride >>= 1) {
        if (lid < stride) tile[lid] = OP(tile[lid], tile[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return tile[0];
}

/* ---- a strategy outside this file ----------------------------------------------------------
 * A registered strategy with its own OpenCL (cltune.strategies, `source`) is built as this file
 * followed by that source, which defines the in-group combine below. Every work-item of the
 * group calls it (it may use barriers); it stores the group's partials with PUT_PARTIAL at
 * `partials` from index `unit * (its count)` and returns how many partials the group wrote.
 * `tile` holds max(tile, wg) accumulators. */
#if CLT_HOOK
uint clt_hook_combine(acc_t v, __local acc_t *tile, __global acc_t *partials, idx_t unit);
#endif

/* ---- the 1-D kernels (left out with -DCLT_NO_1D=1: kernels/axis.cl builds on this header) -- */
#ifndef CLT_NO_1D
#define CLT_NO_1D 0
#endif
#if !CLT_NO_1D

/* ---- stage 1 ------------------------------------------------------------------------------- */
/* x: input (offset xoff elements), n elements. Non-serial strategies: work-group g owns
 * [g*chunk, (g+1)*chunk); serial: work-item g owns it. chunk is a multiple of the block a unit
 * consumes per step. partials: one per group (local_tree, subgroup_local, warp_shuffle), per
 * subgroup (subgroup) or per work-item (serial). */
__kernel CLT_WG_ATTR void
clt_stage1(__global const CLT_IN_T *x, const idx_t xoff Y_ARGS, const idx_t n, const idx_t chunk,
           __global acc_t *partials, __local acc_t *tile, __global uint *ticket,
           __global out_t *out) {
    __global const CLT_IN_T *xp = x + xoff;
    Y_SETUP
    const uint lid = get_local_id(0);
#if CLT_SERIAL
    const idx_t unit = get_global_id(0);
#define STEP_WG 1
#define MY_LANE 0
#else
    const idx_t unit = get_group_id(0);
#define STEP_WG CLT_WG
#define MY_LANE lid
#endif
    const idx_t start = unit * chunk;
    const idx_t end = min(start + chunk, n);
    const idx_t block = (idx_t)STEP_WG * CLT_ITEMS * CLT_VEC;

    accv_t acc[CLT_ITEMS];
    accv_t comp[CLT_ITEMS];
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) {
        acc[k] = (accv_t)IDENT;
        comp[k] = (accv_t)0;
    }
    idx_t i = start;
    if (start < end) {
        for (; i + block <= end; i += block) {
            /* vloadN(v, p + i) reads elements p[i + v*N .. i + v*N + N-1] */
#pragma unroll
            for (int k = 0; k < CLT_ITEMS; ++k) {
                const idx_t v = (idx_t)k * STEP_WG + MY_LANE;
#if CLT_VEC == 1
                ACCUM(acc[k], comp[k], LOAD1(i + v));
#else
                const idx_t e = i + v * CLT_VEC;
#if CLT_OP == 4
                ACCUM(acc[k], comp[k], LOADV_X(0, xp + e) * LOADV_X(0, yp + e));
#else
                ACCUM(acc[k], comp[k], LOADV_X(0, xp + e));
#endif
#endif
            }
        }
    }
    /* the remainder of the chunk, element by element (out-of-range items are never loaded);
     * unrolled so that a work-item's loads of it are in flight together, not one after another
     * (only the last group has a remainder, but the whole launch waits for it) */
    acc_t s = IDENT;
    acc_t c = (acc_t)0;
#pragma unroll 8
    for (idx_t j = i + MY_LANE; j < end; j += STEP_WG) ACCUM1(s, c, LOAD1(j));
    s = ACC_FIN(s, c);

    /* registers -> CLT_LANES values per work-item */
    acc_t lane[CLT_LANES];
#pragma unroll
    for (int l = 0; l < CLT_LANES; ++l) lane[l] = IDENT;
#pragma unroll
    for (int k = 0; k < CLT_ITEMS; ++k) {
        acc[k] = ACC_FIN(acc[k], comp[k]);
        const acc_t h = hreduce(acc[k]);
        lane[k % CLT_LANES] = OP(lane[k % CLT_LANES], h);
    }
    lane[0] = OP(lane[0], s);

    /* ---- in-group combine ---- */
    uint my_partial_count; /* partials this group wrote */
    /* one pass of one group (small n): the group's value is the result, stored by work-item
     * 0 with no partial, ticket or finish (ONE_GROUP_OUT: where the strategy has it there) */
#if CLT_PASSES == 1
    const int one_group = get_num_groups(0) == 1;
#else
    const int one_group = 0;
#endif
#define ONE_GROUP_OUT(v)                                                                         \
    do {                                                                                       \
        if (one_group)                                                                         \
            STORE_OUT(out, (v));                                                               \
        else                                                                                   \
            PUT_PARTIAL(partials, unit, (v));                                                  \
    } while (0)
#if CLT_HOOK
#pragma unroll
    for (int l = 1; l < CLT_LANES; ++l) lane[0] = OP(lane[0], lane[l]);
    my_partial_count = clt_hook_combine(lane[0], tile, partials, unit);
#elif CLT_SERIAL
    PUT_PARTIAL(partials, unit, lane[0]);
    my_partial_count = CLT_WG;
#elif CLT_SG_ACTIVE && CLT_STRATEGY == 1
    {
        acc_t r = SG_REDUCE(lane[0]);
        const uint nsg = get_num_sub_groups();
        if (get_sub_group_local_id() == 0)
            PUT_PARTIAL(partials, unit * nsg + get_sub_group_id(), r);
        my_partial_count = nsg;
    }
#elif CLT_SG_ACTIVE && CLT_STRATEGY == 2
    {
        acc_t r = SG_REDUCE(lane[0]);
        const uint nsg = get_num_sub_groups();
        const uint sgid = get_sub_group_id();
        if (get_sub_group_local_id() == 0) tile[sgid] = r;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sgid == 0) { /* uniform per subgroup */
            acc_t t = IDENT;
            for (uint j = get_sub_group_local_id(); j < nsg; j += get_sub_group_size())
                t = OP(t, tile[j]);
            t = SG_REDUCE(t);
            if (lid == 0) ONE_GROUP_OUT(t);
        }
        my_partial_count = 1;
    }
#elif CLT_WARP_ACTIVE
    {
        acc_t r = warp_reduce(lane[0]);
        const uint nw = (CLT_WG + 31) / 32;
        if ((lid & 31) == 0) tile[lid >> 5] = r;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < 32) { /* whole warp 0: uniform for the shuffle */
            acc_t t = lid < nw ? tile[lid] : IDENT;
            t = warp_reduce(t);
            if (lid == 0) ONE_GROUP_OUT(t);
        }
        my_partial_count = 1;
    }
#else /* local_tree, and the fallback of the others */
    {
#pragma unroll
        for (int l = 0; l < CLT_LANES; ++l) tile[l * CLT_WG + lid] = lane[l];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint stride = (CLT_LANES * CLT_WG) / 2; stride > 0; stride >>= 1) {
            for (uint j = lid; j < stride; j += CLT_WG) tile[j] = OP(tile[j], tile[j + stride]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) ONE_GROUP_OUT(tile[0]);
        my_partial_count = 1;
    }
#endif
#if CLT_HOOK || CLT_SERIAL || (CLT_SG_ACTIVE && CLT_STRATEGY == 1)
#define CLT_ONE_GROUP_DONE 0 /* these wrote partials: the finish below takes them */
#else
#define CLT_ONE_GROUP_DONE 1
#endif
#if CLT_PASSES == 1 && CLT_ONE_GROUP_DONE
    if (one_group)
        return; /* uniform: the only group */
#endif

#if CLT_PASSES == 1
    /* single pass: the last group to finish combines all partials (threadfence reduction) */
    __local uint is_last;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#if CLT_HAVE_NV_PTX
    asm volatile("membar.gl;");
#endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) is_last = (atomic_inc(ticket) == get_num_groups(0) - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (is_last) { /* uniform per group */
#if CLT_HAVE_NV_PTX
        asm volatile("membar.gl;");
#endif
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        const uint m = get_num_groups(0) * my_partial_count;
        acc_t r = group_finish((__global volatile const acc_t *)partials, m, tile);
        if (lid == 0) {
            STORE_OUT(out, r);
            atomic_xchg(ticket, 0u); /* ready for the next launch (atomic: others used it so) */
        }
    }
#endif
}

/* ---- stage 2: one work-group finishes the partials ----------------------------------------- */
__kernel CLT_WG_ATTR void
clt_stage2(__global const acc_t *partials, const uint m, __global out_t *out,
           __local acc_t *tile) {
    acc_t r = group_finish((__global volatile const acc_t *)partials, m, tile);
    if (get_local_id(0) == 0) STORE_OUT(out, r);
}

/* ---- probe: which paths does this build really compile? ------------------------------------ */
__kernel void clt_probe(__global int *flags) {
    flags[0] = CLT_HAVE_SUBGROUPS;
    flags[1] = CLT_HAVE_NV_PTX;
    flags[2] = CLT_SG_ACTIVE;
    flags[3] = CLT_WARP_ACTIVE;
}
#endif /* !CLT_NO_1D */
