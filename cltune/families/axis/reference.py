"""Host references, per-output error bounds and validation for the axis family.

Every output is checked on its own: integers, `min` and `max` exactly (NaN where numpy gives
NaN), floating `sum`/`dot` within `gamma_d * sum|x|` of that output (Higham eq. 4.4, `d` the
depth of the launch's summation: the serial steps of one accumulator, the in-register,
in-group and split combines; see cltune.families.reduce.reference for the 1-D family),
`prod` within
`gamma_(r+1) * |exact|`, plus half an ulp of the output type and the float64 reference's own
error. Floating `sum`/`prod`/`dot` are also held to numpy: no output may be further from the
float64 reference than numpy's own answer in the same dtype (`numpy_answer`, the most accurate
numpy has: along a contiguous axis, where its sums are pairwise) plus an ulp of the output and
the accumulation's own error (double where the device has fp64, else compensated:
`OpSpec.accumulation`), so that no config less accurate than numpy is ever accepted
(README.md, "Accuracy").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.core.inputs import Check, make_input
from cltune.core.ops import OpSpec
from cltune.families.axis.family import NO_ERROR, identity
from cltune.families.axis.kernel import acc_type
from cltune.families.axis.launch import AxisLauncher

_U = {"float": 2.0**-24, "double": 2.0**-53}
#: the largest validation input (elements): a tuning class's shape is scaled down to it
VALIDATION_ELEMENTS = 1 << 21
_OUT_U = {"float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}


@dataclass(frozen=True, eq=False)
class Problem:
    """A reduction over r of an (outer, r, inner) C-ordered view, or (`offsets` given) over
    CSR segments of a 1-D input of `outer * r * inner` elements."""

    outer: int
    r: int
    inner: int
    offsets: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.outer * self.r * self.inner

    @property
    def outputs(self) -> int:
        return self.offsets.size - 1 if self.offsets is not None else self.outer * self.inner


def reference(spec: OpSpec, p: Problem, xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(per-output result as numpy computes it (floats in float64), per-output scale)."""
    if p.offsets is not None:
        return _segment_reference(spec, p.offsets, xs)
    v = [a.reshape(p.outer, p.r, p.inner) for a in xs]
    if not spec.is_float:
        with np.errstate(over="ignore"):
            if spec.op == "dot":
                return (v[0] * v[1]).sum(axis=1, dtype=spec.result_dtype).ravel(), _zeros(p)
            if spec.op in ("min", "max"):
                return getattr(np, spec.op)(v[0], axis=1).ravel(), _zeros(p)
            fn = np.sum if spec.op == "sum" else np.prod
            return fn(v[0], axis=1, dtype=spec.result_dtype).ravel(), _zeros(p)
    if spec.op in ("min", "max"):
        return getattr(np, spec.op)(v[0], axis=1).ravel(), _zeros(p)
    x64 = v[0].astype(np.float64)
    if spec.op == "dot":
        x64 = x64 * v[1].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return _float_reference(spec, x64)


