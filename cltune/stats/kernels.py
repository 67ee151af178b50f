"""The ReductionKernels behind cltune's statistics and arg-reductions (`kernel(op, ctx,
dtype)`, cached per context): the accumulator types, expressions, host references and error
bounds of each (the numpy semantics they keep are described in cltune.stats.api)."""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
from pyopencl.tools import dtype_to_ctype, get_or_register_dtype

from cltune.families.expr.api import ReductionKernel
from cltune.opencl.caches import ContextCache

OPS = ("argmin", "argmax", "norm1", "norm2", "norm_inf", "mean", "var", "std",
       "count_nonzero", "any", "all")
DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int16,
                                     np.uint16, np.int32, np.uint32, np.int64, np.uint64))

_kernels: ContextCache[ReductionKernel] = ContextCache()


def _fp64(ctx: cl.Context) -> bool:
    return builtins.all(bool(d.double_fp_config) for d in ctx.devices)


def _limit(dt: np.dtype, top: bool) -> str:
    if dt.kind == "f":
        return "INFINITY" if top else "-INFINITY"
    v = int(np.iinfo(dt).max if top else np.iinfo(dt).min)
    c = dtype_to_ctype(dt)
    return f"(({c})({v + 1}L - 1L))" if v < 0 else f"(({c}){v}UL)"


def _quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*a: Any) -> Any:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*a)
    return wrapped


def arg_struct(dt: np.dtype, largest: bool) -> tuple[np.dtype, str, str, str]:
    """The accumulator of argmax/argmin over dt: its numpy dtype, the C prefix of its helpers
    (`<st>_make(v, i)`, `<st>_pick(a, b)`: the extreme value, the smaller index on ties, a NaN
    winning as in numpy), the preamble defining them and the neutral value."""
    c = dtype_to_ctype(dt)
    ty = f"clt_arg_{c.replace(' ', '_')}_t"  # one C name per numpy dtype (pyopencl's registry)
    acc = np.dtype([("idx", np.int64), ("val", dt)], align=True)
    get_or_register_dtype(ty, acc)
    st = f"{ty}_{'max' if largest else 'min'}"
    cmp = ">" if largest else "<"
    nan = "const int an = a.val != a.val, bn = b.val != b.val;\n" \
          "  if (an || bn) return (an && bn) ? (a.idx <= b.idx ? a : b) : (an ? a : b);" \
        if dt.kind == "f" else ""
    pre = f"""
#define CLT_BLOCK 0 /* exact: accumulators need no restarts (kernels/expr.cl) */
typedef struct {{ long idx; {c} val; }} {ty};
inline {ty} {st}_make({c} v, long i) {{ {ty} r; r.idx = i; r.val = v; return r; }}
inline {ty} {st}_pick({ty} a, {ty} b) {{
  {nan}
  if (a.val {cmp} b.val) return a;
  if (b.val {cmp} a.val) return b;
  return a.idx <= b.idx ? a : b;
}}
"""
    return acc, st, pre, f"{st}_make({_limit(dt, not largest)}, LONG_MAX)"


def _arg_kernel(ctx: cl.Context, dt: np.dtype, largest: bool) -> ReductionKernel:
    c = dtype_to_ctype(dt)
    cmp = ">" if largest else "<"
    acc, st, pre, neutral = arg_struct(dt, largest)
    ty = st.rsplit("_", 1)[0]
    # per element, a compare (elements reach an accumulator in increasing index order, so a
    # strict compare keeps the first occurrence); the struct pick only combines accumulators
    take = "v != v && a.val == a.val" if dt.kind == "f" else "0"
    pre += f"""
inline {ty} {st}_fold({ty} a, {c} v, long i) {{
  if (a.idx == LONG_MAX || v {cmp} a.val || ({take})) {{ a.val = v; a.idx = i; }}
  return a;
}}
"""

    def ref(h: list, lo: int, hi: int) -> Any:
        x = h[0][lo:hi]
        return np.int64((np.argmax(x) if largest else np.argmin(x)) + lo)

    knl = ReductionKernel(ctx, acc, neutral=neutral,
                          reduce_expr=f"{st}_pick(a, b)", map_expr=f"{st}_make(x[i], i)",
                          arguments=f"__global const {c} *x", preamble=pre,
                          finish_expr="CLT_POS(a.idx)", dtype_result=np.int64, name=f"arg_{st}",
                          fold_expr=f"{st}_fold(a, x[i], i)",
                          reference=ref)
    return knl


