/* cltune: any/all of a whole contiguous array on a CPU device, in vector registers, stopping at
 * the first element that decides the answer (served by cltune.stats.anyvec on devices of type
 * CPU).
 *
 * Every option has a default below, so the file compiles on its own; values reach it only as
 * -D integers made by cltune.stats.anyvec from the dtype and the device's vector width (house
 * rule 2).
 *
 *   clt_anyvec_chunks  work-item g looks for a deciding element in its own contiguous chunk
 *                      [g * chunk, (g + 1) * chunk) of the n elements: a nonzero one for any
 *                      (`zero` = 0), a zero one for all (`zero` = 1). It compares CLT_ZV_U
 *                      vectors of CLT_ZV_W elements (vloadW) at a time, ORs their masks and
 *                      stops at the first group that holds one; then the tail (fewer than W
 *                      elements) one by one. With `root` (one chunk: the host skips the
 *                      finish) it writes the answer (found != zero) to out[outoff], else
 *                      found to part[partoff + g] (0 for an empty chunk).
 *   clt_anyvec_finish  one work-item ORs the `parts` flags and writes (found != zero).
 * The kernel boundary orders the flags: no atomics, no inter-group race.
 *
 * numpy's truth of an element is `x != 0`: a NaN is nonzero (true), -0.0 is zero; the IEEE
 * compares below say the same (no fast-math options). An empty array: any false, all true.
 */

#ifndef CLT_ZV_TYPE
#define CLT_ZV_TYPE 0 /* element: 0 float, 1 double, 2 char, 3 uchar, 4 short, 5 ushort,
                         6 int, 7 uint, 8 long, 9 ulong */
#endif
#ifndef CLT_ZV_W
#define CLT_ZV_W 16 /* lanes of a vector: 2, 4, 8 or 16 */
#endif
#ifndef CLT_ZV_U
#define CLT_ZV_U 4 /* vectors whose masks are ORed between two tests: 1, 2 or 4 */
#endif

/* ZV_T the element, ZV_M the mask lane a compare of two ZV_T vectors gives */
#if CLT_ZV_TYPE == 0
#define ZV_T float
#define ZV_M int
#elif CLT_ZV_TYPE == 1
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ZV_T double
#define ZV_M long
#elif CLT_ZV_TYPE == 2
#define ZV_T char
#define ZV_M char
#elif CLT_ZV_TYPE == 3
#define ZV_T uchar
#define ZV_M char
#elif CLT_ZV_TYPE == 4
#define ZV_T short
#define ZV_M short
#elif CLT_ZV_TYPE == 5
#define ZV_T ushort
#define ZV_M short
#elif CLT_ZV_TYPE == 6
#define ZV_T int
#define ZV_M int
#elif CLT_ZV_TYPE == 7
#define ZV_T uint
#define ZV_M int
#elif CLT_ZV_TYPE == 8
#define ZV_T long
#define ZV_M long
#elif CLT_ZV_TYPE == 9
#define ZV_T ulong
#define ZV_M long
#else
#error "CLT_ZV_TYPE must be 0..9"
#endif
#if CLT_ZV_W != 2 && CLT_ZV_W != 4 && CLT_ZV_W != 8 && CLT_ZV_W != 16
#error "CLT_ZV_W must be 2, 4, 8 or 16"
#endif
#if CLT_ZV_U != 1 && CLT_ZV_U != 2 && CLT_ZV_U != 4
#error "CLT_ZV_U must be 1, 2 or 4"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define ZV_TV CAT(ZV_T, CLT_ZV_W)
#define ZV_MV CAT(ZV_M, CLT_ZV_W)

/* the mask of block b (W elements from p) that `CMP` the zero vector (!= for any, == for all) */
#define MASK(CMP, b) (CAT(vload, CLT_ZV_W)(b, p) CMP (ZV_TV)(0))

#if CLT_ZV_U == 4
#define GROUP(CMP, b) (MASK(CMP, b) | MASK(CMP, b + 1) | MASK(CMP, b + 2) | MASK(CMP, b + 3))
#elif CLT_ZV_U == 2
#define GROUP(CMP, b) (MASK(CMP, b) | MASK(CMP, b + 1))
#else
#define GROUP(CMP, b) MASK(CMP, b)
#endif

/* whether the nb blocks from p hold an element that `CMP` 0: groups of U blocks (their masks
 * ORed, one test a group), then blocks one by one */
#define SCAN(CMP)                                                                              \
    {                                                                                          \
        long b = 0;                                                                            \
        for (; b <= nb - CLT_ZV_U && !found; b += CLT_ZV_U) {                                  \
            const ZV_MV m = GROUP(CMP, b);                                                     \
            found = any(m);                                                                    \
        }                                                                                      \
        for (; b < nb && !found; ++b) {                                                        \
            const ZV_MV m = MASK(CMP, b);                                                      \
            found = any(m);                                                                    \
        }                                                                                      \
    }

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_anyvec_chunks(__global const ZV_T *x, const long xoff, const long n, const long chunk,
                  __global uchar *part, const long partoff, __global uchar *out,
                  const long outoff, const int root, const int zero) {
    const long g = get_global_id(0);
    const long begin = g * chunk;
    const long len = min(chunk, n - begin); /* <= 0: a chunk past the end */
    __global const ZV_T *p = x + xoff + begin;
    const long nb = len > 0 ? len / CLT_ZV_W : 0;
    int found = 0;
    if (zero)
        SCAN(==)
    else
        SCAN(!=)
    for (long i = nb * CLT_ZV_W; i < len && !found; ++i)
        found = zero ? (p[i] == (ZV_T)0) : (p[i] != (ZV_T)0);
    if (root)
        out[outoff] = (uchar)(found != zero);
    else
        part[partoff + g] = (uchar)found;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
clt_anyvec_finish(__global const uchar *part, const long parts, __global uchar *out,
                  const long outoff, const int zero) {
    int found = 0;
    for (long g = 0; g < parts; ++g)
        found |= part[g];
    out[outoff] = (uchar)(found != zero);
}
