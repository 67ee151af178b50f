"""Host references, error bounds and the validation a config must pass before it is timed.

Error bound (floating `sum`/`dot`). Every element reaches the result through a chain of at most
`d` rounded additions, where `d` follows from the launch plan: the serial steps of one
accumulator (`chunk / block` plus the tail), the in-register combine (`log2(items * vec)`), the
in-group tree (`log2(tile)`), and the second pass (`ceil(m / wg) + log2(wg)`). By the standard
result for summation in any order with that depth (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., eq. 4.4), with unit roundoff `u` of the accumulator,

    |computed - exact| <= gamma_d * sum(|x_i|),   gamma_d = d*u / (1 - d*u),

plus half an ulp of the output type when the accumulator is wider than the output. `dot` adds one
rounding per product (`d + 1`, over `sum(|x_i*y_i|)`). With the `kahan` accumulator the serial
chains contribute `2u + 2 L u^2` (Higham eq. 4.9, L = serial steps) and only the tree depth
counts as plain additions. `prod` is bounded relatively by `gamma_(n+1) * |exact|`: each of its
n-1 roundings scales the whole product, in any order.
Integer ops and `min`/`max` are exact.

Floating `sum`/`prod`/`dot` are also held to numpy: the error may be at most numpy's own
answer's in the same dtype (`numpy_answer`) plus an ulp of the result and the accumulation's
own error, so that no config less accurate than numpy is accepted (float16/float32 accumulate
in double where the device has fp64, else compensated: `OpSpec.accumulation`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pyopencl as cl

from cltune.core.inputs import Check, make_input
from cltune.core.ops import OpSpec
from cltune.families.reduce.kernel import acc_mode
from cltune.families.reduce.launch import Launcher

SMALL_SIZES = (1, 7, 1023, 1025)
KNOWN_N = 1024
_U = {"float": 2.0**-24, "double": 2.0**-53, "half": 2.0**-11}


@lru_cache(maxsize=16)
def _reference_cached(spec: OpSpec, n: int) -> tuple[object, float]:
    return reference(spec, make_input(spec, n))


def reference(spec: OpSpec, xs: list[np.ndarray]) -> tuple[object, float]:
    """(exact-or-float64 result in numpy's result dtype semantics, scale for the error bound)."""
    x = xs[0]
    if not spec.is_float:
        with np.errstate(over="ignore"):
            if spec.op == "dot":
                return np.dot(x, xs[1]), 0.0
            fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[spec.op]
            return fn(x), 0.0
    x64 = x.astype(np.float64)
    if spec.op == "sum":
        r = math.fsum(x64) if x.size <= 1 << 22 else float(np.sum(x64))
        return _saturate(spec, r), float(np.abs(x64).sum())
    if spec.op == "dot":
        p = x64 * xs[1].astype(np.float64)
        return _saturate(spec, float(np.sum(p))), float(np.abs(p).sum())
    if spec.op == "prod":
        r = float(np.prod(x64))
        return _saturate(spec, r), abs(r)
    return (np.min(x) if spec.op == "min" else np.max(x)), 0.0


def _saturate(spec: OpSpec, r: float) -> float:
    """A result beyond the largest finite value of the result dtype is +-inf there (numpy)."""
    big = float(np.finfo(spec.result_dtype).max)
    return math.copysign(math.inf, r) if abs(r) > big * (1 + float(np.finfo(spec.result_dtype)
                                                                 .eps) / 2) else r


def numpy_answer(spec: OpSpec, xs: list[np.ndarray]) -> float:
    """numpy's own answer in the input's dtype (floating sum/prod/dot)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if spec.op == "dot":
            return float(np.dot(xs[0], xs[1]))
        return float(np.prod(xs[0]) if spec.op == "prod" else np.sum(xs[0]))


def numpy_bound(launcher: Launcher, xs: list[np.ndarray], want: float, scale: float) -> float:
    """The error bound of `error_bound`, tightened to numpy's own error on `xs` plus an ulp
    of the result at |want| plus the accumulation's error (sound for every config: a double
    accumulator's result is within an ulp of the nearest value, which no answer in the
    output dtype beats)."""
    depth_bound = error_bound(launcher, xs[0].size, scale)
    spec = launcher.spec
    if not (spec.is_float and spec.is_arith) or not math.isfinite(want):
        return depth_bound
    np_err = abs(numpy_answer(spec, xs) - want)
    if not math.isfinite(np_err):
        return depth_bound
    with np.errstate(over="ignore"):
        ulp = float(np.spacing(spec.np_dtype.type(abs(want))))
    if not math.isfinite(ulp):
        return depth_bound
    acc_err = error_bound(launcher, xs[0].size, scale, rounding=False)
    return min(depth_bound, np_err + ulp + acc_err)


def error_bound(launcher: Launcher, n: int, scale: float, rounding: bool = True) -> float:
    """Absolute error bound for a floating sum/dot/prod of n elements under this launcher
    (without the result's final rounding unless `rounding`)."""
    spec, cfg = launcher.spec, launcher.cfg
    mode = acc_mode(spec, cfg, launcher.info.fp64)
    acc = spec.acc_cl_type(mode == "wide")
    u = _U[acc]
    plan = launcher.plan(n)
    m = plan.groups * launcher.built().partials_per_group  # partials the finish combines
    serial = plan.chunk // plan.block + cfg.items * cfg.vec
    tree = (math.ceil(math.log2(cfg.items * cfg.vec))
            + math.ceil(math.log2(max(cfg.tile, cfg.wg)))
            + math.ceil(m / cfg.wg) + math.ceil(math.log2(cfg.wg)) + 4)
    d = serial + tree
    if spec.op == "prod":
        d = n + 1  # every one of the n-1 roundings scales the whole product
    if spec.op == "dot":
        d += 1
    gamma = d * u / (1 - d * u) if d * u < 0.5 else 1.0
    if mode == "kahan" and spec.op in ("sum", "dot"):
        # compensated serial chains: (2u + O(L u^2)) (Higham, eq. 4.9), then the plain tree
        t = tree + (1 if spec.op == "dot" else 0)
        gamma = 2 * u + 2 * serial * u * u + (t * u / (1 - t * u))
    elif mode == "kahan":  # compensated products (Graillat): u + O(n^2 u^2), the plain tree
        gamma = min(gamma, 2 * u + 2 * (d * u) ** 2 + (tree * u / (1 - tree * u)))
    out_u = _U[{"float16": "half", "float32": "float"}.get(spec.dtype, "double")]
    return gamma * scale + (out_u * scale if rounding else 0.0) + 1e-300


def run_once(launcher: Launcher, queue: cl.CommandQueue, xs: list[np.ndarray]) -> object:
    """Reduce host arrays on the device with an output buffer poisoned beforehand."""
    ctx, spec = launcher.ctx, launcher.spec
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in xs]
    rdt = spec.result_dtype
    poison = np.full(1, 0xA5, np.uint8).repeat(rdt.itemsize)
    out = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=poison)
    n = xs[0].size
    y = bufs[1] if len(bufs) > 1 else None
    evs = launcher.enqueue(queue, bufs[0], 0, n, out, y=y)
    res = np.empty(1, rdt)
    cl.enqueue_copy(queue, res, out, wait_for=evs)
    queue.finish()
    return res[0]


