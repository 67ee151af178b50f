/* cltune's stable LSD radix sort of (key, index) pairs (cltune.sort, argsort, sort_by_key):
 *   every element's order key: an unsigned integer whose order is numpy's (floats by sign
 *   flip, NaN after everything, -0 as +0; signed integers by a bias; XOR `flip` for
 *   descending), computed from the input by the first pass
 *   per pass (CLT_SORT_BITS bits of the key, the lowest first; then, for rows, the bits of
 *   each element's row, so that rows end up in order and each row sorted):
 *     clt_sort_hist    group g counts the digits of its chunk -> hist[digit * G + g] (the
 *                      first pass also flags values whose bits do not come back from their
 *                      keys: -0, NaN)
 *     clt_sort_scan    one group: hist exclusively scanned in place (digit-major: every
 *                      element of a smaller digit, then the same digit's earlier groups)
 *     clt_sort_scatter each element to hist[its digit, g] + the elements of that digit before
 *                      it in the chunk (stable): one work-item a chunk (CLT_SORT_WG 1: CPUs)
 *                      walks it once; groups (GPUs) sort each tile of CLT_SORT_WG x
 *                      CLT_SORT_ITEMS in __local memory first and write coalesced runs
 *   the last pass writes what the caller reads: keys and indices (mode 0), or the sorted
 *   values (mode 1: from their keys, by index where a value's bits do not come back from
 *   its key) and/or the int64 positions (mode 2; within a row for rows); the indices move
 *   through the passes only where something reads them (positions, rows, such values)
 *   clt_sort_values / clt_sort_gatherN  values from (keys, indices) and values (N bytes
 *                     each) by sorted indices (sort_by_key), positions
 * Equal keys keep their input order in every pass, so the sort is stable, ascending and
 * descending alike. Built per input type (CLT_SORT_TYPE: kernels/topk.cl's codes).
 */

#ifndef CLT_SORT_TYPE
#define CLT_SORT_TYPE 0
#endif
#ifndef CLT_SORT_WG
#define CLT_SORT_WG 64
#endif
#ifndef CLT_SORT_ITEMS
#define CLT_SORT_ITEMS 4
#endif
#ifndef CLT_SORT_BITS
#define CLT_SORT_BITS 4
#endif
#ifndef CLT_SORT_IDX64
#define CLT_SORT_IDX64 0 /* 1: indices as ulong (2^32 elements or more) */
#endif

#if CLT_SORT_TYPE == 0
typedef float in_t;
#elif CLT_SORT_TYPE == 1
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double in_t;
#elif CLT_SORT_TYPE == 2
typedef char in_t;
#elif CLT_SORT_TYPE == 3
typedef uchar in_t;
#elif CLT_SORT_TYPE == 4
typedef short in_t;
#elif CLT_SORT_TYPE == 5
typedef ushort in_t;
#elif CLT_SORT_TYPE == 6
typedef int in_t;
#elif CLT_SORT_TYPE == 7
typedef uint in_t;
#elif CLT_SORT_TYPE == 8
typedef long in_t;
#elif CLT_SORT_TYPE == 9
typedef ulong in_t;
#else
typedef ushort in_t; /* half: its bits (no cl_khr_fp16 needed: only ordered) */
#endif

#if CLT_SORT_TYPE == 1 || CLT_SORT_TYPE == 8 || CLT_SORT_TYPE == 9
typedef ulong key_t;
#else
typedef uint key_t;
#endif
#if CLT_SORT_IDX64
typedef ulong idx_t;
#else
typedef uint idx_t;
#endif

#define RADIX (1 << CLT_SORT_BITS)
#define TILE (CLT_SORT_WG * CLT_SORT_ITEMS)

/* the value's place in numpy's order as an unsigned key, XOR flip (descending) */
inline key_t order_key(const in_t v, const key_t flip) {
#if CLT_SORT_TYPE == 0 /* by the bits: a device that flushes denormals keeps their order */
    const uint b = as_uint(v);
    const key_t k = (b & 0x7FFFFFFFu) > 0x7F800000u ? 0xFFFFFFFFu /* NaN */
                   : (b & 0x7FFFFFFFu) == 0u ? 0x80000000u         /* -0 as 0 */
                   : (b & 0x80000000u) ? ~b : (b | 0x80000000u);
#elif CLT_SORT_TYPE == 1
    const ulong b = as_ulong(v);
    const key_t k = (b & 0x7FFFFFFFFFFFFFFFul) > 0x7FF0000000000000ul ? 0xFFFFFFFFFFFFFFFFul
                   : (b & 0x7FFFFFFFFFFFFFFFul) == 0ul ? 0x8000000000000000ul
                   : (b & 0x8000000000000000ul) ? ~b : (b | 0x8000000000000000ul);
#elif CLT_SORT_TYPE == 2
    const key_t k = (uint)((int)v + 128);
#elif CLT_SORT_TYPE == 4
    const key_t k = (uint)((int)v + 32768);
#elif CLT_SORT_TYPE == 6
    const key_t k = as_uint(v) ^ 0x80000000u;
#elif CLT_SORT_TYPE == 8
    const key_t k = as_ulong(v) ^ 0x8000000000000000ul;
#elif CLT_SORT_TYPE == 10
    const uint b = v;
    const key_t k = ((b & 0x7C00u) == 0x7C00u && (b & 0x3FFu)) ? 0xFFFFu /* NaN */
                   : (b & 0x7FFFu) == 0u ? 0x8000u                     /* -0 as 0 */
                   : (b & 0x8000u) ? (~b & 0xFFFFu) : (b | 0x8000u);
#else
    const key_t k = (key_t)v;
#endif
    return k ^ flip;
}

/* whether the value's bits are not those its key gives back (-0, NaN): the sort's values are
 * then gathered by index instead */
inline int clt_special(const in_t v) {
#if CLT_SORT_TYPE == 0 /* NaN, -0 */
    return (as_uint(v) & 0x7FFFFFFFu) > 0x7F800000u || as_uint(v) == 0x80000000u;
#elif CLT_SORT_TYPE == 1
    return (as_ulong(v) & 0x7FFFFFFFFFFFFFFFul) > 0x7FF0000000000000ul ||
           as_ulong(v) == 0x8000000000000000ul;
#elif CLT_SORT_TYPE == 10
    return ((v & 0x7C00u) == 0x7C00u && (v & 0x3FFu)) || v == 0x8000u;
#else
    return 0;
#endif
}

/* the value of a key (XOR flip undone): order_key's inverse where clt_special is false */
inline in_t value_of(key_t k, const key_t flip) {
    k ^= flip;
#if CLT_SORT_TYPE == 0
    return as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
#elif CLT_SORT_TYPE == 1
    return as_double((k & 0x8000000000000000ul) ? (k & 0x7FFFFFFFFFFFFFFFul) : ~k);
#elif CLT_SORT_TYPE == 2
    return (char)((int)k - 128);
#elif CLT_SORT_TYPE == 4
    return (short)((int)k - 32768);
#elif CLT_SORT_TYPE == 6
    return as_int(k ^ 0x80000000u);
#elif CLT_SORT_TYPE == 8
    return as_long(k ^ 0x8000000000000000ul);
#elif CLT_SORT_TYPE == 10
    return (ushort)((k & 0x8000u) ? (k & 0x7FFFu) : (~k & 0xFFFFu));
#else
    return (in_t)k;
#endif
}

