/* cltune top-k: the k largest elements of each row and their indices, as torch.topk orders
 * them: NaN above every number, -0.0 equal to 0.0, equal values by the lower index first.
 * The smallest k are the largest of the flipped keys (`flip`: all ones), so NaN come last.
 *
 * Every element becomes an unsigned key whose order is the values' order (order_key); a pair
 * (key, index) is better than another when its key is larger, or equal with a lower index.
 * Rows are contiguous: row r is x[xoff + r * m .. + m), its indices 0 .. m - 1; `gpr` groups
 * a row, each a block of `chunk` of its elements.
 *
 * Strategy `lists` (small k):
 *   clt_tk_lists    each work-item keeps the best CLT_T_KP pairs it reads in a private heap
 *                   (an element that does not beat its worst is one compare, one that does
 *                   log2 CLT_T_KP steps), sorted at the end; the
 *                   group merges its lists in __local memory two by two, and writes its best
 *                   CLT_T_KP (or, when it is a row's only group, the row's k values and
 *                   indices). Stage 1 runs the same on the groups' lists (one group a row).
 * Strategy `radix` (any k): a radix select of the k-th pair's key, digit by digit from the
 * top (CLT_T_BITS a digit), on the device (no value read back):
 *   clt_tk_hist     a launch a digit: the histogram of the digit among a row's elements that
 *                   match the prefix of digits chosen so far (per group in __local memory,
 *                   added with atomics); the row's last group to finish (a ticket) picks the
 *                   digit holding the remaining k-th key: the prefix grows by it, the
 *                   remaining count drops by the elements above it. After the last digit the
 *                   key T of the k-th pair is known, and each group's count of it kept;
 *   clt_tk_collect  every element above T (in any order, by an atomic count), and the
 *                   lowest-indexed equal ones still needed (groups in order, work-items by a
 *                   scan): the row's k pairs;
 *   clt_tk_sort     the k pairs sorted in one group's __local memory (bitonic), the values
 *                   read back from x by index; beyond __local memory clt_tk_bitonic's global
 *                   steps then clt_tk_emit.
 * Strategy `sample` (one row, k well below its length; the host's plan, else the radix select):
 *   clt_tk_sfilter  every group draws the same sample and selects its r-th largest key t (r
 *                   from a Poisson tail: fewer than k keys above t about once in 10^6
 *                   calls), then streams its block once: keys above t kept (staged in
 *                   __local memory), keys equal to t counted a group;
 *   clt_tk_sfinish  one group: the k among the kept keys (a second sample of them where they
 *                   are many), or all of them and the lowest-indexed keys equal to t (the
 *                   groups' blocks in order), or where the sample misled the whole row; the k
 *                   sorted in __local memory.
 * Strategy `rowsel` (many rows of a few thousand, small k): clt_tk_rowsel, one group a row:
 *                   select_pairs over the row itself (8-bit digits), the k sorted in __local
 *                   memory and written: one launch.
 * Every tunable has a default; values arrive as -D options from cltune.families.topk.kernel
 * (a validated TopkConfig). Barriers are never in divergent code.
 */

#ifndef CLT_T_TYPE
#define CLT_T_TYPE 0 /* x: 0 float 1 double 2 char 3 uchar 4 short 5 ushort 6 int 7 uint 8 long 9 ulong 10 half (as its bits) */
#endif
#ifndef CLT_WG
#define CLT_WG 64
#endif
#ifndef CLT_T_KP
#define CLT_T_KP 16 /* lists: a list's length; radix: pairs sorted in __local memory (0: none) */
#endif
#ifndef CLT_T_BITS
#define CLT_T_BITS 8 /* radix: bits of a digit */
#endif

#if CLT_T_TYPE == 1
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if CLT_T_TYPE == 0
typedef float in_t;
typedef float16 in16_t;
#elif CLT_T_TYPE == 1
typedef double in_t;
typedef double16 in16_t;
#elif CLT_T_TYPE == 2
typedef char in_t;
typedef char16 in16_t;
#elif CLT_T_TYPE == 3
typedef uchar in_t;
typedef uchar16 in16_t;
#elif CLT_T_TYPE == 4
typedef short in_t;
typedef short16 in16_t;
#elif CLT_T_TYPE == 5
typedef ushort in_t;
typedef ushort16 in16_t;
#elif CLT_T_TYPE == 6
typedef int in_t;
typedef int16 in16_t;
#elif CLT_T_TYPE == 7
typedef uint in_t;
typedef uint16 in16_t;
#elif CLT_T_TYPE == 8
typedef long in_t;
typedef long16 in16_t;
#elif CLT_T_TYPE == 9
typedef ulong in_t;
typedef ulong16 in16_t;
#else
typedef ushort in_t; /* half: its bits (no cl_khr_fp16 needed: only compared, never added) */
typedef ushort16 in16_t;
#endif

#if CLT_T_TYPE == 1 || CLT_T_TYPE == 8 || CLT_T_TYPE == 9
typedef ulong key_t;
#define KEY_BITS 64
#else
typedef uint key_t;
#if CLT_T_TYPE == 2 || CLT_T_TYPE == 3
#define KEY_BITS 8
#elif CLT_T_TYPE == 4 || CLT_T_TYPE == 5 || CLT_T_TYPE == 10
#define KEY_BITS 16
#else
#define KEY_BITS 32
#endif
#endif

#define NO_INDEX 0xFFFFFFFFu /* a list's empty place: key 0, after every real pair */

/* the value's place in the order as an unsigned key of KEY_BITS bits, XOR flip */
inline key_t order_key(const in_t v, const key_t flip) {
#if CLT_T_TYPE == 0
    const uint b = as_uint(v);
    const key_t k = isnan(v) ? 0xFFFFFFFFu
                   : v == 0.0f ? 0x80000000u
                   : (b & 0x80000000u) ? ~b : (b | 0x80000000u);
#elif CLT_T_TYPE == 1
    const ulong b = as_ulong(v);
    const key_t k = isnan(v) ? 0xFFFFFFFFFFFFFFFFul
                   : v == 0.0 ? 0x8000000000000000ul
                   : (b & 0x8000000000000000ul) ? ~b : (b | 0x8000000000000000ul);
#elif CLT_T_TYPE == 2
    const key_t k = (uint)((int)v + 128);
#elif CLT_T_TYPE == 4
    const key_t k = (uint)((int)v + 32768);
#elif CLT_T_TYPE == 6
    const key_t k = as_uint(v) ^ 0x80000000u;
#elif CLT_T_TYPE == 8
    const key_t k = as_ulong(v) ^ 0x8000000000000000ul;
#elif CLT_T_TYPE == 10
    const uint b = v;
    const key_t k = ((b & 0x7C00u) == 0x7C00u && (b & 0x3FFu)) ? 0xFFFFu /* NaN */
                   : (b & 0x7FFFu) == 0u ? 0x8000u                     /* -0 as 0 */
                   : (b & 0x8000u) ? (~b & 0xFFFFu) : (b | 0x8000u);
#else
    const key_t k = (key_t)v;
#endif
    return k ^ flip;
}