def _result_dtype(dt: np.dtype) -> np.dtype:
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _make(ctx: cl.Context, op: str, dt: np.dtype) -> ReductionKernel:
    c = dtype_to_ctype(dt)
    args = f"__global const {c} *x"
    res = _result_dtype(dt)
    fp64 = _fp64(ctx)
    if res == np.float64 and not fp64:
        raise ValueError(f"{op} of {dt} needs a float64 result: the device has no fp64")
    acc = "double" if fp64 else dtype_to_ctype(res)
    acc_dt = np.dtype(np.float64) if fp64 else res

    def r64(f: Callable[[np.ndarray], Any]) -> Callable[..., Any]:
        return lambda h, lo, hi: res.type(f(h[0][lo:hi].astype(np.float64)))

    if op in ("argmax", "argmin"):
        return _arg_kernel(ctx, dt, op == "argmax")
    if op == "mean":
        knl = ReductionKernel(ctx, acc_dt, "0", "a+b", f"({acc})x[i]", args,
                              finish_expr=f"a / ({acc})n", dtype_result=res, name="mean",
                              reference=_quiet(r64(np.mean)))
        return knl
    if op == "norm1":
        knl = ReductionKernel(ctx, acc_dt, "0", "a+b", f"fabs(({acc})x[i])", args,
                              dtype_result=res, name="norm1",
                              reference=r64(lambda x: np.abs(x).sum()))
        return knl
    if op == "norm_inf":
        r = dtype_to_ctype(res)
        knl = ReductionKernel(ctx, res, "0", "(a != a || a > b) ? a : b", f"fabs(({r})x[i])",
                              args, dtype_result=res, name="norm_inf",
                              reference=r64(lambda x: np.abs(x).max()))
        return knl
    if op == "norm2":
        return _norm2(ctx, dt, res, fp64)
    if op in ("var", "std"):
        return _var(ctx, dt, res, acc, acc_dt, op == "std")
    if op == "count_nonzero":
        knl = ReductionKernel(ctx, np.int64, "0", "a+b", "(x[i] != 0) ? 1 : 0", args,
                              name="count_nonzero",
                              reference=lambda h, lo, hi: np.int64(np.count_nonzero(h[0][lo:hi])))
        return knl
    if op in ("any", "all"):
        red, neutral = ("a | b", "0") if op == "any" else ("a & b", "1")
        f = np.any if op == "any" else np.all
        knl = ReductionKernel(ctx, np.uint8, neutral, red, "(x[i] != 0) ? 1 : 0", args,
                              dtype_result=np.bool_, name=op,
                              reference=lambda h, lo, hi: np.bool_(f(h[0][lo:hi])))
        return knl
    raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")


def _norm2(ctx: cl.Context, dt: np.dtype, res: np.dtype, fp64: bool) -> ReductionKernel:
    args = f"__global const {dtype_to_ctype(dt)} *x"
    ref = _quiet(lambda h, lo, hi: res.type(np.linalg.norm(h[0][lo:hi].astype(np.float64))))
    if fp64 and dt != np.float64:  # squares of float32 / integers cannot overflow a double
        knl = ReductionKernel(ctx, np.float64, "0", "a+b", "(double)x[i] * (double)x[i]", args,
                              finish_expr="sqrt(a)", dtype_result=res, name="norm2",
                              reference=ref)
        return knl
    t = dtype_to_ctype(res)
    st = f"clt_nrm2_{t}_t"
    get_or_register_dtype(st, np.dtype([("scale", res), ("ssq", res)], align=True))
    pre = f"""
typedef struct {{ {t} scale; {t} ssq; }} {st};
inline {st} {st}_make({t} v) {{ {st} r; r.scale = fabs(v); r.ssq = v != 0 ? 1 : 0; return r; }}
inline {st} {st}_comb({st} a, {st} b) {{
  if (a.scale != a.scale || b.scale != b.scale) {{ a.scale = NAN; return a; }}
  if (a.scale < b.scale) {{ {st} t_ = a; a = b; b = t_; }}
  if (a.scale == 0 || isinf(a.scale)) {{ a.ssq = a.scale == 0 ? 0 : 1; return a; }}
  const {t} q = b.scale / a.scale;
  a.ssq += b.ssq * q * q;
  return a;
}}
"""
    knl = ReductionKernel(ctx, np.dtype([("scale", res), ("ssq", res)], align=True),
                          f"{st}_make(0)", f"{st}_comb(a, b)", f"{st}_make(({t})x[i])", args,
                          preamble=pre, finish_expr="a.scale * sqrt(a.ssq)", dtype_result=res,
                          name="norm2",
                          reference=ref)
    return knl


#: how far (in variances) a merged var accumulator's shift may be from its mean before it is
#: recentred (the bound in docs/expressions.md)
SHIFT_K = 16


