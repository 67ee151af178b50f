/* cltune histograms: bincount of integers and uniform-bin histograms of floats (numpy's
 * semantics), unweighted (counts) or weighted (sums of the weights).
 *
 * clt_hist     element i of x[xoff .. xoff + n) falls in bin b (bincount: b = x[i]; uniform:
 *              numpy's index arithmetic and its +-1 corrections against the edges; edges
 *              given: a binary search of them; the last bin closed, values outside
 *              [edges[0], edges[nbins]] and NaN in none); its bin
 *              gets 1 (or w[i]). Strategies (CLT_H_STRATEGY):
 *                0 global   every increment an atomic on the result scratch;
 *                1 local    each group keeps CLT_H_REPS copies of the histogram in __local
 *                           memory (work-item l increments copy l % CLT_H_REPS: fewer
 *                           collisions on hot bins), added and then, counts, added into the
 *                           scratch's row with atomics (one a bin a group), weighted sums
 *                           stored as the group's own row (a fixed order of the sums);
 *                2 private  groups of one work-item (CPUs) keep theirs in __local memory
 *                           with plain increments (no other work-item shares it), element
 *                           i of a run of CLT_H_REPS in copy i.
 *              A group takes a contiguous block of `chunk` elements (coalesced: its
 *              work-items stride through it together). local and private count the bins
 *              wlo .. wlo + wn of a launch: a histogram larger than the group's __local
 *              memory is made a window at a time, a launch each (global: all bins).
 * clt_hist_out the scratch's rows (uint counts, or double / float sums; one row a histogram
 *              for counts and for global, a row a group for local/private sums) added up into
 *              the result (long, or the weights' type): 32-bit counters take passes of
 *              fewer than 2^32 elements, added.
 * clt_hist_fin clt_hist and clt_hist_out in one launch (counts of one row in one window and
 *              one pass: the warm histogram call), the returned edges copied by its last
 *              group (a device copy command costs NVIDIA's driver ~12 us of host time).
 * clt_hist_once bincount's clt_hist_fin before its length is known: it also stores each
 *              group's least and largest value (one read of x for both).
 * Every tunable has a default; values arrive as -D options from cltune.families.hist.kernel
 * (a validated HistConfig). Barriers are never in divergent code.
 */

#ifndef CLT_H_TYPE
#define CLT_H_TYPE 6 /* x: 0 float 1 double 2 char 3 uchar 4 short 5 ushort 6 int 7 uint 8 long 9 ulong */
#endif
#ifndef CLT_H_UNIFORM
#define CLT_H_UNIFORM 0 /* 0: bincount (integers); 1: uniform bins; 2: edges given (floats) */
#endif
#ifndef CLT_H_WEIGHTS
#define CLT_H_WEIGHTS 0 /* 0: counts; 1: float weights; 2: double weights */
#endif
#ifndef CLT_H_STRATEGY
#define CLT_H_STRATEGY 1
#endif
#ifndef CLT_H_REPS
#define CLT_H_REPS 1
#endif
#ifndef CLT_H_ITEMS
#define CLT_H_ITEMS 4 /* global and local: loads a work-item has in flight a step */
#endif
#ifndef CLT_WG
#define CLT_WG 64
#endif
#ifndef CLT_H_DOUBLE
#define CLT_H_DOUBLE 0 /* the device has fp64: uniform index arithmetic and sums in double */
#endif

#if CLT_H_DOUBLE || CLT_H_TYPE == 1 || CLT_H_WEIGHTS == 2
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if CLT_H_WEIGHTS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
/* numpy's arithmetic, step by step: no contraction into fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF

#if CLT_H_TYPE == 0
typedef float in_t;
#elif CLT_H_TYPE == 1
typedef double in_t;
#elif CLT_H_TYPE == 2
typedef char in_t;
#elif CLT_H_TYPE == 3
typedef uchar in_t;
#elif CLT_H_TYPE == 4
typedef short in_t;
#elif CLT_H_TYPE == 5
typedef ushort in_t;
#elif CLT_H_TYPE == 6
typedef int in_t;
#elif CLT_H_TYPE == 7
typedef uint in_t;
#elif CLT_H_TYPE == 8
typedef long in_t;
#else
typedef ulong in_t;
#endif

/* the type's least and largest values (bincount's extremes start from them) */
#if CLT_H_TYPE == 2
#define IN_LEAST SCHAR_MIN
#define IN_MOST SCHAR_MAX
#elif CLT_H_TYPE == 3
#define IN_LEAST 0
#define IN_MOST UCHAR_MAX
#elif CLT_H_TYPE == 4
#define IN_LEAST SHRT_MIN
#define IN_MOST SHRT_MAX
#elif CLT_H_TYPE == 5
#define IN_LEAST 0
#define IN_MOST USHRT_MAX
#elif CLT_H_TYPE == 6
#define IN_LEAST INT_MIN
#define IN_MOST INT_MAX
#elif CLT_H_TYPE == 7
#define IN_LEAST 0
#define IN_MOST UINT_MAX
#elif CLT_H_TYPE == 8
#define IN_LEAST LONG_MIN
#define IN_MOST LONG_MAX
#elif CLT_H_TYPE == 9
#define IN_LEAST 0
#define IN_MOST ULONG_MAX
#endif