def _float_reference(spec: OpSpec, x64: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if spec.op == "prod":
        r = np.prod(x64, axis=1).ravel()
        return _saturate(spec, r), np.abs(r)
    return _saturate(spec, x64.sum(axis=1).ravel()), np.abs(x64).sum(axis=1).ravel()


def _zeros(p: Problem) -> np.ndarray:
    return np.zeros(p.outputs)


def _segment_reference(spec: OpSpec, offs: np.ndarray,
                       xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised over segments with `ufunc.reduceat` (which cannot express empty segments:
    those get the identity)."""
    m = offs.size - 1
    lens = np.diff(offs)
    full = lens > 0
    starts = offs[:-1][full].astype(np.intp)
    end = int(offs[-1]) if m else 0
    exact = not spec.is_float or spec.op in ("min", "max")
    out = np.full(m, identity(spec), spec.result_dtype if exact else np.float64)
    scale = np.zeros(m)
    if not starts.size:
        return out, scale
    x = xs[0][:end]
    with np.errstate(over="ignore", invalid="ignore"):
        if spec.op in ("min", "max"):
            out[full] = getattr(np, "minimum" if spec.op == "min" else "maximum").reduceat(
                x, starts)
        elif exact:
            v = x.astype(spec.result_dtype)
            if spec.op == "dot":
                v = v * xs[1][:end].astype(spec.result_dtype)
            out[full] = (np.multiply if spec.op == "prod" else np.add).reduceat(v, starts)
        else:
            v = x.astype(np.float64)
            if spec.op == "dot":
                v = v * xs[1][:end].astype(np.float64)
            r = (np.multiply if spec.op == "prod" else np.add).reduceat(v, starts)
            out[full] = _saturate(spec, r)
            scale[full] = np.abs(r) if spec.op == "prod" else np.add.reduceat(np.abs(v), starts)
    return out, scale


def _saturate(spec: OpSpec, r: np.ndarray) -> np.ndarray:
    big = float(np.finfo(spec.result_dtype).max) * (1 + float(np.finfo(spec.result_dtype).eps) / 2)
    return np.where(np.abs(r) > big, np.copysign(np.inf, r), r)


def depth(launcher: AxisLauncher, p: Problem) -> int:
    """Rounded additions on the longest path from an element to its output."""
    cfg = launcher.cfg
    lg = lambda v: math.ceil(math.log2(max(1, v)))  # noqa: E731
    if p.offsets is not None:
        longest = int(np.max(np.diff(p.offsets))) if p.offsets.size > 1 else 0
        serial = -(-longest // (cfg.lanes * cfg.vec * cfg.items)) + cfg.items
        return serial + lg(cfg.vec) + lg(cfg.items) + lg(cfg.lanes) + 4
    if cfg.lanes:
        plan = launcher.plan("rows", p.outer * p.inner, p.r, 1)
        serial = -(-plan.chunk // (cfg.lanes * cfg.vec * cfg.items)) + cfg.items + cfg.vec
        tree = lg(cfg.vec) + lg(cfg.items) + lg(cfg.lanes)
    elif cfg.stream:  # each output: its piece's rows one after the other
        plan = launcher.plan("cols", p.outer, p.r, p.inner)
        serial, tree = plan.chunk + 1, 0
    else:
        plan = launcher.plan("cols", p.outer, p.r, p.inner)
        rt = cfg.wg // cfg.cols
        serial = -(-plan.chunk // (rt * cfg.items)) + cfg.items
        tree = lg(cfg.items) + lg(rt)
    return serial + tree + plan.split + 4


def numpy_answer(spec: OpSpec, p: Problem, xs: list[np.ndarray]) -> np.ndarray:
    """numpy's own answer in the input's dtype (floating sum/prod/dot), the most accurate way
    numpy computes it: each output's elements made contiguous first (numpy's sums are
    pairwise only along a contiguous axis)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if p.offsets is not None:
            v = xs[0][:int(p.offsets[-1])] if p.outputs else xs[0][:0]
            if spec.op == "dot":
                v = v * xs[1][:v.size]
            out = np.full(p.outputs, identity(spec), np.float64)
            full = np.diff(p.offsets) > 0
            if full.any():
                ufunc = np.multiply if spec.op == "prod" else np.add
                out[full] = ufunc.reduceat(v, p.offsets[:-1][full].astype(np.intp))
            return out
        v = [np.ascontiguousarray(np.moveaxis(a.reshape(p.outer, p.r, p.inner), 1, -1))
             for a in xs]
        if spec.op == "prod":
            return np.prod(v[0], axis=-1).ravel().astype(np.float64)
        if spec.op == "dot":
            return np.sum(v[0] * v[1], axis=-1).ravel().astype(np.float64)
        return np.sum(v[0], axis=-1).ravel().astype(np.float64)


def numpy_error(spec: OpSpec, p: Problem, xs: list[np.ndarray],
                want: np.ndarray) -> np.ndarray:
    """|numpy's answer - the float64 reference| per output (inf where numpy's is not finite
    and the reference is: numpy then sets no bound)."""
    got = numpy_answer(spec, p, xs)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
    return np.where(np.isfinite(err), err, np.inf)


def bounds(launcher: AxisLauncher, p: Problem, scale: np.ndarray,
           np_err: np.ndarray | None = None, want: np.ndarray | None = None) -> np.ndarray:
    """Per-output absolute error bound: the accumulation's depth bound (Higham), and where
    numpy's error `np_err` is given (with the reference `want`), at most numpy's error plus an
    ulp of the output at |want| plus the accumulation's own error (sound for every config:
    a double accumulator's result is the reference rounded once, so at most one ulp from the
    nearest value, which no answer in the output dtype beats)."""
    spec = launcher.spec
    acc = acc_type(spec, launcher.info.fp64)
    mode = spec.accumulation(launcher.info.fp64)
    u = _U["double" if acc == "double" else "float"]
    d = depth(launcher, p)
    longest = p.r if p.offsets is None else max(1, int(np.max(np.diff(p.offsets), initial=1)))
    if spec.op == "prod":
        d = max(d, longest + 1)
    if spec.op == "dot":
        d += 1
    gamma = d * u / (1 - d * u) if d * u < 0.5 else 1.0
    if mode == "kahan":  # compensated chains (Higham eq. 4.9), then the plain combines
        tree = math.ceil(math.log2(max(2, launcher.cfg.wg))) + 8 + (spec.op == "dot")
        gamma = min(gamma, 2 * u + 2 * (d * u) ** 2 + tree * u)
    ref_err = 2 * math.log2(max(2, longest)) * 2.0**-53
    depth_bound = (gamma + _OUT_U[spec.dtype] + ref_err) * scale + 1e-300
    if np_err is None or want is None:
        return depth_bound
    ulp = np.spacing(np.abs(want).astype(spec.np_dtype)).astype(np.float64)
    near_numpy = np_err + ulp + (gamma + ref_err) * scale + 1e-300
    return np.fmin(depth_bound, near_numpy)  # fmin: a NaN (|want| past the dtype) is no bound


def overflows(dt: np.dtype, g: np.ndarray, w: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Where an infinite answer g is right in the output dtype dt: the reference w, within
    its error bound, reaches what rounds to an infinity of w's sign there (a float16 sum of
    65525.8 is inf, as numpy's own float16 answer)."""
    if not np.issubdtype(dt, np.floating):
        return np.zeros(np.shape(g), bool)
    fin = np.finfo(dt)
    top = fin.max.astype(np.float64)
    edge = top + (top - np.nextafter(fin.max, fin.dtype.type(0)).astype(np.float64)) / 2
    with np.errstate(invalid="ignore"):
        return np.isinf(g) & (np.sign(g) == np.sign(w)) & (np.abs(w) + bound >= edge)


def compare(spec: OpSpec, got: np.ndarray, want: np.ndarray, bound: np.ndarray) -> str:
    """'' when every output matches, else the first mismatch."""
    if not spec.is_float or spec.op in ("min", "max"):
        if spec.is_float:
            same = (got == want) | (np.isnan(got) & np.isnan(want))
        else:
            same = got == want.astype(got.dtype)
        bad = np.flatnonzero(~same)
        return "" if not bad.size else f"output {bad[0]}: got {got[bad[0]]!r}, expected " \
            f"{want[bad[0]]!r} ({bad.size} wrong)"
    g, w = got.astype(np.float64), want.astype(np.float64)
    special = ~np.isfinite(w)
    with np.errstate(invalid="ignore"):
        ok = np.where(special, (g == w) | (np.isnan(g) & np.isnan(w)),
                      (np.isfinite(g) & (np.abs(g - w) <= bound))
                      | overflows(spec.result_dtype, g, w, bound))
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return ""
    i = bad[0]
    return (f"output {i}: got {g[i]!r}, expected {w[i]!r} (|err| {abs(g[i] - w[i]):.3g}, "
            f"bound {bound[i]:.3g}; {bad.size} wrong)")


def run_once(launcher: AxisLauncher, queue: cl.CommandQueue, p: Problem,
             xs: list[np.ndarray], lead: int = 0) -> np.ndarray:
    """Reduce host arrays on the device (input starting `lead` elements into its buffer, the
    output poisoned beforehand) and read the outputs back."""
    ctx, spec = launcher.ctx, launcher.spec
    mf = cl.mem_flags
    bufs = []
    for a in xs:
        host = np.concatenate([np.zeros(lead, a.dtype), a]) if lead else a
        bufs.append(cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                              hostbuf=host if host.size else np.zeros(1, a.dtype)))
    rdt = spec.result_dtype
    k = max(1, p.outputs)
    out = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                    hostbuf=np.full(k * rdt.itemsize, 0xA5, np.uint8))
    y = bufs[1] if len(bufs) > 1 else None
    if p.offsets is not None:
        offs = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=p.offsets)
        err = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                        hostbuf=np.full(1, NO_ERROR, np.uint32))
        init = launcher.built().acc_dtype.type(identity(spec))
        evs = launcher.segs(queue, bufs[0], lead, p.n, offs, p.offsets.dtype == np.int64,
                            p.outputs, init, err, out, y=y, yoff=lead)
    elif launcher.cfg.lanes:
        evs = launcher.rows(queue, bufs[0], lead, p.outer, p.r, out, y=y, yoff=lead)
    else:
        evs = launcher.cols(queue, bufs[0], lead, p.outer, p.r, p.inner, out, y=y, yoff=lead)
    res = np.empty(k, rdt)
    cl.enqueue_copy(queue, res, out, wait_for=evs)
    queue.finish()
    return res[:p.outputs]