/* the value whose order_key (XOR flip) is k (CPUs' vector filter; not for half) */
inline in_t key_value(key_t k, const key_t flip) {
    k ^= flip;
#if CLT_T_TYPE == 0
    return k == 0xFFFFFFFFu ? as_float(0x7FC00000u)
                            : as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
#elif CLT_T_TYPE == 1
    return k == 0xFFFFFFFFFFFFFFFFul
               ? as_double(0x7FF8000000000000ul)
               : as_double((k & 0x8000000000000000ul) ? (k & 0x7FFFFFFFFFFFFFFFul) : ~k);
#elif CLT_T_TYPE == 2
    return (char)((int)k - 128);
#elif CLT_T_TYPE == 4
    return (short)((int)k - 32768);
#elif CLT_T_TYPE == 6
    return as_int(k ^ 0x80000000u);
#elif CLT_T_TYPE == 8
    return as_long(k ^ 0x8000000000000000ul);
#else
    return (in_t)k;
#endif
}

inline int better(const key_t ka, const uint ia, const key_t kb, const uint ib) {
    return ka > kb || (ka == kb && ia < ib);
}

/* the block of the row a group reads: [begin, end) of x's elements (from xoff) */
#define ROW_BLOCK                                                                                \
    const uint lid = get_local_id(0);                                                          \
    const long grp = (long)get_group_id(0);                                                    \
    const long row = grp / gpr, gi = grp - row * gpr;                                          \
    const long rbeg = row * m;                                                                 \
    const long begin = rbeg + gi * chunk;                                                      \
    const long end = min(begin + chunk, rbeg + m)

/* ---- lists ------------------------------------------------------------------------------ */
#if CLT_T_KP > 0 /* (0: a radix build whose pairs are sorted in global memory) */

/* the list (pk, pi) of CLT_T_KP is a heap whose root is its worst pair (no child is worse than
 * its parent): (kk, ii) goes into place j of the heap's first `size` places, the worse child
 * moving up while it is worse than (kk, ii) (log2 CLT_T_KP steps at most, whatever the order
 * of the input) */
inline void sift(key_t *pk, uint *pi, int j, const int size, const key_t kk, const uint ii) {
    for (;;) {
        int c = 2 * j + 1;
        if (c >= size)
            break;
        if (c + 1 < size && better(pk[c], pi[c], pk[c + 1], pi[c + 1]))
            ++c; /* the worse child */
        if (!better(kk, ii, pk[c], pi[c]))
            break;
        pk[j] = pk[c];
        pi[j] = pi[c];
        j = c;
    }
    pk[j] = kk;
    pi[j] = ii;
}

