"""Host references of the many family (float64, or exact for integers), error bounds per
output, and the validation of a launcher on problems of awkward lengths and offsets.

    >>> p = Problem((0, 3, 4099), (0, 5, 1))
    >>> p.total, p.lengths
    (4108, (0, 3, 4099))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from cltune.core.inputs import Check, make_input
from cltune.families.many.config import ManyConfig
from cltune.families.many.family import ManyVariant
from cltune.families.many.launch import ManyLauncher, groups_of


@dataclass(frozen=True)
class Problem:
    """Arrays of these lengths, each at an element offset into a buffer of its own."""

    lengths: tuple[int, ...]
    offsets: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.lengths) + sum(self.offsets)


def awkward(slots: int, size: int) -> Problem:
    """More arrays than a launch takes (slots + 3), lengths that are multiples of nothing
    around `size` (and 0, 1, 3), offsets of a few elements."""
    base = [0, 1, 3, max(1, size - 1), size + 3, max(1, size // 3) + 1, 2 * size + 5]
    lengths = [base[i % len(base)] + (i // len(base)) * 7 for i in range(slots + 3)]
    return Problem(tuple(lengths), tuple((i * 5) % 7 for i in range(len(lengths))))


def host_arrays(variant: ManyVariant, p: Problem, seed: int = 0) -> list[np.ndarray]:
    """Each array with its offset's elements in front (what its buffer holds)."""
    flat = make_input(variant.spec, max(1, p.total), seed)[0]
    out, at = [], 0
    for off, n in zip(p.offsets, p.lengths, strict=True):
        out.append(flat[at:at + off + n])
        at += off + n
    return out


def reference(variant: ManyVariant, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(the results, float64 for floats and exact in the result dtype for integers; the
    scale of each result's error: sum|x| for sums, |result| otherwise)."""
    rdt = variant.result_dtype
    want, scale = [], []
    for a in arrays:
        if variant.spec.is_float:
            w = a.astype(np.float64)
            if variant.op == "sum":
                want.append(math.fsum(w))
                scale.append(float(np.abs(w).sum()))
                continue
            if variant.op == "norm":
                r = math.sqrt(math.fsum(w * w))
            elif variant.op == "prod":
                r = float(np.prod(w))
            else:
                r = float(getattr(np, variant.op)(w)) if a.size else math.nan
            want.append(r)
            scale.append(abs(r))
        else:  # integers wrap in the result dtype, in any order: numpy's are the exact ones
            fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[variant.op]
            want.append(fn(a, dtype=rdt) if variant.op in ("sum", "prod") else fn(a))
            scale.append(0.0)
    dt = np.float64 if variant.spec.is_float else rdt
    return np.array(want, dt), np.array(scale, np.float64)


def bounds(variant: ManyVariant, cfg: ManyConfig, fp64: bool, lengths: Sequence[int],
           scale: np.ndarray) -> np.ndarray:
    """Absolute error allowed per result: the rounding of the result dtype plus the
    accumulator's over the terms a value passes through (a work-item's steps and remainder,
    its vector and the group's tree, the partials' finish); products count every factor."""
    if not variant.spec.is_float or variant.op in ("min", "max"):
        return np.zeros(len(lengths))
    out_eps = float(np.finfo(variant.result_dtype).eps)
    acc_eps = float(np.finfo(np.float64 if variant.wide(fp64) or variant.dtype == "float64"
                             else np.float32).eps)
    tree = 2 * math.log2(cfg.wg) + math.log2(cfg.vec) + 4
    terms = np.array([float(n) if variant.op == "prod" else
                      cfg.steps + cfg.items * cfg.vec + tree + groups_of(cfg, n) / cfg.wg
                      for n in lengths])
    return 2.0 * (out_eps + acc_eps * terms) * scale + 1e-300


def compare(variant: ManyVariant, got: np.ndarray, want: np.ndarray, tol: np.ndarray,
            scale: np.ndarray) -> tuple[str, float]:
    """('' or the first mismatch, the largest error relative to its scale)."""
    if not variant.spec.is_float:
        bad = np.flatnonzero(got != want)
        return (f"array {bad[0]}: {got[bad[0]]} != {want[bad[0]]}" if bad.size else ""), 0.0
    g = got.astype(np.float64)
    same = (g == want) | (np.isnan(g) & np.isnan(want))
    err = np.where(same, 0.0, np.abs(g - want))
    bad = np.flatnonzero(~same & ~(err <= tol))
    rel = float(np.max(err / np.maximum(scale, 1e-300), initial=0.0))
    if bad.size:
        i = bad[0]
        return f"array {i}: {g[i]!r} vs {want[i]!r} (error {err[i]:.3g} > {tol[i]:.3g})", rel
    return "", rel


def run(la: ManyLauncher, queue: cl.CommandQueue, bufs: Sequence[cl.Buffer], p: Problem,
        out: cl.Buffer | None = None) -> np.ndarray:
    """The launcher's results for arrays already on the device, read back."""
    rdt = la.variant.result_dtype
    out = out or cl.Buffer(la.ctx, cl.mem_flags.READ_WRITE, max(8, len(p.lengths) * rdt.itemsize))
    evs = la.enqueue(queue, [(b, o, n) for b, o, n in zip(bufs, p.offsets, p.lengths,
                                                           strict=True)], out)
    got = np.empty(len(p.lengths), rdt)
    cl.enqueue_copy(queue, got, out, wait_for=evs)
    return got


def upload(ctx: cl.Context, arrays: Sequence[np.ndarray]) -> list[cl.Buffer]:
    mf = cl.mem_flags
    return [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) if a.size else
            cl.Buffer(ctx, mf.READ_ONLY, 64) for a in arrays]


def check(la: ManyLauncher, queue: cl.CommandQueue, bufs: Sequence[cl.Buffer],
          arrays: Sequence[np.ndarray], p: Problem) -> Check:
    """The launcher against the host reference on one problem."""
    v = la.variant
    hosts = [a[o:] for a, o in zip(arrays, p.offsets, strict=True)]
    if v.op in ("min", "max") and any(n == 0 for n in p.lengths):
        raise ValueError("min/max of an empty array has no identity")
    got = run(la, queue, bufs, p)
    want, scale = reference(v, hosts)
    tol = bounds(v, la.cfg, bool(la.info.fp64), p.lengths, scale)
    why, rel = compare(v, got, want, tol, scale)
    return Check(not why, why, rel)


def validate(la: ManyLauncher, queue: cl.CommandQueue, size: int) -> Check:
    """Awkward lengths and offsets around `size` (empty arrays left out for min/max, which
    refuse them as numpy does), more arrays than one launch takes."""
    p = awkward(la.cfg.slots, size)
    if la.variant.op in ("min", "max"):
        p = Problem(tuple(max(1, n) for n in p.lengths), p.offsets)
    arrays = host_arrays(la.variant, p, seed=11)
    return check(la, queue, upload(la.ctx, arrays), arrays, p)