def validation_problems(layout: str, target: Problem) -> list[Problem]:
    """Awkward shapes (1 x n, n x 1, primes, 3 x 1025, ...) and the target shape plus a bit."""
    if target.offsets is not None:
        rng = np.random.default_rng(5)
        lens = [0, 1, 0, 1031, 3, 0, 0, 17, 4099, 2]
        small = np.concatenate([[0], np.cumsum(lens)]).astype(target.offsets.dtype)
        big = np.concatenate([target.offsets, target.offsets[-1:] + rng.integers(0, 9, 3)
                              .cumsum()]).astype(target.offsets.dtype)
        return [Problem(1, int(small[-1]), 1, small), Problem(1, int(big[-1]), 1, big)]
    a, b = (target.outer, target.r) if layout == "rows" else (target.r, target.inner)
    while a * b > VALIDATION_ELEMENTS:  # the class's shape, scaled down, plus a bit
        a, b = (a // 2, b) if a >= b else (a, b // 2)
    if layout == "rows":
        return [Problem(1, 1, 1), Problem(3, 1025, 1), Problem(1, 100003, 1),
                Problem(1031, 7, 1), Problem(2, 3, 1), Problem(a + 3, b + 1, 1)]
    return [Problem(1, 5, 3), Problem(2, 33, 17), Problem(1, 1025, 7), Problem(3, 7, 1031),
            Problem(1, 2, 5), Problem(1, 100003, 2), Problem(2, a + 3, b + 1)]


def validate(launcher: AxisLauncher, queue: cl.CommandQueue, target: Problem) -> Check:
    """Ones first (exact), then the validation problems (the first at an unaligned offset);
    the first failure stops it."""
    spec = launcher.spec
    layout = "rows" if launcher.cfg.lanes else "cols"
    worst = 0.0
    problems = validation_problems(layout, target)
    for i, p in enumerate(problems):
        xs = make_input(spec, p.n, seed=i)
        want, scale = reference(spec, p, xs)
        label = f"{'segments' if p.offsets is not None else (p.outer, p.r, p.inner)}"
        try:
            got = run_once(launcher, queue, p, xs, lead=3 if i == 0 else 0)
        except cl.Error as e:
            return Check(False, f"{label}: launch failed: {e}"[:300])
        if spec.is_float and spec.op != "min" and spec.op != "max":
            bound = bounds(launcher, p, scale, numpy_error(spec, p, xs, want), want)
        else:
            bound = np.zeros(p.outputs)
        why = compare(spec, got, want, bound)
        if why:
            return Check(False, f"{label}: {why}"[:400])
        if spec.is_float and spec.op in ("sum", "dot"):
            nz = scale > 0
            if nz.any():
                worst = max(worst, float(np.max(np.abs(got[nz].astype(np.float64) - want[nz])
                                                / scale[nz])))
    return Check(True, "", worst)