def compare(spec: OpSpec, got: object, want: object, bound: float) -> str:
    """'' when `got` matches `want` within `bound` (exactly for integers/min/max), else why."""
    g, w = np.asarray(got), np.asarray(want)
    if not spec.is_float or spec.op in ("min", "max"):
        if spec.is_float and np.isnan(w):
            return "" if np.isnan(g) else f"got {g!r}, expected NaN"
        return "" if g == w.astype(g.dtype) else f"got {g!r}, expected {w!r}"
    gf, wf = float(g), float(w)
    if math.isnan(wf) or math.isinf(wf):
        same = (math.isnan(gf) and math.isnan(wf)) or gf == wf
        return "" if same else f"got {gf}, expected {wf}"
    rdt = spec.result_dtype
    if math.isinf(gf) and np.issubdtype(rdt, np.floating) and (gf > 0) == (wf > 0):
        fin = np.finfo(rdt)  # a reference that rounds to inf in the output dtype
        top = float(fin.max)  # the least that rounds to inf: half an ulp above the most
        if abs(wf) + bound >= top + (top - float(np.nextafter(fin.max, rdt.type(0)))) / 2:
            return ""
    if not math.isfinite(gf) or abs(gf - wf) > bound:
        return f"got {gf!r}, expected {wf!r} (|err| {abs(gf - wf):.3g} > bound {bound:.3g})"
    return ""


def validate(launcher: Launcher, queue: cl.CommandQueue, n_target: int) -> Check:
    """A known input first, then odd sizes and n_target + 3; the first failure stops it."""
    spec = launcher.spec
    worst = 0.0
    known = [np.ones(KNOWN_N, spec.np_dtype) for _ in range(spec.n_inputs)]
    sizes = [*SMALL_SIZES, n_target + 3]
    cases = [("known 1024 ones", known)] + [(f"n={n}", make_input(spec, n)) for n in sizes]
    for label, xs in cases:
        want, scale = reference(spec, xs) if xs is known else _reference_cached(spec, xs[0].size)
        try:
            got = run_once(launcher, queue, xs)
        except cl.Error as e:
            return Check(False, f"{label}: launch failed: {e}"[:300])
        bound = numpy_bound(launcher, xs, float(want), scale) if spec.is_float else 0.0
        why = compare(spec, got, want, bound)
        if why:
            return Check(False, f"{label}: {why}")
        if spec.is_float and spec.op in ("sum", "dot") and scale > 0:
            worst = max(worst, abs(float(got) - float(want)) / scale)
    return Check(True, "", worst)