/* group g's contiguous block of n elements (work-items strided within it: coalesced on GPUs,
 * one core's own range on CPUs) */
#define BLOCK(n)                                                                                \
    const ulong clt_per = ((n) + get_num_groups(0) - 1) / get_num_groups(0);                    \
    const ulong clt_a = (ulong)get_group_id(0) * clt_per;                                       \
    const ulong clt_b = min(clt_a + clt_per, (ulong)(n));

/* the sorted values: from the keys where every value comes back from its key, else by index */
__kernel void clt_sort_values(__global const key_t *keys, __global const idx_t *idx,
                              __global const uint *special, __global const in_t *x,
                              const ulong x_off, const ulong n, const key_t flip,
                              __global in_t *out) {
    BLOCK(n)
    if (special[0]) {
        for (ulong i = clt_a + get_local_id(0); i < clt_b; i += get_local_size(0))
            out[i] = x[x_off + idx[i]];
    } else {
        for (ulong i = clt_a + get_local_id(0); i < clt_b; i += get_local_size(0))
            out[i] = value_of(keys[i], flip);
    }
}

/* the pass's digit of element (key, index): bits [shift, shift + BITS) of the key, or of the
 * element's row (index / row_len) in a row pass (row_len > 0) */
#define DIGIT(k, i) ((uint)((row_len ? ((ulong)(i) / row_len) >> shift                         \
                                     : (ulong)((k) >> shift)) & (RADIX - 1)))

/* element g's key in a pass: computed from the input in the first pass */
#define KEY_AT(g) (first ? order_key(x[x_off + (g)], flip) : keys[(g)])
/* ... and its index: its place in the first pass */
#define IDX_AT(g) (first ? (idx_t)(g) : idx[(g)])

/* the elements a work-item of the histogram loads before counting them */
#define HIST_LOADS (CLT_SORT_WG > 1 ? 8 : 1)
#if CLT_SORT_WG == 1
#define COUNT(d, c) (counts[(d)] += (c)) /* one work-item: no atomics */
#else
#define COUNT(d, c) atomic_add(&counts[(d)], (c))
#endif

__kernel void clt_sort_hist(__global const key_t *keys, __global const idx_t *idx,
                            const ulong n, const ulong chunk, const uint shift,
                            const ulong row_len, __global idx_t *hist,
                            __global const in_t *x, const ulong x_off, const key_t flip,
                            const uint first, __global uint *special) {
    __local uint counts[RADIX];
    const uint lid = get_local_id(0);
    for (uint d = lid; d < RADIX; d += CLT_SORT_WG) counts[d] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong a = (ulong)get_group_id(0) * chunk;
    const ulong b = min(a + chunk, n);
    int sp = 0;
    /* a work-item counts runs of one digit in a register (skewed keys: few atomics) */
    uint last = RADIX, run = 0u;
    for (ulong i0 = a + lid; i0 < b; i0 += (ulong)CLT_SORT_WG * HIST_LOADS) {
        uint dd[HIST_LOADS]; /* several loads in flight before their counts */
#pragma unroll
        for (uint u = 0; u < HIST_LOADS; ++u) {
            const ulong i = i0 + (ulong)u * CLT_SORT_WG;
            dd[u] = RADIX;
            if (i < b) {
                if (first) {
                    const in_t v = x[x_off + i];
                    sp |= clt_special(v);
                    dd[u] = DIGIT(order_key(v, flip), 0);
                } else {
                    dd[u] = row_len ? DIGIT(0, idx[i]) : DIGIT(keys[i], 0);
                }
            }
        }
#pragma unroll
        for (uint u = 0; u < HIST_LOADS; ++u) {
            const uint d = dd[u];
            if (d == last) {
                ++run;
            } else if (d < RADIX) {
                if (run) COUNT(last, run);
                last = d;
                run = 1u;
            }
        }
    }
    if (run) COUNT(last, run);
    if (sp) special[0] = 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d < RADIX; d += CLT_SORT_WG)
        hist[(ulong)d * get_num_groups(0) + get_group_id(0)] = (idx_t)counts[d];
}

#define PADW(e) ((e) + ((e) >> 5)) /* a word's place in a padded __local array */
#define RAKERS (CLT_SORT_WG < 32 ? CLT_SORT_WG : 32)
#define PER_RAKER ((CLT_SORT_WG + RAKERS - 1) / RAKERS)
/* exclusive scan of s[0 .. CLT_SORT_WG) in place, every work-item calls it (after writing
 * its own s[lid]); returns the total. RAKERS work-items each sum a run of PER_RAKER entries,
 * one scans their totals, then each run is scanned from its total's prefix: 4 barriers,
 * whatever the group's size. rake: RAKERS + 1 entries. */
#define RAKE_EXCLUSIVE(name, T)                                                                   \
inline T name(__local T *s, __local T *rake) {                                                    \
    const uint lid = get_local_id(0);                                                             \
    const uint w0 = lid * PER_RAKER, w1 = min(w0 + PER_RAKER, (uint)CLT_SORT_WG);                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (lid < RAKERS) {                                                                           \
        T acc = 0;                                                                                \
        for (uint w = w0; w < w1; ++w) acc += s[w];                                               \
        rake[lid] = acc;                                                                          \
    }                                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (lid == 0) {                                                                               \
        T run = 0;                                                                                \
        for (uint w = 0; w < RAKERS; ++w) {                                                       \
            const T v = rake[w];                                                                  \
            rake[w] = run;                                                                        \
            run += v;                                                                             \
        }                                                                                         \
        rake[RAKERS] = run;                                                                       \
    }                                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (lid < RAKERS) {                                                                           \
        T run = rake[lid];                                                                        \
        for (uint w = w0; w < w1; ++w) {                                                          \
            const T v = s[w];                                                                     \
            s[w] = run;                                                                           \
            run += v;                                                                             \
        }                                                                                         \
    }                                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    return rake[RAKERS];                                                                          \
}
RAKE_EXCLUSIVE(clt_group_exclusive, uint)
#if CLT_SORT_IDX64
RAKE_EXCLUSIVE(clt_group_exclusive_idx, idx_t)
#else
#define clt_group_exclusive_idx clt_group_exclusive
#endif
/* the words of h[0 .. len) a tile of the scan holds: CLT_SORT_WG x SCAN_R */
#define SCAN_R 16
/* group d: digit d's counts over the G chunks, h[d * G .. d * G + G), exclusively scanned in
 * place, a tile of WG x SCAN_R at a time (loaded and stored by consecutive work-items:
 * coalesced; each work-item then scans SCAN_R consecutive words of the tile in __local
 * memory), and their total to tot[d] (the scatter adds the totals of the smaller digits) */
