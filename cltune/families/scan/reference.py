"""The scan family's host reference and error bound, and the validation every candidate
passes before it is timed (house rule 5): awkward lengths (not multiples of anything, one
element, a tile +- 1), rows and segments (empty and one-element ones, segments spanning
chunks), inclusive and exclusive.

Integers are exact (numpy's own wrap-around in the result type). Floating-point results are
checked element by element against a float64 scan: |got - want| <= depth * u * P_i + tiny,
with P_i the scan of |x| (sums; for products the product of |x|) and `depth` the roundings an
element meets in the config's plan (kernels/scan.cl's header); min/max are exact (NaN where
numpy has NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.families.scan.family import ScanVariant

NP_SCAN = {"sum": np.add, "prod": np.multiply, "min": np.fmin, "max": np.fmax}


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""
    max_rel_error: float = 0.0


def _scan(op: str, a: np.ndarray, axis: int) -> np.ndarray:
    if op in ("min", "max"):
        f = np.minimum if op == "min" else np.maximum  # NaN propagates, as numpy's
        return f.accumulate(a, axis=axis)
    return NP_SCAN[op].accumulate(a, axis=axis)


def empty_value(variant: ScanVariant) -> float | int:
    """An exclusive scan's first element: the empty sum/product, or the identity of min/max."""
    if variant.op == "sum":
        return 0
    if variant.op == "prod":
        return 1
    dt = variant.result_dtype
    if variant.is_float:
        return math.inf if variant.op == "min" else -math.inf
    info = np.iinfo(dt)
    return int(info.max if variant.op == "min" else info.min)


def reference(variant: ScanVariant, x: np.ndarray, axis: int, exclusive: bool = False,
              offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(the answer, the scale P per element: None for exact results) of scanning x along
    `axis` (or by CSR `offsets` over a 1-D x)."""
    rdt = variant.result_dtype
    wide = variant.is_float and variant.op in ("sum", "prod")
    a = x.astype(np.float64 if variant.is_float else rdt)
    if offsets is not None:
        parts = [reference(variant, a[offsets[k]:offsets[k + 1]], 0, exclusive)
                 for k in range(len(offsets) - 1)]
        want = np.concatenate([p[0] for p in parts] or [np.zeros(0, a.dtype)])
        scale = np.concatenate([p[1] for p in parts] or [np.zeros(0)]) if wide else None
        return want, scale
    with np.errstate(over="ignore", invalid="ignore"):
        want = _scan(variant.op, a, axis)
        scale = _scan(variant.op, np.abs(a), axis) if wide else None
    if exclusive:
        want = _shift(want, axis, empty_value(variant))
        if scale is not None:
            scale = _shift(scale, axis, 0.0 if variant.op == "sum" else 1.0)
    return want, scale


def _shift(a: np.ndarray, axis: int, first: float | int) -> np.ndarray:
    m = np.moveaxis(a, axis, -1)
    out = np.empty_like(m)
    if out.shape[-1] == 0:
        return a
    out[..., 0] = first
    out[..., 1:] = m[..., :-1]
    return np.moveaxis(out, -1, axis)


def depth(cfg: object, groups: int, chunk: int, lanes: int = 1) -> int:
    """The roundings an element of a float scan meets at most in this plan (kernels/scan.cl):
    a work-item's serial share of its chunk's reduce and scan, the group's tree, the carries
    across tiles and chunks (cols: a top lane's run of the partials, then the lanes before
    it, `lanes` a column)."""
    wg, items = cfg.wg, cfg.items  # type: ignore[attr-defined]
    tiles = -(-chunk // (wg * items))
    if getattr(cfg, "layout", "rows") == "cols":
        return chunk + min(groups, -(-groups // lanes) + lanes) + 4
    return (-(-chunk // wg) + items + tiles + 2 * max(1, wg.bit_length()) + groups
            + max(1, groups.bit_length()) + 8)


def roundings(variant: ScanVariant, cfg: object, groups: int, chunk: int, r: int,
              lanes: int = 1) -> int:
    """The bound's roundings: `depth` for sums (an element's error is its terms' magnitudes
    times the additions above them); a product's relative error is the sum of every
    multiplication's, r - 1 of them in any order (numpy's sequential bound)."""
    if variant.op == "prod":
        return max(r, depth(cfg, groups, chunk, lanes))
    return depth(cfg, groups, chunk, lanes)


def compare(variant: ScanVariant, got: np.ndarray, want: np.ndarray,
            scale: np.ndarray | None, roundings: int) -> Check:
    """Exact for integers and min/max; floats within `roundings` units of the result type's
    rounding of each element's scale."""
    if got.shape != want.shape:
        return Check(False, f"shape {got.shape} != {want.shape}")
    if not variant.is_float:
        bad = np.flatnonzero(got.reshape(-1) != want.astype(got.dtype).reshape(-1))
        if bad.size:
            i = int(bad[0])
            return Check(False, f"element {i}: {got.reshape(-1)[i]} != "
                                f"{want.astype(got.dtype).reshape(-1)[i]}")
        return Check(True)
    g = got.astype(np.float64).reshape(-1)
    w = want.reshape(-1)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if (nan_g != nan_w).any():
        i = int(np.flatnonzero(nan_g != nan_w)[0])
        return Check(False, f"element {i}: {g[i]} != {w[i]} (NaN)")
    fin = ~nan_w & np.isfinite(w)
    if (g[~fin & ~nan_w] != w[~fin & ~nan_w]).any():
        i = int(np.flatnonzero(~fin & ~nan_w & (g != w))[0])
        return Check(False, f"element {i}: {g[i]} != {w[i]}")
    if scale is None:
        bad = np.flatnonzero(fin & (g != w.astype(got.dtype).astype(np.float64)))
        if bad.size:
            i = int(bad[0])
            return Check(False, f"element {i}: {g[i]} != {w[i]}")
        return Check(True)
    u = float(np.finfo(got.dtype).eps) / 2
    s = scale.reshape(-1)
    tiny = float(np.finfo(got.dtype).tiny)
    err = np.abs(g - w)
    tol = (roundings + 2) * u * s + tiny
    bad = np.flatnonzero(fin & (err > tol))
    if bad.size:
        i = int(bad[0])
        return Check(False, f"element {i}: {g[i]!r} vs {w[i]!r}: error {err[i]:.3g} > bound "
                            f"{tol[i]:.3g} ({roundings} roundings)")
    rel = err[fin] / np.maximum(s[fin], tiny)
    return Check(True, "", float(rel.max()) if rel.size else 0.0)