def _var(ctx: cl.Context, dt: np.dtype, res: np.dtype, acc: str, acc_dt: np.dtype,
         root: bool) -> ReductionKernel:
    """One pass. An accumulator holds (n, c, s1, s2): s1 and s2 are the sums of d and d^2
    over its elements, d = x - c, c its first element (the shift); its mean is c + s1/n and
    its sum of squared deviations M2 = s2 - s1^2/n. Folding an element is two additions and a
    multiply-add, no division; accumulators are combined with Chan, Golub and LeVeque's
    pairwise formula (the result has c = mean, s1 = 0, s2 = M2)."""
    st = f"clt_varacc_{acc}_t"
    get_or_register_dtype(st, np.dtype([("n", acc_dt), ("c", acc_dt), ("s1", acc_dt),
                                        ("s2", acc_dt)], align=True))
    pre = f"""
typedef struct {{ {acc} n; {acc} c; {acc} s1; {acc} s2; }} {st};
inline {st} {st}_zero(void) {{ {st} r; r.n = 0; r.c = 0; r.s1 = 0; r.s2 = 0; return r; }}
inline {st} {st}_fold({st} a, {acc} v) {{
  if (a.n == 0) a.c = v;
  const {acc} d = v - a.c;
  a.s1 += d;
  a.s2 = fma(d, d, a.s2);
  a.n += 1;
  return a;
}}
inline {acc} {st}_mean({st} a) {{ return a.c + a.s1 / a.n; }}
inline {acc} {st}_m2({st} a) {{ return fmax(a.s2 - a.s1 * (a.s1 / a.n), ({acc})0); }}
/* Chan, Golub and LeVeque's pairwise combination of (n, mean, M2) */
inline {st} {st}_chan({st} a, {st} b) {{
  const {acc} ma = {st}_mean(a), mb = {st}_mean(b);
  {st} r;
  r.n = a.n + b.n;
  const {acc} d = mb - ma, f = b.n / r.n;
  r.c = ma + d * f;
  r.s1 = 0;
  r.s2 = {st}_m2(a) + {st}_m2(b) + d * d * a.n * f;
  return r;
}}
/* b's sums re-shifted to a's shift (d' = d + e, e = b.c - a.c): no division, where Chan's
 * formula divides five times (on the H200 a var's finish over 1056 partials took 14.6 us, a
 * sum's 4.4); kept while the merged shift c and mean m keep (c - m)^2 <= K v, K = {SHIFT_K}
 * (times n^2: s1^2 <= K (n s2 - s1^2)), so M2 = s2 - s1^2/n loses at most a factor 1 + K of
 * accuracy; else recentred by Chan's formula (c = the mean) */
inline {st} {st}_comb({st} a, {st} b) {{
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const {acc} e = b.c - a.c;
  {st} r;
  r.n = a.n + b.n;
  r.c = a.c;
  r.s1 = a.s1 + fma(b.n, e, b.s1);
  r.s2 = a.s2 + fma(e, fma(b.n, e, 2 * b.s1), b.s2);
  if (r.s1 * r.s1 <= ({acc}){SHIFT_K} * fma(r.n, r.s2, -r.s1 * r.s1)) return r;
  return {st}_chan(a, b);
}}
"""
    f = np.std if root else np.var
    mean = f"{st}_mean(a)"
    # an infinite element makes the mean inf or NaN, and numpy's var NaN
    var = (f"(isfinite({mean}) ? {st}_m2(a) / fmax(a.n - ({acc})ddof, ({acc})0) "
           f": ({acc})NAN)")
    knl = ReductionKernel(ctx, np.dtype([("n", acc_dt), ("c", acc_dt), ("s1", acc_dt),
                                         ("s2", acc_dt)], align=True),
                          f"{st}_zero()", f"{st}_comb(a, b)",
                          f"{st}_fold({st}_zero(), ({acc})x[i])",
                          f"__global const {dtype_to_ctype(dt)} *x, {acc} ddof",
                          preamble=pre, finish_expr=f"sqrt({var})" if root else var,
                          dtype_result=res, name="std" if root else "var",
                          fold_expr=f"{st}_fold(a, ({acc})x[i])",
                          reference=_quiet(lambda h, lo, hi: res.type(
                              f(h[0][lo:hi].astype(np.float64), ddof=h[1]))))
    return knl


def kernel(op: str, ctx: cl.Context, dtype: Any) -> ReductionKernel:
    """The (cached, per context) ReductionKernel of `op` over `dtype`."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    dt = np.dtype(dtype)
    if dt == np.bool_:
        dt = np.dtype(np.uint8)
    if dt not in DTYPES:
        raise TypeError(f"{op}: dtype {dt} is not supported (one of "
                        f"{', '.join(d.name for d in DTYPES)}, or bool)")
    key = (op, dt.str)
    return _kernels.get(ctx, key, lambda: _make(ctx, op, dt))