#if CLT_H_DOUBLE
typedef double real_t; /* numpy computes the bin index in double */
#else
typedef float real_t;
#endif

#if CLT_H_WEIGHTS == 1
typedef float w_t;
#elif CLT_H_WEIGHTS == 2
typedef double w_t;
#endif

/* the scratch: 32-bit counts, or weighted sums in double (float without fp64) */
#if CLT_H_WEIGHTS == 0
typedef uint acc_t;
#elif CLT_H_DOUBLE
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* ---- adding to a bin ----------------------------------------------------------------------- */
#if CLT_H_WEIGHTS == 0
#define ADD_G(p, v) atomic_inc(p)
#define ADD_L(p, v) atomic_inc(p)
#define ADD_PLAIN(p, v) (*(p) += 1u)
#else
/* float sums by compare-and-swap on their bits (OpenCL 1.2 has no float atomics) */
#if CLT_H_DOUBLE
#define ADD_CAS(Q)                                                                               \
    inline void add_##Q(volatile Q acc_t *p, const acc_t v) {                                  \
        long old = atom_add((volatile Q long *)p, 0L), seen; /* an atomic read (no race) */    \
        do {                                                                                   \
            seen = old;                                                                        \
            old = atom_cmpxchg((volatile Q long *)p, seen, as_long(as_double(seen) + v));      \
        } while (old != seen);                                                                 \
    }
#else
#define ADD_CAS(Q)                                                                               \
    inline void add_##Q(volatile Q acc_t *p, const acc_t v) {                                  \
        int old = atomic_add((volatile Q int *)p, 0), seen;                                    \
        do {                                                                                   \
            seen = old;                                                                        \
            old = atomic_cmpxchg((volatile Q int *)p, seen, as_int(as_float(seen) + v));       \
        } while (old != seen);                                                                 \
    }
#endif
ADD_CAS(__global)
ADD_CAS(__local)
#define ADD_G(p, v) add___global(p, v)
#define ADD_L(p, v) add___local(p, v)
#define ADD_PLAIN(p, v) (*(p) += (v))
#endif

/* ---- which bin --------------------------------------------------------------------------- */
/* the bin of v, or -1 (outside the range, NaN) */
inline long clt_bin(const in_t v, const long nbins, const in_t lo, const in_t hi,
                    const real_t scale, __global const in_t *edges) {
#if CLT_H_UNIFORM == 2
    /* edges given (numpy's searchsorted path): the last edge <= v (equal edges: the last of
     * them), the last bin closed */
    if (!(v >= lo && v <= hi))
        return -1; /* NaN too */
    long a = 0, e = nbins + 1;
    while (a < e) {
        const long m = (a + e) >> 1;
        if (edges[m] <= v)
            a = m + 1;
        else
            e = m;
    }
    return min(a - 1, nbins - 1);
#elif CLT_H_UNIFORM
    if (!(v >= lo && v <= hi))
        return -1; /* NaN too */
    /* numpy: ((x - first_edge) / norm_denom) * n_bins, x - first_edge in x's type; here
     * times scale = n_bins / norm_denom (no division an element): within an ulp of numpy's,
     * and both are within one bin of the answer, which the edges then settle exactly */
    const in_t d = v - lo;
    const real_t f = (real_t)d * scale;
    long b = (long)f;
    if (b >= nbins)
        b = nbins - 1;
    if (v < edges[b])
        b -= 1;
    else if (b != nbins - 1 && v >= edges[b + 1])
        b += 1;
    return b;
#else
    const long b = (long)v - (long)lo; /* lo: 0, or unique_counts' minimum */
    return (b >= 0 && b < nbins) ? b : -1;
#endif
}

