/* cltune expression reductions: the skeleton of cltune.ReductionKernel.
 *
 * The application's reduction arrives as a prelude that cltune.expr_source generates from its
 * expressions (code the application trusts, like pyopencl's ReductionKernel): the types
 * clt_out_t (accumulator) and clt_res_t (result), CLT_NEUTRAL, CLT_MAP(i), CLT_REDUCE(a, b),
 * CLT_FINISH(a) (of `a`, `n` and the scalar arguments), optionally CLT_FOLD1(a, i) (element i
 * folded into accumulator a), the argument declarators CLT_USER_ARGS and their set-up
 * CLT_USER_PREP. Without
 * it this file is a float sum and compiles on its own.
 *
 * Tunables have defaults below; their values reach the file only as -D options produced by
 * cltune.expr_config.ExprConfig.defines() from a validated config (house rule 2).
 *
 * Stage 1 (clt_expr_stage1): every work-item folds CLT_ITEMS accumulators over its elements
 * (CLT_LAYOUT 0: strided over its group's chunk, coalesced; 1: its own contiguous chunk), the
 * group combines them in a __local tree. One group writes the result itself; otherwise each
 * group writes a partial, finished by clt_expr_stage2 (CLT_PASSES 2) or by the last group to
 * finish (CLT_PASSES 1, atomic ticket; offered on NVIDIA only, where membar.gl orders the plain
 * stores of the partials across work-groups: cltune.expr_choice.single_pass_passes). The
 * reduction must be associative and commutative
 * (pyopencl's ReductionKernel reorders it too).
 */

#ifndef CLT_LAYOUT
#define CLT_LAYOUT 0
#endif
#ifndef CLT_WG
#define CLT_WG 64
#endif
#ifndef CLT_ITEMS
#define CLT_ITEMS 4
#endif
#ifndef CLT_PASSES
#define CLT_PASSES 2
#endif
#ifndef CLT_BLOCK
/* steps folded into an accumulator before it restarts (see stage 1); 0: never (set by the
 * prelude when the accumulator holds no floating-point field, or by a kernel whose reduction
 * is exact anyway, such as an argmax, where restarts cost time on CPUs) */
#define CLT_BLOCK 256
#endif
#ifndef CLT_UNIT_STEP
#define CLT_UNIT_STEP 1 /* the call's index step is 1 (decided per call, not tuned) */
#endif
#ifndef CLT_NV_PTX
#define CLT_NV_PTX 0 /* NVIDIA's platform: a PTX membar orders the single-pass partials */
#endif

#ifndef CLT_HAVE_USER
typedef float clt_out_t;
typedef float clt_res_t;
#define CLT_NEUTRAL 0.0f
#define CLT_MAP(i) (in[(i)])
#define CLT_REDUCE(a, b) ((a) + (b))
#define CLT_FINISH(a) (a)
#define CLT_USER_ARGS __global const float *in,
#define CLT_USER_PREP
#endif

#define CLT_WG_ATTR __attribute__((reqd_work_group_size(CLT_WG, 1, 1)))

#if CLT_UNIT_STEP
#define CLT_INDEX(k) (clt_start + (k))
#else
#define CLT_INDEX(k) (clt_start + (k) * clt_step)
#endif

/* acc = REDUCE(acc, MAP(i)) for the k-th element of the range; `i` is the name the
 * application's map expression uses, as in pyopencl */
#ifndef CLT_POS /* an index's position along the reduced axis (the axis skeleton's differs) */
#define CLT_POS(i) (i)
#endif
#ifndef CLT_FOLD1 /* the application's fold_expr, else reduce(a, map(i)) */
#define CLT_FOLD1(a, i) CLT_REDUCE((a), CLT_MAP(i))
#endif
#define CLT_FOLD(acc, k)                                                                         \
    do {                                                                                         \
        const long i = CLT_INDEX(k);                                                             \
        (acc) = CLT_FOLD1((acc), i);                                                             \
    } while (0)