__kernel void clt_sort_scan(__global idx_t *hist, const uint len, __global idx_t *tot) {
    __local idx_t s[PADW(CLT_SORT_WG * SCAN_R)];
    __local idx_t part[CLT_SORT_WG];
    __local idx_t rake[RAKERS + 1];
    const uint lid = get_local_id(0);
    __global idx_t *h = hist + (ulong)get_group_id(0) * len;
    idx_t carry = 0;
    for (uint t0 = 0; t0 < len; t0 += CLT_SORT_WG * SCAN_R) {
        const uint m = min((uint)(CLT_SORT_WG * SCAN_R), len - t0);
        for (uint j = lid; j < m; j += CLT_SORT_WG) s[PADW(j)] = h[t0 + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint e0 = min(lid * SCAN_R, m), e1 = min(e0 + SCAN_R, m);
        idx_t sum = 0;
        for (uint e = e0; e < e1; ++e) sum += s[PADW(e)];
        part[lid] = sum;
        const idx_t total = clt_group_exclusive_idx(part, rake);
        idx_t run = carry + part[lid];
        for (uint e = e0; e < e1; ++e) {
            const idx_t v = s[PADW(e)];
            s[PADW(e)] = run;
            run += v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint j = lid; j < m; j += CLT_SORT_WG) h[t0 + j] = s[PADW(j)];
        carry += total;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) tot[get_group_id(0)] = carry;
}

/* the scatter's arguments (both forms) */
#define SCATTER_ARGS                                                                              \
    __global const key_t *keys, __global const idx_t *idx, const ulong n, const ulong chunk,      \
        const uint shift, const ulong row_len, __global const idx_t *hist,                        \
        __global key_t *keys_out, __global idx_t *idx_out, const uint want_idx,                   \
        __global const uint *special, const uint own_chunk, const uint first,                     \
        __global const idx_t *tot,                                                                \
        __global const in_t *x, const ulong x_off, const key_t flip, const uint mode,             \
        __global in_t *vals, __global long *pos, const ulong pos_row
/* where this chunk's first element of each digit goes: the smaller digits' totals and this
 * digit's earlier chunks (the scanned histograms), or (each chunk a row sorted in place) its
 * own histogram's prefix */
#define BASE_INIT(base)                                                                           \
    for (uint d = get_local_id(0); d < RADIX; d += CLT_SORT_WG) base[d] = own_chunk ? 0 : tot[d]; \
    barrier(CLK_LOCAL_MEM_FENCE); /* (barriers outside any branch: PoCL) */                      \
    if (get_local_id(0) == 0) {                                                                   \
        idx_t run = own_chunk ? (idx_t)a : 0;                                                     \
        for (uint d = 0; d < RADIX; ++d) {                                                        \
            const idx_t v = own_chunk ? hist[(ulong)d * G + get_group_id(0)] : base[d];           \
            base[d] = run;                                                                        \
            run += v;                                                                             \
        }                                                                                         \
    }                                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (!own_chunk)                                                                               \
        for (uint d = get_local_id(0); d < RADIX; d += CLT_SORT_WG)                               \
            base[d] += hist[(ulong)d * G + get_group_id(0)];
/* element (k, i) to place p: the next pass's key and index, or the last's value / position */
#define EMIT(p, k, i)                                                                             \
    do {                                                                                          \
        if (mode == 0u) {                                                                         \
            keys_out[(p)] = (k);                                                                  \
            if (move_idx) idx_out[(p)] = (i);                                                     \
        } else {                                                                                  \
            if (mode & 1u) vals[(p)] = sp ? x[x_off + (i)] : value_of((k), flip);                 \
            if (mode & 2u)                                                                        \
                pos[(p)] = (long)(pos_row ? (ulong)(i) % pos_row : (ulong)(i));                   \
        }                                                                                         \
    } while (0)

#if CLT_SORT_WG == 1
/* one work-item a chunk (CPUs): each element once, to its digit's next place */
__kernel void clt_sort_scatter(SCATTER_ARGS) {
    __local idx_t base[RADIX];
    const uint G = get_num_groups(0);
    const uint sp = special[0];
    /* the indices move only where they are read later (positions, rows, gathered values) */
    const int move_idx = want_idx || sp;
    const ulong a = (ulong)get_group_id(0) * chunk;
    BASE_INIT(base)
    const ulong b = min(a + chunk, n);
    for (ulong g = a; g < b; ++g) {
        const key_t k = KEY_AT(g);
        const idx_t i = move_idx ? IDX_AT(g) : (idx_t)0;
        const uint d = DIGIT(k, i);
        const idx_t p = base[d]++;
        EMIT(p, k, i);
    }
}
#else
/* Groups of work-items a chunk (GPUs): each tile
 * (CLT_SORT_WG x CLT_SORT_ITEMS consecutive elements) is first sorted by the pass's digit
 * in __local memory — rounds of CLT_SORT_SUB bits, each a stable counting sort: per
 * work-item counts of its CLT_SORT_ITEMS consecutive elements ([sub-digit][work-item], padded
 * against bank conflicts), one raking scan of them, each element to its place — so that the
 * tile's elements of one digit are consecutive and each work-item then writes consecutive
 * places (coalesced runs) instead of one place per digit. Digits of 8 bits take 2 rounds of
 * 4 bits and the passes are half as many as with 4-bit digits. The tile's elements past the
 * chunk's end count as the highest digit in every round: they stay last and are not
 * written. */
#ifndef CLT_SORT_SUB
#define CLT_SORT_SUB 4
#endif
#define SUB_BITS (CLT_SORT_BITS < CLT_SORT_SUB ? CLT_SORT_BITS : CLT_SORT_SUB)
#define SUBR (1 << SUB_BITS)
#define ROUNDS ((CLT_SORT_BITS + SUB_BITS - 1) / SUB_BITS)
/* a work-item's counts of the SUBR sub-digits packed in a ulong: CB bits each, so up to
 * PACK_MAX items a work-item (4-bit rounds: 15) count in registers */
#define CB (64 / SUBR)
#define PACK_MAX ((1u << (CB < 31 ? CB : 31)) - 1u)
/* CLT_SORT_PACK2 1: the [sub-digit][work-item] counts two to a __local word (sub-digits h and
 * h + SUBR / 2 in its low and high 16 bits), so that the words and the scan over them are
 * half as many (CUB's packed counters): a word's scanned low half is its low sub-digit's place,
 * its high half plus the tile's elements of the low sub-digits is its high one's. Taken where
 * the counts come packed in registers and a tile's count fits 16 bits. */
#ifndef CLT_SORT_PACK2
#define CLT_SORT_PACK2 0
#endif
#if CLT_SORT_PACK2 && CLT_SORT_ITEMS <= PACK_MAX && SUBR >= 2 && TILE < 65536
#define TS_P2 1
#define CROWS (SUBR / 2)
#else
#define TS_P2 0
#define CROWS SUBR
#endif

/* sorts the tile's m elements (tk, ti: its keys and, where move_idx, indices; padded) by
 * their digit at `shift` (of the row for row_len) in place, stably, in ROUNDS counting rounds;
 * then tfirst[d] / tend[d] are digit d's first and one-past-last place in the tile (0, 0 where
 * none: the caller zeroes them after use). Every work-item calls it; barriers inside. */
inline void clt_tile_sort(__local key_t *tk, __local idx_t *ti, __local uint *cnt,
                          __local uint *sums, __local uint *rake, __local uint *tfirst,
                          __local uint *tend, const uint m, const int move_idx,
                          const uint shift, const ulong row_len, const int bounds) {
    const uint lid = get_local_id(0);
    key_t k[CLT_SORT_ITEMS];
    idx_t iv[CLT_SORT_ITEMS];
    uint dg[CLT_SORT_ITEMS], rank[CLT_SORT_ITEMS];
    for (uint r = 0; r < ROUNDS; ++r) {
        /* this work-item's elements lid * ITEMS + t in the tile's order so far */
#pragma unroll
        for (uint t = 0; t < CLT_SORT_ITEMS; ++t) {
            const uint j = lid * CLT_SORT_ITEMS + t;
            k[t] = j < m ? tk[PADW(j)] : (key_t)0;
            iv[t] = (move_idx && j < m) ? ti[PADW(j)] : (idx_t)0;
            dg[t] = j < m ? DIGIT(k[t], iv[t]) : (uint)(RADIX - 1);
        }
        const uint sh = r * SUB_BITS;
#if CLT_SORT_ITEMS <= PACK_MAX /* the work-item's counts in one register word, CB bits each */
        ulong packed = 0ul;
#pragma unroll
        for (uint t = 0; t < CLT_SORT_ITEMS; ++t) {
            const uint f = ((dg[t] >> sh) & (SUBR - 1)) * CB;
            rank[t] = (uint)(packed >> f) & PACK_MAX;
            packed += 1ul << f;
        }
#if TS_P2
        for (uint h = 0; h < CROWS; ++h)
            cnt[PADW(h * CLT_SORT_WG + lid)] = ((uint)(packed >> (h * CB)) & PACK_MAX) |
                                               (((uint)(packed >> ((h + CROWS) * CB)) & PACK_MAX)
                                                << 16);
#else
        for (uint d = 0; d < SUBR; ++d)
            cnt[PADW(d * CLT_SORT_WG + lid)] = (uint)(packed >> (d * CB)) & PACK_MAX;
#endif
#else
        for (uint d = 0; d < SUBR; ++d) cnt[PADW(d * CLT_SORT_WG + lid)] = 0u;
#pragma unroll
        for (uint t = 0; t < CLT_SORT_ITEMS; ++t) {
            const uint e = PADW(((dg[t] >> sh) & (SUBR - 1)) * CLT_SORT_WG + lid);
            rank[t] = cnt[e];
            cnt[e] = rank[t] + 1u;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        /* exclusive scan of cnt in (sub-digit, work-item) order: each work-item SUBR
         * consecutive entries, then the group's scan of their sums */
        uint sum = 0u;
        for (uint e = lid * CROWS; e < (lid + 1) * CROWS; ++e) sum += cnt[PADW(e)];
        sums[lid] = sum;
        const uint low = clt_group_exclusive(sums, rake) & 0xFFFFu; /* (TS_P2's low halves) */
        uint run = sums[lid];
        for (uint e = lid * CROWS; e < (lid + 1) * CROWS; ++e) {
            const uint v = cnt[PADW(e)];
            cnt[PADW(e)] = run;
            run += v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (uint t = 0; t < CLT_SORT_ITEMS; ++t) { /* own column: no race */
            const uint sd = (dg[t] >> sh) & (SUBR - 1);
#if TS_P2
            const uint w = cnt[PADW((sd & (CROWS - 1)) * CLT_SORT_WG + lid)];
            const uint p = (sd < CROWS ? (w & 0xFFFFu) : (w >> 16) + low) + rank[t];
#else
            const uint p = cnt[PADW(sd * CLT_SORT_WG + lid)] + rank[t];
#endif
            tk[PADW(p)] = k[t];
            if (move_idx) ti[PADW(p)] = iv[t];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (!bounds) return; /* (uniform) */
    /* the tile is in digit order: each digit's first and one-past-last place */
    for (uint p = lid; p < m; p += CLT_SORT_WG) {
        const uint d = DIGIT(tk[PADW(p)], move_idx ? ti[PADW(p)] : (idx_t)0);
        if (p == 0 || DIGIT(tk[PADW(p - 1)], move_idx ? ti[PADW(p - 1)] : (idx_t)0) != d)
            tfirst[d] = p;
        if (p + 1 == m || DIGIT(tk[PADW(p + 1)], move_idx ? ti[PADW(p + 1)] : (idx_t)0) != d)
            tend[d] = p + 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* clt_tile_sort's __local arrays: each digit's first and one-past-last place in the tile
 * (0, 0 where none), the [sub-digit][work-item] counts and places, the scan's sums and rakers,
 * the tile's keys and indices */
#define TILE_LOCALS                                                                               \
    __local uint tfirst[RADIX];                                                                   \
    __local uint tend[RADIX];                                                                     \
    __local uint cnt[PADW(CROWS * CLT_SORT_WG)];                                                  \
    __local uint sums[CLT_SORT_WG];                                                               \
    __local uint rake[RAKERS + 1];                                                                \
    __local key_t tk[PADW(TILE)];                                                                 \
    __local idx_t ti[PADW(TILE)];

/* the tile's m sorted elements to base[their digit] + their place among the digit's (consecutive
 * places: coalesced runs) */
#define TILE_WRITE(base)                                                                          \
    for (uint p = lid; p < m; p += CLT_SORT_WG) {                                                 \
        const key_t kk = tk[PADW(p)];                                                             \
        const idx_t ii = move_idx ? ti[PADW(p)] : (idx_t)0;                                       \
        const uint d = DIGIT(kk, ii);                                                             \
        const ulong q = (ulong)base[d] + (p - tfirst[d]);                                         \
        EMIT(q, kk, ii);                                                                          \
    }

__kernel void clt_sort_scatter(SCATTER_ARGS) {
    __local idx_t base[RADIX]; /* where this chunk's next element of each digit goes */
    TILE_LOCALS
    const uint lid = get_local_id(0);
    const uint G = get_num_groups(0);
    const uint sp = special[0];
    const int move_idx = want_idx || sp;
    const ulong a = (ulong)get_group_id(0) * chunk;
    BASE_INIT(base)
    for (uint d = lid; d < RADIX; d += CLT_SORT_WG) tfirst[d] = tend[d] = 0u;
    const ulong b = min(a + chunk, n);
    for (ulong t0 = a; t0 < b; t0 += TILE) {
        const uint m = (uint)min((ulong)TILE, b - t0); /* the tile's elements */
        for (uint j = lid; j < m; j += CLT_SORT_WG) { /* coalesced */
            tk[PADW(j)] = KEY_AT(t0 + j);
            if (move_idx) ti[PADW(j)] = IDX_AT(t0 + j);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        clt_tile_sort(tk, ti, cnt, sums, rake, tfirst, tend, m, move_idx, shift, row_len, 1);
        TILE_WRITE(base)
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint d = lid; d < RADIX; d += CLT_SORT_WG) {
            base[d] += tend[d] - tfirst[d];
            tfirst[d] = tend[d] = 0u;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ---- onesweep (GPUs, whole arrays of fewer than 2^30 elements) -------------------------------
 * clt_sort_hist_all counts every pass's digits in one read of the input, its last group turns
 * them into each pass's exclusive digit offsets; then one clt_sort_onesweep launch a pass: a
 * group takes a ticket (tiles handed out in the order groups start, so a group only waits on
 * groups that already run), sorts its tile by the digit in __local memory (clt_tile_sort),
 * publishes each digit's count in its tile (state A), walks back over its predecessors' words
 * of the same digit until an inclusive count (state P), publishes its own (P), and writes the
 * tile to the digit's offset + the elements of the digit before the tile (CUB's onesweep: no
 * histogram and scan a pass). A look word: the state in bits 30..31, the count below. The
 * look words of a pass are zero before it: the first pass's cleared by clt_sort_hist_all, each
 * later pass's (the other of two arrays) by the pass before it, a tile its own row.
 * `state` (zeroed before the sort): [0] special, [1] clt_sort_hist_all's ticket, [2 + p] pass
 * p's ticket, [OFFS_AT + p * RADIX + d] pass p's offset of digit d. */
#define OFFS_AT 64u
#define LK_A 0x40000000u
#define LK_P 0x80000000u
#define LK_COUNT 0x3FFFFFFFu

/* the passes of a whole key (its type's bits), counted by clt_sort_hist_all (a sort of fewer
 * bits uses the first ones) */
#if CLT_SORT_TYPE == 1 || CLT_SORT_TYPE == 8 || CLT_SORT_TYPE == 9
#define KEY_BITS 64
#elif CLT_SORT_TYPE == 2 || CLT_SORT_TYPE == 3
#define KEY_BITS 8
#elif CLT_SORT_TYPE == 4 || CLT_SORT_TYPE == 5 || CLT_SORT_TYPE == 10
#define KEY_BITS 16
#else
#define KEY_BITS 32
#endif
#define PASSES_ALL ((KEY_BITS + CLT_SORT_BITS - 1) / CLT_SORT_BITS)

/* every pass's digit counts of the input (a work-item counts runs of one digit a pass in
 * registers: skewed keys take few atomics; HIST_LOADS loads in flight), added to state's
 * offsets; the last group turns them into exclusive offsets. Clears the first pass's look
 * words and flags values whose bits do not come back from their keys (-0, NaN). */
__kernel void clt_sort_hist_all(__global const in_t *x, const ulong x_off, const ulong n,
                                const key_t flip, const uint passes, volatile __global uint *state,
                                __global uint *look0, const ulong look_words,
                                __local uint *counts) {
    __local uint last;
    const uint lid = get_local_id(0);
    const uint R = passes * RADIX;
    for (uint e = lid; e < PASSES_ALL * RADIX; e += CLT_SORT_WG) counts[e] = 0u;
    for (ulong e = get_global_id(0); e < look_words; e += get_global_size(0)) look0[e] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    BLOCK(n)
    int sp = 0;
    uint dl[PASSES_ALL], run[PASSES_ALL];
#pragma unroll
    for (uint p = 0; p < PASSES_ALL; ++p) dl[p] = run[p] = 0u;
    for (ulong i0 = clt_a + lid; i0 < clt_b; i0 += (ulong)CLT_SORT_WG * HIST_LOADS) {
        key_t kv[HIST_LOADS];
        uint ok = 0u;
#pragma unroll
        for (uint u = 0; u < HIST_LOADS; ++u) {
            const ulong i = i0 + (ulong)u * CLT_SORT_WG;
            kv[u] = 0;
            if (i < clt_b) {
                const in_t v = x[x_off + i];
                sp |= clt_special(v);
                kv[u] = order_key(v, flip);
                ok |= 1u << u;
            }
        }
#pragma unroll
        for (uint u = 0; u < HIST_LOADS; ++u) {
            if (!(ok & (1u << u))) continue;
#pragma unroll
            for (uint p = 0; p < PASSES_ALL; ++p) {
                const uint d = (uint)((kv[u] >> (p * CLT_SORT_BITS)) & (RADIX - 1));
                if (run[p] && d == dl[p]) {
                    ++run[p];
                } else {
                    if (run[p]) atomic_add(&counts[p * RADIX + dl[p]], run[p]);
                    dl[p] = d;
                    run[p] = 1u;
                }
            }
        }
    }
#pragma unroll
    for (uint p = 0; p < PASSES_ALL; ++p)
        if (run[p]) atomic_add(&counts[p * RADIX + dl[p]], run[p]);
    if (sp) state[0] = 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < R; e += CLT_SORT_WG)
        if (counts[e]) atomic_add(&state[OFFS_AT + e], counts[e]);
    /* the last group: each pass's counts to exclusive offsets */
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0) last = atomic_inc(&state[1]) == get_num_groups(0) - 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (last) {
        for (uint p = lid; p < passes; p += CLT_SORT_WG) {
            uint acc = 0u;
            for (uint d = 0; d < RADIX; ++d) acc += atomic_xchg(&state[OFFS_AT + p * RADIX + d], acc);
        }
    }
}

/* how the look-back reads its predecessors' words: CLT_OS_WINDOW words of one digit loaded at
 * once (consecutive predecessors, nearest first), then taken in order until a word not yet
 * published (read again from there) or an inclusive one (done); 1: one word at a time */
#ifndef CLT_OS_WINDOW
#define CLT_OS_WINDOW 1
#endif

/* the elements of digit d in the tiles before tile t (t > 0): its predecessors' words walked
 * back until an inclusive one; `vol`: volatile loads, else atomics */
inline uint clt_os_before(volatile __global uint *look, const uint t, const uint d,
                          const uint vol) {
    uint before = 0u;
    long j = (long)t - 1;
    while (j >= 0) {
        uint v[CLT_OS_WINDOW];
#pragma unroll
        for (uint u = 0; u < CLT_OS_WINDOW; ++u) {
            const long i = j - (long)u; /* past tile 0 (inclusive, so never taken): none */
            volatile __global uint *r = look + (ulong)(i < 0 ? 0 : i) * RADIX + d;
            v[u] = i < 0 ? LK_P : (vol ? *r : atomic_or(r, 0u));
        }
        uint u = 0u;
        int done = 0;
        for (; u < CLT_OS_WINDOW; ++u) {
            if (!(v[u] & (LK_A | LK_P))) break; /* not yet: read again from here */
            before += v[u] & LK_COUNT;
            if (v[u] & LK_P) {
                done = 1;
                break;
            }
        }
        if (done) break;
        j -= (long)u;
    }
    return before;
}

/* tile t's word of digit d: state `st` (LK_A, LK_P) and count c */
#define LOOK_PUT(t, d, st, c)                                                                     \
    do {                                                                                          \
        volatile __global uint *w_ = look + (ulong)(t) * RADIX + (d);                             \
        if (vol) *w_ = (st) | (c); else atomic_xchg(w_, (st) | (c));                              \
    } while (0)

__kernel void clt_sort_onesweep(__global const key_t *keys, __global const idx_t *idx,
                                const ulong n, const uint pass, volatile __global uint *state,
                                volatile __global uint *look, __global uint *look_next,
                                const uint clear_next, __global key_t *keys_out,
                                __global idx_t *idx_out, const uint want_idx, const uint first,
                                __global const in_t *x, const ulong x_off, const key_t flip,
                                const uint mode, __global in_t *vals, __global long *pos,
                                const uint vol) {
    __local idx_t base[RADIX];
    TILE_LOCALS
    __local uint s_t;
    const uint lid = get_local_id(0);
    const uint sp = state[0];
    const int move_idx = want_idx || sp;
    const uint shift = pass * CLT_SORT_BITS;
    const ulong row_len = 0, pos_row = 0; /* (DIGIT, EMIT) */
    if (lid == 0) s_t = atomic_inc(&state[2 + pass]);
    for (uint d = lid; d < RADIX; d += CLT_SORT_WG) tfirst[d] = tend[d] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint t = s_t;
    const ulong t0 = (ulong)t * TILE;
    if (clear_next)
        for (uint d = lid; d < RADIX; d += CLT_SORT_WG) look_next[(ulong)t * RADIX + d] = 0u;
    const uint m = (uint)min((ulong)TILE, n - t0);
    for (uint j = lid; j < m; j += CLT_SORT_WG) {
        tk[PADW(j)] = KEY_AT(t0 + j);
        if (move_idx) ti[PADW(j)] = IDX_AT(t0 + j);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    clt_tile_sort(tk, ti, cnt, sums, rake, tfirst, tend, m, move_idx, shift, row_len, 1);
    /* each digit's count in this tile: published (state A), then everything of it before the
     * tile (vol: the words by volatile 32-bit stores and loads, one transaction each on the
     * GPUs it is chosen for; a word carries state and count together, so nothing else needs
     * ordering against it; else by atomics) */
    for (uint d = lid; d < RADIX; d += CLT_SORT_WG) {
        const uint c = tend[d] - tfirst[d];
        uint before = 0u;
        if (t > 0) {
            LOOK_PUT(t, d, LK_A, c);
            before = clt_os_before(look, t, d, vol);
            LOOK_PUT(t, d, LK_P, before + c);
        } else {
            LOOK_PUT(t, d, LK_P, c);
        }
        base[d] = (idx_t)state[OFFS_AT + pass * RADIX + d] + before;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    TILE_WRITE(base)
}

/* rows of up to a tile (CLT_SORT_WG x CLT_SORT_ITEMS) sorted in one launch, a group a row:
 * the row's keys (and indices, where positions are asked for or a value's bits need them)
 * in __local memory, sorted by every CLT_SORT_BITS bits of the key in turn (clt_tile_sort's
 * stable rounds, the lowest bits first), then the values (from their keys, or by index)
 * and the positions written in order: the in-group radix sort beside clt_sort_rows_local's
 * bitonic network. */
__kernel void clt_sort_rows_radix(__global const in_t *x, const ulong x_off, const uint row_len,
                                  const uint key_bits, const key_t flip, __global in_t *out,
                                  __global long *pos, const uint want_out,
                                  const uint want_pos) {
    TILE_LOCALS
    __local uint s_sp;
    const uint lid = get_local_id(0);
    const ulong r0 = (ulong)get_group_id(0) * row_len;
    const __global in_t *src = x + x_off + r0;
    const uint m = min(row_len, (uint)TILE);
    if (lid == 0) s_sp = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint sp = 0u;
    for (uint j = lid; j < m; j += CLT_SORT_WG) {
        const in_t v = src[j];
        sp |= (uint)clt_special(v);
        tk[PADW(j)] = order_key(v, flip);
        ti[PADW(j)] = (idx_t)j;
    }
    if (sp) s_sp = 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint special = s_sp;
    const int move_idx = want_pos || special;
    for (uint shift = 0; shift < key_bits; shift += CLT_SORT_BITS)
        clt_tile_sort(tk, ti, cnt, sums, rake, tfirst, tend, m, move_idx, shift, 0, 0);
    for (uint p = lid; p < m; p += CLT_SORT_WG) {
        const idx_t i = move_idx ? ti[PADW(p)] : (idx_t)0;
        if (want_out) out[r0 + p] = special ? src[i] : value_of(tk[PADW(p)], flip);
        if (want_pos) pos[r0 + p] = (long)i;
    }
}
#endif

/* out[i] = x[idx[i]] (words of N bytes; where want_out), pos[i] = idx[i] (% row_len for rows)
 * as long (where want_pos) */
#define GATHER(N, T)                                                                              \
    __kernel void clt_sort_gather##N(__global const T *x, const ulong x_off,                     \
                                     __global const idx_t *idx,                                   \
                                     const ulong n, const ulong row_len, __global T *out,         \
                                     __global long *pos, const uint want_out,                    \
                                     const uint want_pos) {                                      \
        BLOCK(n)                                                                                  \
        for (ulong i = clt_a + get_local_id(0); i < clt_b; i += get_local_size(0)) {              \
            const ulong s = (ulong)idx[i];                                                        \
            if (want_out) out[i] = x[x_off + s];                                                  \
            if (want_pos) pos[i] = (long)(row_len ? s % row_len : s);                             \
        }                                                                                         \
    }
GATHER(1, uchar)
GATHER(2, ushort)
GATHER(4, uint)
GATHER(8, ulong)
GATHER(16, ulong2)

/* Rows sorted in __local memory, one launch (cltune.sort/argsort along rows of at most what a
 * group's __local memory holds, and small 1-D sorts): group g takes rows [g*R, g*R + R) of
 * row_len each (the last group fewer), each padded to P (a power of two >= row_len) with
 * entries that order after every real one. Every entry is (key, index within the row) — one
 * ulong key << 32 | index for keys of 32 bits or fewer, a ulong2 for 64-bit keys — so no two
 * entries of a row are equal and the order found is the stable sort's. A bitonic network
 * sorts each row's P entries (its stages of distance < P compare within a row: rows never
 * mix), three stages a round trip through __local memory. Then each row's sorted values (from
 * their keys; by index for keys of +-0 and NaN, whose bits the key does not keep) and/or
 * int64 positions within the row. */
/* an entry: its order word K (key << 32 | index for keys of 32 bits or fewer; the key for
 * 64-bit keys, whose index I is then a second word in a second array) */
#if CLT_SORT_TYPE == 1 || CLT_SORT_TYPE == 8 || CLT_SORT_TYPE == 9
#define CLT_SORT_KEY64 1
#define E_LT(ka, ia, kb, ib) ((ka) < (kb) || ((ka) == (kb) && (ia) < (ib)))
#define E_KEY(k) ((key_t)(k))
#define E_IDX(k, i) (i)
#else
#define CLT_SORT_KEY64 0
#define E_LT(ka, ia, kb, ib) ((ka) < (kb))
#define E_KEY(k) ((key_t)((k) >> 32))
#define E_IDX(k, i) ((uint)(k))
#endif
#if CLT_SORT_TYPE == 0 || CLT_SORT_TYPE == 1 || CLT_SORT_TYPE == 10
#define CLT_SORT_FLOAT 1
#else
#define CLT_SORT_FLOAT 0
#endif

/* the value of a row's sorted key k: from the key, or read from the row at its index i for
 * +-0 and NaN (whose bits the key does not keep) */
inline in_t row_value(const key_t k, const key_t flip, const __global in_t *row, const uint i) {
#if CLT_SORT_FLOAT
#if CLT_SORT_TYPE == 0
    const key_t knan = order_key(as_float(0x7FC00000u), flip);
#elif CLT_SORT_TYPE == 1
    const key_t knan = order_key(as_double(0x7FF8000000000000ul), flip);
#else
    const key_t knan = order_key((in_t)0x7E00u, flip);
#endif
    if (k == order_key((in_t)0, flip) || k == knan) return row[i];
#endif
    return value_of(k, flip);
}

__kernel void clt_sort_rows_local(__global const in_t *x, const ulong x_off, const ulong rows,
                                  const uint row_len, const uint log_p, const uint R,
                                  const key_t flip, __global in_t *out,
                                  __global long *pos, const uint want_out, const uint want_pos,
                                  __local ulong *bk) {
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const uint P = 1u << log_p, tot = R * P;
    const ulong r0 = (ulong)get_group_id(0) * R;
    const uint nr = (uint)min((ulong)R, rows - r0);
    const __global in_t *src = x + x_off + r0 * row_len;
#if CLT_SORT_KEY64
    __local uint *bi = (__local uint *)(bk + tot);
#define IDX_AT(p) bi[p]
#define IDX_SET(p, v) (bi[p] = (v))
#else
#define IDX_AT(p) 0u
#define IDX_SET(p, v) ((void)0)
#endif
    for (uint e = lid; e < tot; e += wg) {
        const uint r = e >> log_p, j = e & (P - 1u);
        const int real = r < nr && j < row_len;
        const key_t k = real ? order_key(src[(ulong)r * row_len + j], flip) : ~(key_t)0;
#if CLT_SORT_KEY64
        bk[e] = k;
        bi[e] = real ? j : 0xFFFFFFFFu; /* pads after every real entry */
#else
        bk[e] = real ? ((ulong)k << 32) | j : ~0ul;
#endif
    }
    /* the network, three stages a round trip through __local memory: each work-item takes
     * 8 entries (distances jlo, 2 jlo, 4 jlo apart) into registers and runs the stages of
     * distance 4 jlo, 2 jlo, jlo on them; the last one or two stages of a phase by pairs */
    for (uint k = 2u; k <= P; k <<= 1) {
        for (uint j = k >> 1; j > 0u;) {
            const uint lj = 31u - clz(j);
            uint m = min(3u, lj + 1u); /* stages this round */
            const uint lo_log = lj + 1u - m, jlo = 1u << lo_log;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (m == 3u) {
                for (uint c = lid; c < (tot >> 3); c += wg) {
                    const uint base = ((c >> lo_log) << (lo_log + 3u)) | (c & (jlo - 1u));
                    const int up = ((base & (P - 1u)) & k) == 0u; /* k == P: rows ascending */
                    ulong vk[8];
                    uint vi[8];
#pragma unroll
                    for (uint t = 0; t < 8u; ++t) {
                        vk[t] = bk[base + t * jlo];
                        vi[t] = IDX_AT(base + t * jlo);
                    }
#pragma unroll
                    for (int st = 2; st >= 0; --st) {
#pragma unroll
                        for (uint t = 0; t < 8u; ++t) {
                            const uint u = t | (1u << st);
                            if (!(t & (1u << st)) && E_LT(vk[u], vi[u], vk[t], vi[t]) == up) {
                                const ulong wk = vk[t];
                                const uint wi = vi[t];
                                vk[t] = vk[u];
                                vi[t] = vi[u];
                                vk[u] = wk;
                                vi[u] = wi;
                            }
                        }
                    }
#pragma unroll
                    for (uint t = 0; t < 8u; ++t) {
                        bk[base + t * jlo] = vk[t];
                        IDX_SET(base + t * jlo, vi[t]);
                    }
                }
            } else {
                for (uint c = lid; c < (tot >> 1); c += wg) {
                    const uint i = ((c & ~(j - 1u)) << 1) | (c & (j - 1u)); /* bit j clear */
                    const uint l = i | j;
                    const int up = ((i & (P - 1u)) & k) == 0u;
                    const ulong a = bk[i], b = bk[l];
                    const uint ia = IDX_AT(i), ib = IDX_AT(l);
                    if (E_LT(b, ib, a, ia) == up) {
                        bk[i] = b;
                        bk[l] = a;
                        IDX_SET(i, ib);
                        IDX_SET(l, ia);
                    }
                }
                m = 1u;
            }
            j >>= m;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < tot; e += wg) {
        const uint r = e >> log_p, j = e & (P - 1u);
        if (r < nr && j < row_len) {
            const key_t k = E_KEY(bk[e]);
            const uint i = E_IDX(bk[e], IDX_AT(e));
            const ulong at = (r0 + r) * row_len + j;
            if (want_out) out[at] = row_value(k, flip, src + (ulong)r * row_len, i);
            if (want_pos) pos[at] = (long)i;
        }
    }
#undef IDX_AT
#undef IDX_SET
}

/* Rows sorted by CPUs (clt_sort_rows_vec): each work-item sorts 8 rows at once, row r in lane
 * r of ulong8 vectors (entries as clt_sort_rows_local's: key << 32 | index, or for 64-bit keys
 * the key with its index in a uint8 beside it), the same bitonic network three stages a round
 * trip, each compare-exchange one vector min/max (or masked selects for 64-bit keys) for all
 * 8 rows; no barriers (a work-item's rows are its own). `scratch` holds each work-item's
 * P entries x 8 lanes (and 8 indices for 64-bit keys). */
#if CLT_SORT_KEY64
/* (b < a) of (key, index) lanes, as a long8 mask */
#define V_LT(kb, ib, ka, ia) ((kb) < (ka) | ((kb) == (ka) & convert_long8((ib) < (ia))))
#define V_CX(ka, ia, kb, ib, up)                                                               \
    do {                                                                                       \
        long8 sw_;                                                                             \
        if (up) sw_ = V_LT(kb, ib, ka, ia);                                                    \
        else sw_ = V_LT(ka, ia, kb, ib);                                                       \
        const ulong8 k0_ = select(ka, kb, sw_), k1_ = select(kb, ka, sw_);                     \
        const int8 swi_ = convert_int8(sw_);                                                   \
        const uint8 i0_ = select(ia, ib, swi_), i1_ = select(ib, ia, swi_);                    \
        ka = k0_; kb = k1_; ia = i0_; ib = i1_;                                                \
    } while (0)
#else
#define V_CX(ka, ia, kb, ib, up)                                                               \
    do {                                                                                       \
        const ulong8 lo_ = min(ka, kb), hi_ = max(ka, kb);                                     \
        if (up) {                                                                              \
            ka = lo_;                                                                          \
            kb = hi_;                                                                          \
        } else {                                                                               \
            ka = hi_;                                                                          \
            kb = lo_;                                                                          \
        }                                                                                      \
    } while (0)
#endif

__kernel void clt_sort_rows_vec(__global const in_t *x, const ulong x_off, const ulong rows,
                                const uint row_len, const uint log_p, const key_t flip,
                                __global in_t *out, __global long *pos, const uint want_out,
                                const uint want_pos, __local ulong8 *scratch) {
    const uint P = 1u << log_p;
    const ulong r0 = (ulong)get_global_id(0) * 8u;
    if (r0 >= rows) return;
    const uint nr = (uint)min((ulong)8, rows - r0);
    __local ulong8 *bk = scratch + (ulong)get_local_id(0) * P;
    __local ulong *bs = (__local ulong *)bk; /* entry (j, lane r) at bs[j * 8 + r] */
    const __global in_t *src = x + x_off + r0 * row_len;
#if CLT_SORT_KEY64
    __local uint8 *bi = (__local uint8 *)(scratch + (ulong)get_local_size(0) * P) +
                        (ulong)get_local_id(0) * P;
    __local uint *bis = (__local uint *)bi;
#endif
    for (uint r = 0; r < 8u; ++r) {
        for (uint j = 0; j < P; ++j) {
            const int real = r < nr && j < row_len;
            const key_t k = real ? order_key(src[(ulong)r * row_len + j], flip) : ~(key_t)0;
#if CLT_SORT_KEY64
            bs[j * 8u + r] = k;
            bis[j * 8u + r] = real ? j : 0xFFFFFFFFu;
#else
            bs[j * 8u + r] = real ? ((ulong)k << 32) | j : ~0ul;
#endif
        }
    }
    for (uint k = 2u; k <= P; k <<= 1) {
        for (uint j = k >> 1; j > 0u;) {
            const uint lj = 31u - clz(j);
            const uint m = min(3u, lj + 1u);
            const uint lo_log = lj + 1u - m, jlo = 1u << lo_log;
            if (m == 3u) {
                for (uint c = 0; c < (P >> 3); ++c) {
                    const uint base = ((c >> lo_log) << (lo_log + 3u)) | (c & (jlo - 1u));
                    const int up = (base & k) == 0u || k == P;
                    ulong8 v[8];
#if CLT_SORT_KEY64
                    uint8 w[8];
#else
                    ulong8 w[8]; /* unused */
#endif
                    for (uint t = 0; t < 8u; ++t) {
                        v[t] = bk[base + t * jlo];
#if CLT_SORT_KEY64
                        w[t] = bi[base + t * jlo];
#endif
                    }
#define CX(a, b) V_CX(v[a], w[a], v[b], w[b], up)
                    CX(0, 4); CX(1, 5); CX(2, 6); CX(3, 7);
                    CX(0, 2); CX(1, 3); CX(4, 6); CX(5, 7);
                    CX(0, 1); CX(2, 3); CX(4, 5); CX(6, 7);
#undef CX
                    for (uint t = 0; t < 8u; ++t) {
                        bk[base + t * jlo] = v[t];
#if CLT_SORT_KEY64
                        bi[base + t * jlo] = w[t];
#endif
                    }
                }
                j >>= 3;
            } else {
                for (uint c = 0; c < (P >> 1); ++c) {
                    const uint i = ((c & ~(j - 1u)) << 1) | (c & (j - 1u));
                    const uint l = i | j;
                    const int up = (i & k) == 0u || k == P;
                    ulong8 a = bk[i], b = bk[l];
#if CLT_SORT_KEY64
                    uint8 ia = bi[i], ib = bi[l];
#else
                    ulong8 ia = a, ib = b; /* unused */
#endif
                    V_CX(a, ia, b, ib, up);
                    bk[i] = a;
                    bk[l] = b;
#if CLT_SORT_KEY64
                    bi[i] = ia;
                    bi[l] = ib;
#endif
                }
                j >>= 1;
            }
        }
    }
    for (uint r = 0; r < nr; ++r) {
        const ulong row = (r0 + r) * row_len;
        for (uint j = 0; j < row_len; ++j) {
            const ulong e = bs[j * 8u + r];
#if CLT_SORT_KEY64
            const key_t k = (key_t)e;
            const uint i = bis[j * 8u + r];
#else
            const key_t k = (key_t)(e >> 32);
            const uint i = (uint)e;
#endif
            if (want_out) out[row + j] = row_value(k, flip, src + (ulong)r * row_len, i);
            if (want_pos) pos[row + j] = (long)i;
        }
    }
}

/* A batched transpose of P x Q, words of N bytes: out[(a Q + q) P + p] = in[ioff + (a P + p) Q
 * + q] (a sort along an axis that is not the last: the axis made the rows', and the answer
 * put back) */
#define CLT_SORT_TRANSPOSE(N, T)                                                                  \
    __kernel void clt_sort_transpose##N(__global const T *in, const ulong ioff, __global T *out, \
                                        const ulong P, const ulong Q, const ulong total) {       \
        const ulong pq = P * Q;                                                                   \
        for (ulong g = get_global_id(0); g < total; g += get_global_size(0)) {                    \
            const ulong a = g / pq, r = g - a * pq, q = r / P, p = r - q * P;                     \
            out[g] = in[ioff + (a * P + p) * Q + q];                                              \
        }                                                                                         \
    }
CLT_SORT_TRANSPOSE(1, uchar)
CLT_SORT_TRANSPOSE(2, ushort)
CLT_SORT_TRANSPOSE(4, uint)
CLT_SORT_TRANSPOSE(8, ulong)

/* out[i] = x[x_off + pos[i]] by int64 positions (the one-launch sorts' and RadixSort's
 * gathers): words of N bytes, or W bytes a value one byte at a time (any other size) */
#define CLT_SORT_TAKE(N, T)                                                                       \
    __kernel void clt_sort_take##N(__global const T *x, const ulong x_off,                        \
                                   __global const long *pos, const ulong n, __global T *out) {    \
        for (ulong i = get_global_id(0); i < n; i += get_global_size(0))                          \
            out[i] = x[x_off + (ulong)pos[i]];                                                    \
    }
CLT_SORT_TAKE(1, uchar)
CLT_SORT_TAKE(2, ushort)
CLT_SORT_TAKE(4, uint)
CLT_SORT_TAKE(8, ulong)
CLT_SORT_TAKE(16, ulong2)
__kernel void clt_sort_take_bytes(__global const uchar *x, const ulong x_off,
                                  __global const long *pos, const ulong n, const ulong W,
                                  __global uchar *out) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        const ulong s = x_off + (ulong)pos[i] * W;
        for (ulong b = 0; b < W; ++b) out[i * W + b] = x[s + b];
    }
}