#if CLT_H_WEIGHTS
#define W_ARGS , __global const w_t *w, const long woff
#define W_OF(i) ((acc_t)w[woff + (i)])
#else
#define W_ARGS
#define W_OF(i) 1u
#endif

/* bincount's one-pass call (clt_hist_once: track 1) also keeps the least and the largest
 * value a work-item saw, counted or not: its length and its check for negative values */
#if !CLT_H_UNIFORM
#define SEE(v)                                                                                   \
    if (track) {                                                                               \
        elo = min(elo, (v));                                                                   \
        ehi = max(ehi, (v));                                                                   \
    }
#else
#define SEE(v)
#endif

/* the group's work-items stride through [begin, end) together (coalesced), CLT_H_ITEMS loads
 * of a step in flight before their adds: ADD(hist + bin, weight) for each element in a bin */
#define STRIDED_ADDS(ADD, hist)                                                                  \
    do {                                                                                       \
        long i = begin + lid;                                                                  \
        for (; i + (CLT_H_ITEMS - 1) * CLT_WG < end; i += CLT_H_ITEMS * CLT_WG) {              \
            in_t v[CLT_H_ITEMS];                                                               \
            _Pragma("unroll") for (int k = 0; k < CLT_H_ITEMS; ++k)                            \
                v[k] = x[xoff + i + k * CLT_WG];                                               \
            _Pragma("unroll") for (int k = 0; k < CLT_H_ITEMS; ++k) {                          \
                SEE(v[k]);                                                                     \
                const long b = clt_bin(v[k], nbins, lo, hi, scale, edges) - wlo;               \
                if ((ulong)b < (ulong)wn)                                                      \
                    ADD((hist) + b, W_OF(i + k * CLT_WG));                                     \
            }                                                                                  \
        }                                                                                      \
        for (; i < end; i += CLT_WG) {                                                         \
            const in_t v1 = x[xoff + i];                                                       \
            SEE(v1);                                                                           \
            const long b = clt_bin(v1, nbins, lo, hi, scale, edges) - wlo;                     \
            if ((ulong)b < (ulong)wn)                                                          \
                ADD((hist) + b, W_OF(i));                                                      \
        }                                                                                      \
    } while (0)

#define HIST_PARAMS                                                                              \
    __global const in_t *x, const long xoff, const long n W_ARGS, const long nbins,            \
        const in_t lo, const in_t hi, const real_t scale, __global const in_t *edges,          \
        const long chunk, const long rowlen, const long gpr, volatile __global acc_t *scratch, \
        volatile __local acc_t *tile, const long wlo, const long wn
#if CLT_H_WEIGHTS
#define HIST_W_NAMES , w, woff
#else
#define HIST_W_NAMES
#endif
#define HIST_NAMES                                                                               \
    x, xoff, n HIST_W_NAMES, nbins, lo, hi, scale, edges, chunk, rowlen, gpr, scratch, tile, wlo, wn

/* a group's part of clt_hist (and of clt_hist_fin, clt_hist_once); track (a constant where inlined): keep
 * the least and the largest value seen in ext[0], ext[1] (bincount builds) */