def sample(variant: ScanVariant, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Inputs that exercise the op: signed values for sums (and wrap-around for integers),
    values near 1 for float products, small integers with both signs for integer products,
    a NaN in float min/max."""
    rng = np.random.default_rng(seed)
    dt = variant.in_dtype
    if variant.is_float:
        if variant.op == "prod":
            return (1 + (rng.random(shape) - 0.5) * 1e-3).astype(dt)
        x = (rng.random(shape) - 0.3).astype(dt)
        if variant.op in ("min", "max") and x.size > 10:
            x.reshape(-1)[x.size * 2 // 3] = np.nan
        return x
    info = np.iinfo(dt)
    if variant.op == "prod":
        lo, hi = (-3, 4) if info.min < 0 else (0, 4)
    else:
        lo, hi = int(info.min), int(info.max)
    return rng.integers(lo, hi, shape, dtype=dt, endpoint=False)


def upload(ctx: cl.Context, a: np.ndarray) -> cl.Buffer:
    return cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(a) if a.size else np.zeros(1, a.dtype))


def run_view(la: object, queue: cl.CommandQueue, x: np.ndarray, view: tuple[int, int, int],
             exclusive: bool = False, offsets: np.ndarray | None = None,
             xoff: int = 0) -> np.ndarray:
    """Upload x (with `xoff` elements in front), scan it as `view`, return the result."""
    v = la.variant  # type: ignore[attr-defined]
    ctx = la.ctx  # type: ignore[attr-defined]
    host = np.concatenate([np.zeros(xoff, x.dtype), x.reshape(-1)])
    xb = upload(ctx, host)
    ob = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(8, x.size * v.result_dtype.itemsize))
    ob_ = None
    m, off64 = 0, False
    if offsets is not None:
        off64 = bool(offsets.max(initial=0) >= 2**31 - 1)
        o = offsets.astype(np.int64 if off64 else np.int32)
        ob_ = upload(ctx, o)
        m = len(offsets) - 1
    ev = la.enqueue(queue, xb, xoff, ob, 0, view, exclusive=exclusive,  # type: ignore[attr-defined]
                    offsets=ob_, m=m, off64=off64)
    got = np.empty(x.size, v.result_dtype)
    if got.size:
        cl.enqueue_copy(queue, got, ob, wait_for=ev or None)
    queue.finish()
    return got


def awkward_cases(variant: ScanVariant, cfg: object, n: int) -> list[tuple]:
    """(shape, axis, exclusive, offsets) cases a candidate must pass: lengths that are not
    multiples of anything around a tile and the class's length, rows (axis scans), segments."""
    tile = cfg.wg * cfg.items  # type: ignore[attr-defined]
    big = max(3, min(n, 1 << 17) - 5)
    if getattr(cfg, "layout", "rows") == "cols":
        return [((big // 7 + 1, 7), 0, False, None), ((3, 1001, 5), 1, True, None),
                ((1, 3), 0, False, None), ((4099, 33), 0, False, None)]
    cases: list[tuple] = [((1,), 0, False, None), ((tile + 1,), 0, True, None),
                          ((tile - 1 if tile > 1 else 2,), 0, False, None),
                          ((big,), 0, False, None), ((big,), 0, True, None),
                          ((37, 1001), 1, False, None), ((5000, 3), 1, True, None)]
    rng = np.random.default_rng(7)
    m = 40
    cuts = np.sort(rng.integers(0, big, m - 1))
    cuts[3] = cuts[4]  # an empty segment
    offs = np.concatenate([[0], cuts, [big]]).astype(np.int64)
    cases.append(((big,), 0, False, offs))
    cases.append(((big,), 0, True, offs))
    return cases


def validate(la: object, queue: cl.CommandQueue, n: int) -> Check:
    """Every awkward case of the launcher's config (see awkward_cases)."""
    v = la.variant  # type: ignore[attr-defined]
    cfg = la.cfg  # type: ignore[attr-defined]
    worst = 0.0
    for i, (shape, axis, excl, offs) in enumerate(awkward_cases(v, cfg, n)):
        x = sample(v, shape, seed=i)
        outer = int(np.prod(shape[:axis]))
        r = shape[axis]
        inner = int(np.prod(shape[axis + 1:]))
        got = run_view(la, queue, x, (outer, r, inner), excl, offs, xoff=i % 3)
        want, scale = reference(v, x, axis, excl, offs)
        p = la.plan(outer, r, inner)  # type: ignore[attr-defined]
        chk = compare(v, got.reshape(shape), want.reshape(shape), scale,
                      roundings(v, cfg, p.groups, p.chunk, r, p.lanes))
        if not chk.ok:
            what = f"segments x{len(offs) - 1}" if offs is not None else f"axis {axis}"
            return Check(False, f"{shape} {what}{' exclusive' if excl else ''}: {chk.reason}")
        worst = max(worst, chk.max_rel_error)
    return Check(True, "", worst)