/* Every work-item of the group calls this (barriers); the result is valid in local id 0. */
inline clt_out_t clt_group_tree(clt_out_t v, __local clt_out_t *clt_tile) {
#if CLT_WG > 1
    const uint clt_lid = get_local_id(0);
    clt_tile[clt_lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint clt_s = CLT_WG / 2; clt_s > 0; clt_s >>= 1) {
        if (clt_lid < clt_s) {
            clt_out_t clt_a = clt_tile[clt_lid];
            clt_out_t clt_b = clt_tile[clt_lid + clt_s];
            clt_tile[clt_lid] = CLT_REDUCE(clt_a, clt_b);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return clt_tile[0];
#else
    return v;
#endif
}

/* the m partials (every work-item of the group calls this): in a kernel of their own (stage 2),
 * where plain loads see them */
inline clt_out_t clt_group_finish(__global const clt_out_t *clt_parts, const uint clt_m,
                                  __local clt_out_t *clt_tile) {
    clt_out_t clt_s = CLT_NEUTRAL;
    for (uint clt_j = get_local_id(0); clt_j < clt_m; clt_j += CLT_WG) {
        clt_out_t clt_p = clt_parts[clt_j];
        clt_s = CLT_REDUCE(clt_s, clt_p);
    }
    return clt_group_tree(clt_s, clt_tile);
}

#if CLT_PASSES == 1
/* ... and in the last group of the single pass, through volatile loads (other groups wrote
 * them during this launch). NVIDIA's compiler keeps volatile loads in order and a loop that
 * reduces each partial as it arrives waits for every load in turn (a 32-byte var partial is four
 * loads: ~15 us for 1056 partials on the H200): four partials are loaded before any is used */
inline clt_out_t clt_group_finish_volatile(__global volatile const clt_out_t *clt_parts,
                                           const uint clt_m, __local clt_out_t *clt_tile) {
    clt_out_t clt_s = CLT_NEUTRAL;
    uint clt_j = get_local_id(0);
    for (; clt_j + 3 * CLT_WG < clt_m; clt_j += 4 * CLT_WG) {
        clt_out_t clt_p0 = clt_parts[clt_j], clt_p1 = clt_parts[clt_j + CLT_WG];
        clt_out_t clt_p2 = clt_parts[clt_j + 2 * CLT_WG], clt_p3 = clt_parts[clt_j + 3 * CLT_WG];
        clt_s = CLT_REDUCE(clt_s, clt_p0);
        clt_s = CLT_REDUCE(clt_s, clt_p1);
        clt_s = CLT_REDUCE(clt_s, clt_p2);
        clt_s = CLT_REDUCE(clt_s, clt_p3);
    }
    for (; clt_j < clt_m; clt_j += CLT_WG) {
        clt_out_t clt_p = clt_parts[clt_j];
        clt_s = CLT_REDUCE(clt_s, clt_p);
    }
    return clt_group_tree(clt_s, clt_tile);
}
#endif

__kernel CLT_WG_ATTR void
clt_expr_stage1(CLT_USER_ARGS const long clt_start, const long clt_step, const long n,
                const long clt_chunk, __global clt_out_t *clt_partials,
                __global uint *clt_ticket, __global char *clt_res_base, const long clt_res_off) {
    CLT_USER_PREP
    __local clt_out_t clt_tile[CLT_WG];
    __global clt_res_t *clt_res = (__global clt_res_t *)(clt_res_base + clt_res_off);
    const uint clt_lid = get_local_id(0);

    /* clt_acc: the running accumulators, restarted from the neutral value every CLT_BLOCK
     * steps after being combined into clt_tot; so no accumulator folds a chain longer than
     * CLT_BLOCK elements, which keeps a float sum's rounding error near that of
     * CLT_BLOCK + chunk / CLT_BLOCK additions instead of the whole chunk's */
    clt_out_t clt_acc[CLT_ITEMS], clt_tot = CLT_NEUTRAL;
#pragma unroll
    for (int clt_j = 0; clt_j < CLT_ITEMS; ++clt_j) clt_acc[clt_j] = CLT_NEUTRAL;

#if CLT_LAYOUT == 0
#define CLT_STRIDE ((long)CLT_ITEMS * CLT_WG)
    const long clt_begin = (long)get_group_id(0) * clt_chunk;
    const long clt_end = min(clt_begin + clt_chunk, n);
    const long clt_lim = clt_end - (CLT_ITEMS - 1) * CLT_WG; /* whole steps while k < lim */
    long clt_k = clt_begin + clt_lid;
#else
#define CLT_STRIDE ((long)CLT_ITEMS)
    const long clt_begin = (long)get_global_id(0) * clt_chunk;
    const long clt_end = min(clt_begin + clt_chunk, n);
    const long clt_lim = clt_end - (CLT_ITEMS - 1);
    long clt_k = clt_begin;
#endif
    while (clt_k < clt_lim) {
#if CLT_BLOCK > 0
        const long clt_stop = min(clt_lim, clt_k + CLT_BLOCK * CLT_STRIDE);
#else
        const long clt_stop = clt_lim; /* an exact reduction: no restart */
#endif
        for (; clt_k < clt_stop; clt_k += CLT_STRIDE) {
#pragma unroll
            for (int clt_j = 0; clt_j < CLT_ITEMS; ++clt_j)
                CLT_FOLD(clt_acc[clt_j], clt_k + clt_j * (CLT_STRIDE / CLT_ITEMS));
        }
#pragma unroll
        for (int clt_j = 0; clt_j < CLT_ITEMS; ++clt_j) {
            clt_out_t clt_a = clt_tot;
            clt_out_t clt_b = clt_acc[clt_j];
            clt_tot = CLT_REDUCE(clt_a, clt_b);
            clt_acc[clt_j] = CLT_NEUTRAL;
        }
    }
#if CLT_LAYOUT == 0
#pragma unroll
    for (int clt_j = 0; clt_j < CLT_ITEMS - 1; ++clt_j)
        if (clt_k + clt_j * CLT_WG < clt_end) CLT_FOLD(clt_acc[clt_j], clt_k + clt_j * CLT_WG);
#else
    for (; clt_k < clt_end; ++clt_k) CLT_FOLD(clt_acc[0], clt_k);
#endif

    clt_out_t clt_v = clt_tot;
#pragma unroll
    for (int clt_j = 0; clt_j < CLT_ITEMS; ++clt_j) {
        clt_out_t clt_a = clt_v;
        clt_out_t clt_b = clt_acc[clt_j];
        clt_v = CLT_REDUCE(clt_a, clt_b);
    }
    clt_v = clt_group_tree(clt_v, clt_tile);

    if (get_num_groups(0) == 1) { /* uniform: the whole input was this group's */
        if (clt_lid == 0) {
            clt_out_t clt_fa = clt_v;
            *clt_res = CLT_FINISH(clt_fa);
        }
        return;
    }
    if (clt_lid == 0) clt_partials[get_group_id(0)] = clt_v;

#if CLT_PASSES == 1
    /* the last group to finish combines the partials (threadfence reduction) */
    __local uint clt_is_last;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#if CLT_NV_PTX
    asm volatile("membar.gl;");
#endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (clt_lid == 0) clt_is_last = (atomic_inc(clt_ticket) == get_num_groups(0) - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (clt_is_last) { /* uniform per group */
#if CLT_NV_PTX
        asm volatile("membar.gl;");
#endif
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        clt_out_t clt_fa = clt_group_finish_volatile(clt_partials, get_num_groups(0), clt_tile);
        if (clt_lid == 0) {
            *clt_res = CLT_FINISH(clt_fa);
            atomic_xchg(clt_ticket, 0u); /* ready for the next launch */
        }
    }
#endif
}

__kernel CLT_WG_ATTR void
clt_expr_stage2(CLT_USER_ARGS const long n, __global const clt_out_t *clt_partials,
                const uint clt_m, __global char *clt_res_base, const long clt_res_off) {
    CLT_USER_PREP
    __local clt_out_t clt_tile[CLT_WG];
    clt_out_t clt_fa = clt_group_finish(clt_partials, clt_m, clt_tile);
    if (get_local_id(0) == 0) *(__global clt_res_t *)(clt_res_base + clt_res_off) = CLT_FINISH(clt_fa);
}