inline void clt_hist_group(HIST_PARAMS, const int track, in_t *ext) {
#if !CLT_H_UNIFORM
    in_t elo = (in_t)IN_MOST, ehi = (in_t)IN_LEAST; /* kept in registers, stored at the end */
#endif
    /* bins wlo .. wlo + wn only (local and private: a window of the histogram that fits
     * __local memory; the host launches the windows in turn; global: all of them) */
    /* rows of rowlen elements (one row: the whole array), gpr groups a row, each a block of
     * `chunk` of its row's elements */
    const uint lid = get_local_id(0);
    const long g = (long)get_group_id(0);
    const long hrow = g / gpr; /* the histogram (row) this group adds to */
    const long rbeg = hrow * rowlen;
    const long begin = rbeg + (g - hrow * gpr) * chunk;
    const long end = min(min(begin + chunk, rbeg + rowlen), n);
#if CLT_H_STRATEGY == 0
    STRIDED_ADDS(ADD_G, scratch + hrow * nbins);
#else
    const long cells = (long)CLT_H_REPS * wn;
    for (long j = lid; j < cells; j += CLT_WG)
        tile[j] = (acc_t)0;
    barrier(CLK_LOCAL_MEM_FENCE);
#if CLT_H_STRATEGY == 2
    /* one work-item: CLT_H_REPS copies taken in turn, so that a run of one value does not
     * wait on its own last increment (a store-to-load chain) */
    __local acc_t *t = (__local acc_t *)tile;
    long i = begin;
    for (; i + CLT_H_REPS <= end; i += CLT_H_REPS) {
        in_t v[CLT_H_REPS];
#pragma unroll
        for (int r = 0; r < CLT_H_REPS; ++r)
            v[r] = x[xoff + i + r];
#if !CLT_H_UNIFORM
        if (track) { /* the run's extremes first: apart from the increments' chains */
#pragma unroll
            for (int r = 0; r < CLT_H_REPS; ++r) {
                elo = min(elo, v[r]);
                ehi = max(ehi, v[r]);
            }
        }
#endif
#pragma unroll
        for (int r = 0; r < CLT_H_REPS; ++r) {
            const long b = clt_bin(v[r], nbins, lo, hi, scale, edges) - wlo;
            if ((ulong)b < (ulong)wn)
                ADD_PLAIN(t + (long)r * wn + b, W_OF(i + r));
        }
    }
    for (; i < end; ++i) {
        const in_t v1 = x[xoff + i];
        SEE(v1);
        const long b = clt_bin(v1, nbins, lo, hi, scale, edges) - wlo;
        if ((ulong)b < (ulong)wn)
            ADD_PLAIN(t + b, W_OF(i));
    }
#else
    volatile __local acc_t *mine = tile + (long)(lid % CLT_H_REPS) * wn;
    STRIDED_ADDS(ADD_L, mine);
#endif
    /* the group's histogram (its copies added) to its own row of the scratch: no atomics,
     * and clt_hist_out adds the rows in a fixed order */
    barrier(CLK_LOCAL_MEM_FENCE);
#if CLT_H_WEIGHTS == 0
    /* counts: added into the histogram's one row with atomics (exact in any order; a
     * row a group would leave clt_hist_out a long serial sum a bin) */
    volatile __global acc_t *row = scratch + hrow * nbins + wlo;
#else
    __global acc_t *row = (__global acc_t *)scratch + (long)get_group_id(0) * nbins + wlo;
#endif
    for (long j = lid; j < wn; j += CLT_WG) {
        acc_t s = tile[j];
        for (int r = 1; r < CLT_H_REPS; ++r)
            s += tile[(long)r * wn + j];
#if CLT_H_WEIGHTS == 0
        if (s)
            atomic_add(row + j, s);
#else
        row[j] = s;
#endif
    }
#endif
#if !CLT_H_UNIFORM
    if (track) {
        ext[0] = elo;
        ext[1] = ehi;
    }
#endif
}

__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void clt_hist(HIST_PARAMS) {
    in_t ext[2];
    clt_hist_group(HIST_NAMES, 0, ext);
}

#if CLT_H_WEIGHTS == 0
#if !CLT_H_UNIFORM
/* the slots of a group's extremes in __local memory (work-items fold into them in turns) */
#define EXT_SLOTS (CLT_WG < 32 ? CLT_WG : 32)
/* the group's least and largest of its work-items' (lo, hi) to part[2 g], part[2 g + 1]
 * (called by every work-item of the group: barriers) */