__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_lists(__global const in_t *x, const long xoff, const long m, const key_t flip,
             __global const key_t *ck, __global const uint *ci, const long cm, const long chunk,
             const long gpr, const uint k, const uint emit, __global key_t *ok,
             __global uint *oi, __global in_t *ov, __global long *ox, const long ooff,
             __local key_t *lk, __local uint *li) {
    /* cm == 0: read x's rows; else the candidates (ck, ci), cm a row; emit (a row's only
     * group): the row's k values and indices to ov, ox, else the group's list to ok, oi */
    const uint lid = get_local_id(0);
    const long grp = (long)get_group_id(0);
    const long row = grp / gpr, gi = grp - row * gpr;
    const long len = cm ? cm : m;
    const long begin = gi * chunk;
    const long end = min(begin + chunk, len);
    key_t pk[CLT_T_KP];
    uint pi[CLT_T_KP];
    for (int j = 0; j < CLT_T_KP; ++j) {
        pk[j] = 0;
        pi[j] = NO_INDEX;
    }
    if (cm) {
        for (long i = begin + lid; i < end; i += CLT_WG) {
            const key_t kk = ck[row * cm + i];
            const uint ii = ci[row * cm + i];
            if (better(kk, ii, pk[0], pi[0]))
                sift(pk, pi, 0, CLT_T_KP, kk, ii);
        }
    } else {
        __global const in_t *xr = x + xoff + row * m;
        for (long i = begin + lid; i < end; i += CLT_WG) {
            const key_t kk = order_key(xr[i], flip);
            if (better(kk, (uint)i, pk[0], pi[0]))
                sift(pk, pi, 0, CLT_T_KP, kk, (uint)i);
        }
    }
    /* heapsort: the worst to the end, one by one, leaves the list best first */
    for (int e = CLT_T_KP - 1; e > 0; --e) {
        const key_t tk = pk[e];
        const uint ti = pi[e];
        pk[e] = pk[0];
        pi[e] = pi[0];
        sift(pk, pi, 0, e, tk, ti);
    }
    /* the group's lists merged two by two: list l and l + s into l */
    __local key_t *mk = lk + (long)lid * CLT_T_KP;
    __local uint *mi = li + (long)lid * CLT_T_KP;
    for (int j = 0; j < CLT_T_KP; ++j) {
        mk[j] = pk[j];
        mi[j] = pi[j];
    }
    for (uint s = 1; s < CLT_WG; s <<= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if ((lid & (2 * s - 1)) == 0) {
            __local key_t *bk = mk + (long)s * CLT_T_KP;
            __local uint *bi = mi + (long)s * CLT_T_KP;
            int a = 0, b = 0; /* a + b < CLT_T_KP: neither runs past its list */
            for (int t = 0; t < CLT_T_KP; ++t) {
                if (better(mk[a], mi[a], bk[b], bi[b])) {
                    pk[t] = mk[a];
                    pi[t] = mi[a];
                    ++a;
                } else {
                    pk[t] = bk[b];
                    pi[t] = bi[b];
                    ++b;
                }
            }
            for (int j = 0; j < CLT_T_KP; ++j) {
                mk[j] = pk[j];
                mi[j] = pi[j];
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (emit) { /* the row's answer: its k best, values read back by index */
        __global const in_t *xr = x + xoff + row * m;
        for (long j = lid; j < k; j += CLT_WG) {
            ov[ooff + row * k + j] = xr[li[j]];
            ox[ooff + row * k + j] = (long)li[j];
        }
    } else {
        for (long j = lid; j < CLT_T_KP; j += CLT_WG) {
            ok[grp * CLT_T_KP + j] = lk[j];
            oi[grp * CLT_T_KP + j] = li[j];
        }
    }
}

#endif

/* ---- radix select ----------------------------------------------------------------------- */
#define NB (1 << CLT_T_BITS)

/* the bits of key k above `hi` (none when hi is the key's width) */
#define ABOVE(kk, hi) ((hi) >= KEY_BITS ? (key_t)0 : (kk) >> (hi))

/* a work-item's global stores and atomics ordered device-wide (the threadfence reduction's
 * fence; kernels/reduce.cl, axis.cl and hist.cl do the same): NVIDIA's OpenCL needs the PTX
 * membar.gl, its mem_fence being the group's */
#ifdef cl_nv_pragma_unroll
#define DEVICE_FENCE()                                                                         \
    do {                                                                                       \
        mem_fence(CLK_GLOBAL_MEM_FENCE);                                                       \
        asm volatile("membar.gl;");                                                            \
    } while (0)
#else
#define DEVICE_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#endif

/* the group's sum of v (all work-items get it) */
inline uint group_sum(uint v, __local uint *ls) {
    const uint lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    ls[lid] = v;
    for (uint s = CLT_WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s)
            ls[lid] += ls[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint r = ls[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* the row's histogram h (complete) -> the digit holding the rem-th remaining key: the state
 * becomes (prefix << width | digit, rem - the elements above the digit); h is zeroed */
inline void pick(volatile __global uint *h, __global ulong *state, const long row,
                 const ulong prefix, const ulong rem, const uint width, __local uint *ls) {
    const uint lid = get_local_id(0);
    const int per = (NB + CLT_WG - 1) / CLT_WG; /* a work-item's block of bins */
    const int b0 = min((int)lid * per, NB), b1 = min(b0 + per, NB);
    uint s = 0;
    for (int b = b0; b < b1; ++b) /* atomics: the other groups added them so */
        s += atomic_or(h + b, 0u);
    ls[lid] = s;
    /* suffix sums: ls[l] = the counts of the blocks l .. CLT_WG - 1 */
    for (uint off = 1; off < CLT_WG; off <<= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint v = lid + off < CLT_WG ? ls[lid + off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        ls[lid] += v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong incl = ls[lid], above0 = incl - s;
    if (above0 < rem && rem <= incl) { /* the rem-th key's digit is in this block */
        ulong above = above0;
        int b = b1 - 1;
        for (; b > b0; --b) {
            const uint c = atomic_or(h + b, 0u);
            if (above + c >= rem)
                break;
            above += c;
        }
        state[2 * row] = (prefix << width) | (ulong)b;
        state[2 * row + 1] = rem - above;
    }
    for (int b = b0; b < b1; ++b)
        atomic_xchg(h + b, 0u);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* one digit: the histogram of bits [shift, shift + width) of the keys of a row's elements
 * that match the prefix chosen so far (first: none yet), counted per group in __local memory
 * and added into the row's (zb: rows x NB bins, then a ticket a row, then clt_tk_collect's
 * count a row: all zero when a call starts, and left so); the row's last group to
 * finish picks the digit (`pick`). With `keep`, the last digit (shift 0) also keeps each
 * group's counts (own: gpr x NB a row), from which clt_tk_collect ranks the equal keys by
 * group; without (where that would be large), clt_tk_ties counts them. The digit chosen so
 * far is read from `state` and the next written to `next` (the host alternates two buffers):
 * no group reads what the last one writes in the same launch. */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_hist(__global const in_t *x, const long xoff, const long m, const key_t flip,
            const long chunk, const long gpr, __global const ulong *state, const uint shift,
            const uint width, const uint k, const uint first, volatile __global uint *zb,
            __global uint *own, const uint keep, volatile __local uint *lh, __local uint *ls,
            __global ulong *next) {
    ROW_BLOCK;
    for (int j = lid; j < NB; j += CLT_WG)
        lh[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint hi = shift + width;
    const ulong prefix = first ? 0ul : state[2 * row];
    const ulong rem = first ? (ulong)k : state[2 * row + 1];
    const key_t mask = (key_t)((1u << width) - 1u);
    for (long i = begin + lid; i < end; i += CLT_WG) {
        const key_t kk = order_key(x[xoff + i], flip);
        if (ABOVE(kk, hi) == (key_t)prefix) {
#if CLT_WG == 1 /* nobody else counts here */
            lh[(uint)((kk >> shift) & mask)] += 1u;
#else
            atomic_inc(lh + (uint)((kk >> shift) & mask));
#endif
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    volatile __global uint *h = zb + row * NB;
    for (int j = lid; j < NB; j += CLT_WG) {
        const uint c = lh[j];
        if (c)
            atomic_add(h + j, c);
        if (shift == 0 && keep)
            own[grp * NB + j] = c;
    }
    /* the last group of the row to get here sees every group's counts (a ticket after them):
     * every work-item's adds ordered device-wide before the ticket (DEVICE_FENCE: on NVIDIA
     * mem_fence orders within the group only; without membar.gl the last group could read a
     * bin short, pick no digit, and clt_tk_collect write past the row's pairs) */
    DEVICE_FENCE();
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const long rows = (long)get_num_groups(0) / gpr;
    volatile __global uint *ticket = zb + rows * NB;
    if (lid == 0)
        ls[0] = atomic_inc(ticket + row);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int last = ls[0] == (uint)(gpr - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (last) { /* the bins (zeroed by pick) and the ticket left zero for the next digit */
        DEVICE_FENCE();
        pick(h, next, row, prefix, rem, width, ls);
    }
    /* clt_tk_collect's count a row (after the tickets) zeroed by every digit's pass: zeroed
     * by the first only (a branch on `first` here), PoCL 3.1's build crashed when run */
    if (last && lid == 0) { /* (atomic: the ticket is counted so) */
        atomic_xchg(ticket + row, 0u);
        ticket[rows + row] = 0u;
    }
}

/* each group's count of the elements equal to the k-th key (own[group], when the last digit's
 * pass did not keep the groups' counts) */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_ties(__global const in_t *x, const long xoff, const long m, const key_t flip,
            const long chunk, const long gpr, __global const ulong *state, __global uint *own,
            __local uint *ls) {
    ROW_BLOCK;
    const key_t t = (key_t)state[2 * row];
    uint c = 0;
    for (long i = begin + lid; i < end; i += CLT_WG)
        c += order_key(x[xoff + i], flip) == t;
    c = group_sum(c, ls);
    if (lid == 0)
        own[grp] = c;
}

/* the row's k pairs: every element above t = the k-th key (in any order, by an atomic
 * count), and the lowest-indexed equal ones still needed (the groups' counts of them from the
 * last digit's pass rank the groups; within a group, rounds ranked by a scan) */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_collect(__global const in_t *x, const long xoff, const long m, const key_t flip,
               const long chunk, const long gpr, __global const ulong *state,
               __global const uint *own, const uint keep, const uint width, const uint k,
               const long kp,
               volatile __global uint *zb, __global key_t *pk, __global uint *pi,
               __local uint *ls) {
    ROW_BLOCK;
    const long rows = (long)get_num_groups(0) / gpr;
    volatile __global uint *cnt = zb + rows * (NB + 1); /* after the bins and the tickets */
    const key_t t = (key_t)state[2 * row];
    const uint rem = (uint)state[2 * row + 1]; /* equal pairs to take */
    const uint gt = k - rem;                   /* pairs above t: all taken */
    /* t's count in a group: at t's last digit of the group's kept counts, or clt_tk_ties' */
    const long os = keep ? NB : 1;
    const long d = keep ? (long)(t & (key_t)((1u << width) - 1u)) : 0;
    __global key_t *rk = pk + row * kp;
    __global uint *ri = pi + row * kp;
    uint before = 0; /* equal pairs in the row's groups before this one */
    for (long j = lid; j < gi; j += CLT_WG)
        before += own[(row * gpr + j) * os + d];
    before = group_sum(before, ls);
    long i0 = begin;
    if (own[grp * os + d] > 0 && before < rem) {
        /* in order: a round of CLT_WG elements at a time, ranks by a scan of the group */
        uint run = before;
        for (; i0 < end && run < rem; i0 += CLT_WG) {
            const long i = i0 + lid;
            key_t kk = 0;
            if (i < end)
                kk = order_key(x[xoff + i], flip);
            const uint eq = i < end && kk == t;
            if (i < end && kk > t) {
                const uint s = atomic_inc(cnt + row);
                rk[s] = kk;
                ri[s] = (uint)(i - rbeg);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            ls[lid] = eq;
            for (uint off = 1; off < CLT_WG; off <<= 1) {
                barrier(CLK_LOCAL_MEM_FENCE);
                const uint v = lid >= off ? ls[lid - off] : 0u;
                barrier(CLK_LOCAL_MEM_FENCE);
                ls[lid] += v;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            const uint slot = run + ls[lid] - eq;
            if (eq && slot < rem) {
                rk[gt + slot] = kk;
                ri[gt + slot] = (uint)(i - rbeg);
            }
            run += ls[CLT_WG - 1];
        }
    }
    for (long i = i0 + lid; i < end; i += CLT_WG) {
        const key_t kk = order_key(x[xoff + i], flip);
        if (kk > t) {
            const uint s = atomic_inc(cnt + row);
            rk[s] = kk;
            ri[s] = (uint)(i - rbeg);
        }
    }
}

#define SWAP_IF_BETTER(ka, ia, kb, ib, want)                                                     \
    do {                                                                                       \
        if (better(kb, ib, ka, ia) == (want)) {                                                \
            const key_t tk = ka;                                                               \
            const uint ti = ia;                                                                \
            ka = kb;                                                                           \
            ia = ib;                                                                           \
            kb = tk;                                                                           \
            ib = ti;                                                                           \
        }                                                                                      \
    } while (0)

#if CLT_T_KP > 0
/* the CLT_T_KP pairs (lk, li) sorted best first by a group of nt (bitonic: ascending blocks
 * of `size` alternate, so the whole ends best first); ends with a barrier */
inline void local_bitonic(__local key_t *lk, __local uint *li, const uint nt) {
    const int lid = get_local_id(0);
    for (int size = 2; size <= CLT_T_KP; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int t = lid; t < CLT_T_KP / 2; t += nt) {
                const int lo = 2 * stride * (t / stride) + t % stride, hi = lo + stride;
                const int want = (lo & size) == 0;
                SWAP_IF_BETTER(lk[lo], li[lo], lk[hi], li[hi], want);
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* one group a row: its k pairs sorted best first in __local memory, values read by index */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_sort(__global const key_t *pk, __global const uint *pi, const long kp, const uint k,
            __global const in_t *x, const long xoff, const long m, __global in_t *ov,
            __global long *ox, const long ooff, __local key_t *lk, __local uint *li) {
    const uint lid = get_local_id(0);
    const long row = get_group_id(0);
    for (int j = lid; j < CLT_T_KP; j += CLT_WG) {
        lk[j] = j < k ? pk[row * kp + j] : (key_t)0;
        li[j] = j < k ? pi[row * kp + j] : NO_INDEX;
    }
    local_bitonic(lk, li, CLT_WG);
    __global const in_t *xr = x + xoff + row * m;
    for (long j = lid; j < k; j += CLT_WG) {
        ov[ooff + row * k + j] = xr[li[j]];
        ox[ooff + row * k + j] = (long)li[j];
    }
}
#endif

/* one step (size, stride) of a bitonic sort of each row's kp pairs (padded with key 0 and
 * NO_INDEX) in global memory: work-item (t, row) */
__kernel void clt_tk_bitonic(__global key_t *pk, __global uint *pi, const long kp,
                             const long size, const long stride) {
    const long t = get_global_id(0), row = get_global_id(1);
    if (t >= kp / 2)
        return;
    const long lo = 2 * stride * (t / stride) + t % stride, hi = lo + stride;
    const int want = (lo & size) == 0;
    __global key_t *rk = pk + row * kp;
    __global uint *ri = pi + row * kp;
    key_t ka = rk[lo], kb = rk[hi];
    uint ia = ri[lo], ib = ri[hi];
    if (better(kb, ib, ka, ia) == want) {
        rk[lo] = kb;
        ri[lo] = ib;
        rk[hi] = ka;
        ri[hi] = ia;
    }
}

/* each row's first k sorted pairs as values (read from x by index) and indices */
__kernel void clt_tk_emit(__global const uint *pi, const long kp, const uint k,
                          __global const in_t *x, const long xoff, const long m,
                          __global in_t *ov, __global long *ox, const long ooff) {
    const long j = get_global_id(0), row = get_global_id(1);
    if (j >= k)
        return;
    const uint i = pi[row * kp + j];
    ov[ooff + row * k + j] = x[xoff + row * m + i];
    ox[ooff + row * k + j] = (long)i;
}

/* ---- sample threshold (strategy `sample`: one row, k well below its length) -------------- */
#ifndef CLT_T_SAMPLE
#define CLT_T_SAMPLE 1024 /* keys in a group's sample (a power of two; __local memory) */
#endif
#ifndef CLT_WG_FIN
#define CLT_WG_FIN CLT_WG /* clt_tk_sfinish's one group */
#endif
#define SB 256 /* bins of an 8-bit digit (the sample's and the finish's selects) */
/* groups of nt count a digit in COPIES(nt) copies of the bins, a work-item in copy lid %
 * copies, each copy SBP apart (a bin's copies in different banks); folded into copy 0 before
 * a digit is picked. The keys of a sample or of the candidates share their top digits: in one
 * copy the first round's atomics queue on a bin or two (8192 of them in a group of 1024) */
#define SBP (SB + 1)
#define COPIES(nt) ((nt) >= 64 ? 8u : (nt) >= 16 ? 2u : 1u)

/* the 8-bit digit of the SB counts in h holding the want-th largest key, that key's rank
 * among the keys of the digit (*rem, in: want) and the digit's count (*cnt); every work-item
 * of the nt gets all three (h is not read after: the next round may clear it); ls: 35
 * uints. Up to 32 work-items sum a block of bins each, one walks the blocks then the bins
 * from the top: three barriers (a scan of the group took two a step, 20 in a group of 1024,
 * most of a round's time on a GPU). Needs 1 <= want <= the counts' sum. */
inline uint pick_sb(volatile __local uint *h, uint *rem, uint *cnt, __local uint *ls,
                    const uint nt) {
    const uint lid = get_local_id(0);
    const uint nb = min(nt, 32u), per = SB / nb;
    if (lid < nb) {
        uint s = 0;
        for (uint b = lid * per; b < (lid + 1) * per; ++b)
            s += h[b];
        ls[lid] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        const uint want = *rem;
        uint above = 0, blk = nb - 1;
        for (; blk > 0; --blk) {
            const uint c = ls[blk];
            if (above + c >= want)
                break;
            above += c;
        }
        uint b = blk * per + per - 1;
        for (; b > blk * per; --b) {
            const uint c = h[b];
            if (above + c >= want)
                break;
            above += c;
        }
        ls[nb] = b;
        ls[nb + 1] = want - above;
        ls[nb + 2] = h[b];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint d = ls[nb];
    *rem = ls[nb + 1];
    *cnt = ls[nb + 2];
    barrier(CLK_LOCAL_MEM_FENCE);
    return d;
}

/* a work-item's run of keys of one digit, counted in registers and added to the __local bins
 * where the digit changes: keys of a few digits (the top digits of a sample, or of keys all
 * above a threshold) cost an atomic a run, not one a key on a few contended bins (one
 * work-item a group: no atomics needed) */
#define ADD_BIN(h, b, c, nt)                                                                   \
    do {                                                                                       \
        if ((nt) == 1)                                                                         \
            (h)[b] += (c);                                                                     \
        else                                                                                   \
            atomic_add((h) + (b), (c));                                                        \
    } while (0)
#define RUN_START                                                                              \
    uint run_b = 0xFFFFFFFFu, run_c = 0u
#define RUN_ADD(h, b, nt)                                                                      \
    do {                                                                                       \
        const uint b_ = (b);                                                                   \
        if (b_ != run_b) {                                                                     \
            if (run_c)                                                                         \
                ADD_BIN(h, run_b, run_c, nt);                                                  \
            run_b = b_;                                                                        \
            run_c = 0u;                                                                        \
        }                                                                                      \
        ++run_c;                                                                               \
    } while (0)
#define RUN_END(h, nt)                                                                         \
    do {                                                                                       \
        if (run_c)                                                                             \
            ADD_BIN(h, run_b, run_c, nt);                                                      \
    } while (0)

/* the bits of a uint above `hi` (none at 32) */
#define ABOVE32(v, hi) ((hi) >= 32 ? 0u : (v) >> (hi))

/* every copy of the bins zeroed, then a barrier; the work-item's copy */
inline volatile __local uint *clear_bins(volatile __local uint *h, const uint nt) {
    const uint lid = get_local_id(0), nc = COPIES(nt);
    for (uint j = lid; j < nc * SBP; j += nt)
        h[j] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    return h + (lid % nc) * SBP;
}

/* (after the counts' barrier) the copies added into copy 0, then a barrier */
inline void fold_bins(volatile __local uint *h, const uint nt) {
    const uint nc = COPIES(nt);
    if (nc > 1) {
        for (uint j = get_local_id(0); j < SB; j += nt) {
            uint s = h[j];
            for (uint c = 1; c < nc; ++c)
                s += h[c * SBP + j];
            h[j] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* the want-th largest of the `count` keys in __local sk (ties counted), by 8-bit digits; a
 * threshold for keeping the keys above it: where the digits so far hold at most 2 want of
 * the keys (those of higher digits and the chosen one's), the least key below them (one
 * round or two less where the top digits already single the want-th out; a round is most of
 * a group's fixed cost on a GPU). Any threshold below the want-th largest keeps at least as
 * many keys (the sample's rank r bounds the chance of fewer than k above it; twice its keys
 * stay within the candidates' room). */
inline key_t select_local(__local const key_t *sk, const uint count, const uint want0,
                          volatile __local uint *lh, __local uint *ls, const uint nt) {
    const uint lid = get_local_id(0);
    key_t prefix = 0;
    uint want = want0, cnt;
    for (int hi = KEY_BITS; hi > 0; hi -= 8) {
        const int shift = hi - 8;
        volatile __local uint *hm = clear_bins(lh, nt);
        RUN_START;
        for (uint j = lid; j < count; j += nt) {
            const key_t kk = sk[j];
            if (ABOVE(kk, hi) == prefix)
                RUN_ADD(hm, (uint)((kk >> shift) & (key_t)(SB - 1)), nt);
        }
        RUN_END(hm, nt);
        barrier(CLK_LOCAL_MEM_FENCE);
        fold_bins(lh, nt);
        prefix = (prefix << 8) | (key_t)pick_sb(lh, &want, &cnt, ls, nt);
        const key_t low = prefix << shift; /* the least key of the digits so far */
        if (shift > 0 && low > (key_t)0 && want0 - want + cnt <= 2u * want0)
            return low - (key_t)1;
    }
    return prefix;
}

/* Pass 1 (a grid over one row of m >= ns elements, `chunk` a group): every group draws the
 * same sample of ns <= CLT_T_SAMPLE keys (one from each stretch of m / ns, at a place hashed
 * from its number) and selects its r-th largest key t; then streams its block: each key above t
 * goes into the candidates (ck, ci; cnt[0] counts them all, the first `cap` kept; staged in
 * __local memory, one global atomic a group), each key equal to t is counted (eqc[group], and
 * cnt[1] all of them). t goes to state[0]. cnt is zero when a call starts (clt_tk_sfinish
 * leaves it so). */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_sfilter(__global const in_t *x, const long xoff, const long m, const key_t flip,
               const long chunk, const uint ns, const uint r, const uint cap,
               volatile __global uint *cnt, __global uint *eqc, __global ulong *state,
               __global key_t *ck, __global uint *ci, __local key_t *sk,
               volatile __local uint *lh, __local uint *ls) {
    const uint lid = get_local_id(0);
    const long grp = (long)get_group_id(0);
    const uint span = (uint)(m / ns);
    /* 8 loads in flight a work-item (one at a time, each waited for: ~1 us a load on a GPU) */
    for (uint s0 = lid; s0 < ns; s0 += 8 * CLT_WG) {
        in_t v[8];
        for (uint u = 0; u < 8; ++u) {
            const uint s = s0 + u * CLT_WG;
            if (s < ns)
                v[u] = x[xoff + (long)s * m / ns + (long)((s * 2654435761u) % span)];
        }
        for (uint u = 0; u < 8; ++u) {
            const uint s = s0 + u * CLT_WG;
            if (s < ns)
                sk[s] = order_key(v[u], flip);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const key_t t = select_local(sk, ns, r, lh, ls, CLT_WG);
    if (grp == 0 && lid == 0)
        state[0] = (ulong)t;
    /* the sample's memory stages the group's candidates: keys, then their indices */
    const uint room = CLT_T_SAMPLE / 2;
    __local key_t *stk = sk;
    __local uint *sti = (__local uint *)(sk + room);
    volatile __local uint *staged = lh; /* (the bins are done with) */
    if (lid == 0) {
        staged[0] = 0u;
        staged[1] = 0u; /* the group's keys equal to t */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const long begin = grp * chunk, end = min(begin + chunk, m);
    uint eq = 0;
#define SFILTER_ONE(i)                                                                         \
    do {                                                                                       \
        const key_t kk = order_key(x[xoff + (i)], flip);                                       \
        if (kk > t) {                                                                          \
            uint s;                                                                            \
            if (CLT_WG == 1)                                                                   \
                s = staged[0]++;                                                               \
            else                                                                               \
                s = atomic_inc(staged);                                                        \
            if (s < room) {                                                                    \
                stk[s] = kk;                                                                   \
                sti[s] = (uint)(i);                                                            \
            } else { /* the stage is full: straight to the candidates */                       \
                const uint g = atomic_inc(cnt);                                                \
                if (g < cap) {                                                                 \
                    ck[g] = kk;                                                                \
                    ci[g] = (uint)(i);                                                         \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        eq += kk == t;                                                                         \
    } while (0)
    long i0 = begin + lid;
#if CLT_WG == 1 && CLT_T_TYPE != 10
    /* one work-item a group (CPUs): 16 values at a time compared with t's value, the few
     * blocks that may hold a key at or above t looked at one by one */
    {
        const in_t vts = key_value(t, flip);
        const in16_t vt = (in16_t)vts;
#if CLT_T_TYPE <= 1
        const int every = isnan(vts); /* t is NaN's key: with the smallest taken, every number
                                        * is above it (and compares false with it) */
#endif
        for (; i0 + 16 <= end; i0 += 16) {
            const in16_t v = vload16(0, x + xoff + i0);
#if CLT_T_TYPE <= 1 /* (NaN compare false both ways: their keys are the largest, or with the
                      * smallest taken the least, which t is where the row is nearly all NaN) */
            const int hit = every || any(isnan(v)) || (flip ? any(v <= vt) : any(v >= vt));
#else
            const int hit = flip ? any(v <= vt) : any(v >= vt);
#endif
            if (hit) {
                for (long i = i0; i < i0 + 16; ++i)
                    SFILTER_ONE(i);
            }
        }
    }
#endif
#if CLT_WG > 1
    /* GPUs: 8 loads in flight a work-item (one a round left the memory system half idle) */
    for (; i0 + 7 * CLT_WG < end; i0 += 8 * CLT_WG) {
        in_t v[8];
        for (int u = 0; u < 8; ++u)
            v[u] = x[xoff + i0 + u * CLT_WG];
        for (int u = 0; u < 8; ++u) {
            const long i = i0 + u * CLT_WG;
            const key_t kk = order_key(v[u], flip);
            if (kk > t) {
                const uint s = atomic_inc(staged);
                if (s < room) {
                    stk[s] = kk;
                    sti[s] = (uint)i;
                } else {
                    const uint g = atomic_inc(cnt);
                    if (g < cap) {
                        ck[g] = kk;
                        ci[g] = (uint)i;
                    }
                }
            }
            eq += kk == t;
        }
    }
#endif
    for (long i = i0; i < end; i += CLT_WG)
        SFILTER_ONE(i);
    if (CLT_WG > 1 && eq) /* (rare: the keys equal to t) */
        atomic_add(staged + 1, eq);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint nst = min(staged[0], room);
    if (CLT_WG > 1)
        eq = staged[1];
    if (lid == 0) {
        eqc[grp] = eq;
        if (eq)
            atomic_add(cnt + 1, eq);
        ls[0] = nst ? atomic_add(cnt, nst) : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint base = ls[0];
    for (uint j = lid; j < nst; j += CLT_WG) {
        if (base + j < cap) {
            ck[base + j] = stk[j];
            ci[base + j] = sti[j];
        }
    }
}

#if CLT_T_KP > 0
/* where a pair comes from: the candidates (j of them) or the row itself (index j) */
#define PAIR_AT(j, kk, ii)                                                                     \
    do {                                                                                       \
        if (full == 2) {                                                                       \
            kk = lrow[j];                                                                      \
            ii = (uint)(j);                                                                    \
        } else if (full) {                                                                     \
            kk = order_key(x[xoff + (j)], flip);                                               \
            ii = (uint)(j);                                                                    \
        } else {                                                                               \
            kk = ck[j];                                                                        \
            ii = ci[j];                                                                        \
        }                                                                                      \
    } while (0)

/* the k best pairs of `count` (the candidates, or with `full` the row) into lk, li [0, k) in
 * any order: the k-th key by 8-bit digits, then where it has more equal pairs than are
 * needed, the highest index taken by 8-bit digits of the index; one group (nt work-items) */
inline void select_pairs(__global const in_t *x, const long xoff, const key_t flip,
                         __global const key_t *ck, __global const uint *ci, const int full,
                         const long count, const uint k, __local key_t *lk, __local uint *li,
                         volatile __local uint *lh, __local uint *ls, const uint nt,
                         __local const key_t *lrow) {
    const uint lid = get_local_id(0);
    key_t prefix = 0;
    uint rem = k, ties = 0;
    for (int hi = KEY_BITS; hi > 0; hi -= 8) {
        const int shift = hi - 8;
        volatile __local uint *hm = clear_bins(lh, nt);
        RUN_START;
        for (long j = lid; j < count; j += nt) {
            key_t kk;
            uint ii;
            PAIR_AT(j, kk, ii);
            if (ABOVE(kk, hi) == prefix)
                RUN_ADD(hm, (uint)((kk >> shift) & (key_t)(SB - 1)), nt);
        }
        RUN_END(hm, nt);
        barrier(CLK_LOCAL_MEM_FENCE);
        fold_bins(lh, nt);
        prefix = (prefix << 8) | (key_t)pick_sb(lh, &rem, &ties, ls, nt);
        /* (ties: the pairs of the chosen digits so far) */
    }
    const key_t t = prefix;
    uint ilim = 0xFFFFFFFFu; /* the highest index of key t taken */
    if (ties > rem) {         /* the rem lowest indices of key t: the largest of ~index */
        uint ip = 0, irem = rem;
        for (int hi = 32; hi > 0; hi -= 8) {
            const int shift = hi - 8;
            volatile __local uint *hm = clear_bins(lh, nt);
            RUN_START;
            for (long j = lid; j < count; j += nt) {
                key_t kk;
                uint ii;
                PAIR_AT(j, kk, ii);
                const uint ni = ~ii;
                if (kk == t && ABOVE32(ni, hi) == ip)
                    RUN_ADD(hm, (ni >> shift) & (SB - 1u), nt);
            }
            RUN_END(hm, nt);
            barrier(CLK_LOCAL_MEM_FENCE);
            fold_bins(lh, nt);
            uint icnt;
            ip = (ip << 8) | pick_sb(lh, &irem, &icnt, ls, nt);
        }
        ilim = ~ip;
    }
    if (lid == 0)
        ls[nt + 2] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    volatile __local uint *taken = (volatile __local uint *)(ls + nt + 2);
    for (long j = lid; j < count; j += nt) {
        key_t kk;
        uint ii;
        PAIR_AT(j, kk, ii);
        if (kk > t || (kk == t && ii <= ilim)) {
            uint s;
            if (nt == 1)
                s = taken[0]++;
            else
                s = atomic_inc(taken);
            if (s < k) {
                lk[s] = kk;
                li[s] = ii;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Pass 2 (one group): the row's k best from pass 1's candidates where they hold them
 * (cnt[0] in k .. cap); else, where the candidates are fewer than k but the keys equal to t
 * make up the rest, the candidates and the lowest-indexed equal keys (the groups' blocks in
 * order, where pass 1 counted some); else (the sample misled: rare) the k best of the whole
 * row by this group. Sorted in __local memory, values read back by index; cnt zeroed. ls:
 * 2 CLT_WG_FIN + 4 uints; fs: s2 keys (0: no second sample). */
__kernel __attribute__((reqd_work_group_size(CLT_WG_FIN, 1, 1))) void
clt_tk_sfinish(__global const in_t *x, const long xoff, const long m, const key_t flip,
               const long chunk, const uint groups, const uint k, const uint cap,
               volatile __global uint *cnt, __global const uint *eqc,
               __global const ulong *state, __global const key_t *ck, __global const uint *ci,
               __global in_t *ov, __global long *ox, const long ooff, const uint s2,
               const uint cap2, __global key_t *ck2, __global uint *ci2, __local key_t *lk,
               __local uint *li, volatile __local uint *lh, __local uint *ls,
               __local key_t *fs) {
    const uint lid = get_local_id(0);
    const uint nt = CLT_WG_FIN;
    const uint gt = cnt[0], eqn = cnt[1];
    const key_t t = (key_t)state[0];
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) { /* left zero for the next call (every work-item has read them) */
        cnt[0] = 0u;
        cnt[1] = 0u;
    }
    if (gt >= k && gt <= cap) {
        /* many candidates (a long row): a sample of s2 of them in fs, its threshold t2, the
         * candidates above it (ck2, ci2) where they are k to cap2 (5 sigma above k's expected
         * rank in the sample: nearly always), else all the candidates */
        uint n2 = 0;
        if (s2 && gt > 8 * s2) { /* (fewer: one select over them all is quicker; H100 2^24
                                   * k = 1000, ~14000 candidates: 42 us against 49) */
            const uint span2 = gt / s2;
            for (uint j = lid; j < s2; j += nt)
                fs[j] = ck[(uint)((ulong)j * gt / s2) + (j * 2654435761u) % span2];
            barrier(CLK_LOCAL_MEM_FENCE);
            const float mu = (float)s2 * (float)k / (float)gt;
            const uint r2 = min(s2, (uint)ceil(mu + 5.0f * sqrt(mu) + 6.0f));
            const key_t t2 = select_local(fs, s2, r2, lh, ls, nt);
            volatile __local uint *kept = (volatile __local uint *)(ls + nt + 2);
            if (lid == 0)
                kept[0] = 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint j = lid; j < gt; j += nt) {
                const key_t kk = ck[j];
                if (kk > t2) {
                    uint s;
                    if (nt == 1)
                        s = kept[0]++;
                    else
                        s = atomic_inc(kept);
                    if (s < cap2) {
                        ck2[s] = kk;
                        ci2[s] = ci[j];
                    }
                }
            }
            barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
            n2 = kept[0];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (n2 >= k && n2 <= cap2)
            select_pairs(x, xoff, flip, ck2, ci2, 0, n2, k, lk, li, lh, ls, nt, lk);
        else
            select_pairs(x, xoff, flip, ck, ci, 0, gt, k, lk, li, lh, ls, nt, lk);
    } else if (gt < k && k - gt <= eqn) {
        for (uint j = lid; j < gt; j += nt) {
            lk[j] = ck[j];
            li[j] = ci[j];
        }
        const uint need = k - gt;
        uint run = 0;
        for (uint g0 = 0; g0 < groups && run < need; g0 += nt) {
            /* a block of nt groups' counts: which hold equal keys, in order */
            const uint c = g0 + lid < groups ? eqc[g0 + lid] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            ls[lid] = c;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint gj = 0; gj < nt && g0 + gj < groups && run < need; ++gj) {
                if (ls[gj] == 0u)
                    continue;
                const long b = (long)(g0 + gj) * chunk, e = min(b + chunk, m);
                for (long i0 = b; i0 < e && run < need; i0 += nt) {
                    const long i = i0 + lid;
                    const uint isq = i < e && order_key(x[xoff + i], flip) == t;
                    barrier(CLK_LOCAL_MEM_FENCE);
                    ls[nt + 2 + lid] = isq;
                    for (uint off = 1; off < nt; off <<= 1) {
                        barrier(CLK_LOCAL_MEM_FENCE);
                        const uint v = lid >= off ? ls[nt + 2 + lid - off] : 0u;
                        barrier(CLK_LOCAL_MEM_FENCE);
                        ls[nt + 2 + lid] += v;
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                    const uint slot = run + ls[nt + 2 + lid] - isq;
                    if (isq && slot < need) {
                        lk[gt + slot] = t;
                        li[gt + slot] = (uint)i;
                    }
                    run += ls[nt + 2 + nt - 1];
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    } else {
        select_pairs(x, xoff, flip, ck, ci, 1, m, k, lk, li, lh, ls, nt, lk);
    }
    for (uint j = k + lid; j < CLT_T_KP; j += nt) {
        lk[j] = (key_t)0;
        li[j] = NO_INDEX;
    }
    local_bitonic(lk, li, nt);
    for (uint j = lid; j < k; j += nt) {
        ov[ooff + j] = x[xoff + li[j]];
        ox[ooff + j] = (long)li[j];
    }
}

/* Strategy `rowsel` (many rows of up to a few thousand elements, small k): one group a row
 * selects its k best pairs from the row itself (select_pairs: a pass a digit, the row in the
 * caches after the first), sorts them in __local memory and writes them; one launch, no
 * scratch. lk, li: CLT_T_KP pairs; lh: the bins (COPIES(CLT_WG) copies of SBP); ls: CLT_WG
 * + 3 uints and at least 35; with `cached` (where the host found room), lrow: the row's m
 * keys, read from x once and every pass then over __local memory. */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_tk_rowsel(__global const in_t *x, const long xoff, const long m, const key_t flip,
              const uint k, __global in_t *ov, __global long *ox, const long ooff,
              __local key_t *lk, __local uint *li, volatile __local uint *lh,
              __local uint *ls, __local key_t *lrow, const uint cached) {
    const uint lid = get_local_id(0);
    const long row = get_group_id(0);
    const long xr = xoff + row * m;
    if (cached) {
        for (long j = lid; j < m; j += CLT_WG)
            lrow[j] = order_key(x[xr + j], flip);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    select_pairs(x, xr, flip, (__global const key_t *)0, (__global const uint *)0,
                 cached ? 2 : 1, m, k, lk, li, lh, ls, CLT_WG, lrow);
    for (uint j = k + lid; j < CLT_T_KP; j += CLT_WG) {
        lk[j] = (key_t)0;
        li[j] = NO_INDEX;
    }
    local_bitonic(lk, li, CLT_WG);
    for (uint j = lid; j < k; j += CLT_WG) {
        ov[ooff + row * k + j] = x[xr + li[j]];
        ox[ooff + row * k + j] = (long)li[j];
    }
}
#endif

/* A batched transposes of P x Q: out[(a Q + q) P + p] = in[ioff + (a P + p) Q + q] (a top-k
 * along an axis that is not the last: the axis made the rows' and the answer put back), for
 * x's type and for the indices */
#define CLT_TRANSPOSE(NAME, T)                                                                   \
    __kernel void NAME(__global const T *in, const long ioff, __global T *out, const long P,  \
                       const long Q, const long total) {                                       \
        const long g = get_global_id(0);                                                       \
        if (g >= total)                                                                        \
            return;                                                                            \
        const long pq = P * Q, a = g / pq, r = g - a * pq, q = r / P, p = r - q * P;           \
        out[g] = in[ioff + (a * P + p) * Q + q];                                               \
    }
CLT_TRANSPOSE(clt_tk_transpose, in_t)
CLT_TRANSPOSE(clt_tk_transpose_index, long)