inline void clt_ext_store(const in_t lo, const in_t hi, __local in_t *red,
                          __global in_t *part) {
    const uint lid = get_local_id(0);
    for (uint s = 0; s < CLT_WG; s += EXT_SLOTS) {
        if (lid >= s && lid < s + EXT_SLOTS) {
            const uint j = lid - s;
            red[2 * j] = s ? min(red[2 * j], lo) : lo;
            red[2 * j + 1] = s ? max(red[2 * j + 1], hi) : hi;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        in_t a = red[0], b = red[1];
        for (uint j = 1; j < EXT_SLOTS; ++j) {
            a = min(a, red[2 * j]);
            b = max(b, red[2 * j + 1]);
        }
        part[2 * get_group_id(0)] = a;
        part[2 * get_group_id(0) + 1] = b;
    }
}
#endif
/* clt_hist_fin's end: the last group to finish (a ticket in the scratch's cell nbins, zero
 * between calls) moves the counts into out (reading each cell by an exchange with zero: the
 * cells left zero for the next call) and copies the ne kept edges into eout */
inline void clt_hist_last(__global const in_t *edges, const long nbins,
                          volatile __global acc_t *scratch, __global long *out, const long ooff,
                          __global in_t *eout, const long eoff, const long ne,
                          __local uint *is_last) {
    volatile __global uint *ticket = (volatile __global uint *)scratch + nbins;
    /* every work-item's adds before the group's ticket */
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#ifdef cl_nv_pragma_unroll
    asm volatile("membar.gl;");
#endif
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const uint lid = get_local_id(0);
    if (lid == 0)
        *is_last = atomic_inc(ticket) == (uint)(get_num_groups(0) - 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (*is_last) {
#ifdef cl_nv_pragma_unroll
        asm volatile("membar.gl;");
#endif
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        for (long j = lid; j < nbins; j += CLT_WG)
            out[ooff + j] = (long)atomic_xchg(scratch + j, 0u);
        for (long j = lid; j < ne; j += CLT_WG)
            eout[eoff + j] = edges[j];
        if (lid == 0)
            atomic_xchg(ticket, 0u);
    }
}

/* clt_hist and clt_hist_out in one launch, for counts of one row, one window (wlo 0, wn
 * nbins) and one pass (clt_hist_last) */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_hist_fin(HIST_PARAMS, __global long *out, const long ooff, __global in_t *eout,
             const long eoff, const long ne) {
    __local uint is_last;
    in_t ext[2];
    clt_hist_group(HIST_NAMES, 0, ext);
    clt_hist_last(edges, nbins, scratch, out, ooff, eout, eoff, ne, &is_last);
}

#if !CLT_H_UNIFORM
/* bincount before its length is known: clt_hist_fin that also stores each group's least and
 * largest value (counted or not) to part[2 g], part[2 g + 1] (its own kernel: a branch
 * around the barriers cost PoCL's work-group loops 5x on skewed data) */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_hist_once(HIST_PARAMS, __global long *out, const long ooff, __global in_t *eout,
              const long eoff, const long ne, __global in_t *part) {
    __local uint is_last;
    __local in_t red[2 * EXT_SLOTS];
    in_t ext[2];
    clt_hist_group(HIST_NAMES, 1, ext);
    clt_ext_store(ext[0], ext[1], red, part);
    clt_hist_last(edges, nbins, scratch, out, ooff, eout, eoff, ne, &is_last);
}
#endif
#endif

/* out[i] (+)= the sum of the scratch's `parts` rows at bin i (counts: in long; sums: in the
 * scratch's type, converted once to the weights' type) */
#if CLT_H_WEIGHTS == 0
typedef long out_t;
typedef long sum_t;
#else
typedef w_t out_t;
typedef acc_t sum_t;
#endif
__kernel void clt_hist_out(__global acc_t *scratch, const long nbins, const long parts,
                           const long total, const uint flags, __global out_t *out,
                           const long ooff) {
    /* flags: 1 add to out (a later pass), 2 leave the cells read zero (the next call's or
     * pass's atomics start from them) */
    const long k = get_global_id(0); /* bin k % nbins of histogram (row) k / nbins */
    if (k >= total)
        return;
    const long row = k / nbins, i = k - row * nbins;
    sum_t s = (sum_t)0;
    for (long g = 0; g < parts; ++g) {
        const long c = (row * parts + g) * nbins + i;
        s += (sum_t)scratch[c];
        if (flags & 2u)
            scratch[c] = (acc_t)0;
    }
    out[ooff + k] = (flags & 1u) ? out[ooff + k] + (out_t)s : (out_t)s;
}

#if !CLT_H_UNIFORM
/* bincount's length (and its check for negative values): the least and the largest of each
 * group's block of x[xoff .. xoff + n), to part[2 g] and part[2 g + 1] (the host takes the
 * extremes of the groups'), one read of x and one small read back where two reductions took
 * two of each */
__kernel __attribute__((reqd_work_group_size(CLT_WG, 1, 1))) void
clt_hist_extremes(__global const in_t *x, const long xoff, const long n, const long chunk,
                  __global in_t *part) {
    __local in_t lo_l[CLT_WG], hi_l[CLT_WG];
    const uint lid = get_local_id(0);
    const long g = (long)get_group_id(0);
    const long begin = g * chunk, end = min(begin + chunk, n);
    in_t lo = x[xoff + min(begin, n - 1)], hi = lo;
    for (long i = begin + lid; i < end; i += CLT_WG) {
        const in_t v = x[xoff + i];
        lo = min(lo, v);
        hi = max(hi, v);
    }
    lo_l[lid] = lo;
    hi_l[lid] = hi;
    for (uint s = CLT_WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            lo_l[lid] = min(lo_l[lid], lo_l[lid + s]);
            hi_l[lid] = max(hi_l[lid], hi_l[lid + s]);
        }
    }
    if (lid == 0) {
        part[2 * g] = lo_l[0];
        part[2 * g + 1] = hi_l[0];
    }
}
#endif
