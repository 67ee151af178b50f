"""The top-k family's host reference and validation (house rule 5: nothing is timed before
it is verified): torch.topk's order computed by numpy (NaN above every number, -0.0 equal to
0.0, equal values by the lower index), compared exactly (values bit for bit but for the sign
of a zero, indices equal), on awkward inputs first (sizes that are multiples of nothing, ties
at the k-th place, NaN, an offset, several rows, the smallest k) and then the class's own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.families.topk.launch import TopkLauncher

#: validation inputs: (rows, row length beyond k); k is the build's power of two, or a little
#: above its half (a build serves both), so the first is a row of exactly k
AWKWARD = ((1, 0), (3, 1000), (1, 20011), (2, 30011))


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""
    max_rel_error: float = 0.0


def order_keys(h: np.ndarray, largest: bool = True) -> np.ndarray:
    """uint64 keys in the order torch.topk gives the values (larger: better)."""
    if h.dtype.kind == "f":
        f = h.astype(np.float64)
        f = np.where(f == 0, 0.0, f)  # -0.0 as 0.0
        b = f.view(np.uint64)
        k = np.where(b >> np.uint64(63), ~b, b | np.uint64(1 << 63))
        k = np.where(np.isnan(f), np.uint64(0xFFFFFFFFFFFFFFFF), k)
    elif h.dtype.kind == "i":
        k = h.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    else:
        k = h.astype(np.uint64)
    return k if largest else ~k


def reference(h: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the best k of each row of the 2-D h (best first)."""
    keys = order_keys(h, largest)
    idx = np.argsort(~keys, axis=-1, kind="stable")[..., :k]  # stable: lower index first
    return np.take_along_axis(h, idx, -1), idx.astype(np.int64)


def same_values(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise: equal, or both NaN."""
    eq = got == want
    if got.dtype.kind == "f":
        eq |= np.isnan(got) & np.isnan(want)
    return eq


def compare(got_v: np.ndarray, got_i: np.ndarray, want_v: np.ndarray,
            want_i: np.ndarray) -> str:
    """'' when the answer is torch's, else where it is not."""
    bad = ~same_values(got_v, want_v) | (got_i != want_i)
    if not bad.any():
        return ""
    at = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
    return (f"place {tuple(int(a) for a in at)}: {got_v[at]!r} at {got_i[at]}, torch's "
            f"{want_v[at]!r} at {want_i[at]}")


def sample(dtype: np.dtype, rows: int, m: int, rng: np.random.Generator,
           awkward: bool = True) -> np.ndarray:
    """rows x m values: uniform (floats in [-1, 1), integers over the dtype's range or up to
    2^20); awkward: a run of equal values that crosses the k-th place, NaN and -0.0."""
    if dtype.kind == "f":
        h = rng.uniform(-1.0, 1.0, (rows, m)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(1 << 20)), min(int(info.max), 1 << 20)
        h = rng.integers(lo, hi, (rows, m), endpoint=True).astype(dtype)
    if awkward and m > 8:
        top = h.max(axis=1, keepdims=True)
        h[:, 1::3] = top  # many equal to the largest: ties at the k-th place
        if dtype.kind == "f":
            h[:, 2] = np.nan
            h[:, 4] = -0.0
            h[:, 5] = 0.0
    return h


def run(la: TopkLauncher, queue: cl.CommandQueue, h: np.ndarray, k: int, largest: bool,
        lead: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The launcher's top k of each row of h (uploaded after `lead` elements: an offset)."""
    rows, m = h.shape
    x = cla.to_device(queue, np.concatenate([np.zeros(lead, h.dtype), h.ravel()]))
    v = cla.empty(queue, rows * k, h.dtype)
    i = cla.empty(queue, rows * k, np.int64)
    la.run(queue, x, lead, m, rows, k, largest, v, i)
    return v.get().reshape(rows, k), i.get().reshape(rows, k)


def _check_transpose(la: TopkLauncher, queue: cl.CommandQueue, rng: np.random.Generator) -> str:
    """'' when the program's batched transposes (of x's dtype and of the indices) move 3
    matrices of 7 x 5 as numpy does, else what they did."""
    for dt in (la.spec.dtype, np.dtype(np.int64)):
        h = sample(dt, 1, 3 * 7 * 5 + 2, rng, False)[0]
        src = cla.to_device(queue, h)
        dst = cla.empty(queue, 3 * 7 * 5, dt)
        la.transpose(queue, src, 2, dst, 3, 7, 5)
        want = h[2:].reshape(3, 7, 5).transpose(0, 2, 1).ravel()
        if not np.array_equal(dst.get(), want):
            return f"the transpose of {dt} moved {dst.get()[:4]}, numpy {want[:4]}"
    return ""


def validate(la: TopkLauncher, queue: cl.CommandQueue) -> Check:
    """The transposes, then the awkward inputs (at an offset, largest and smallest) against
    the reference."""
    rng = np.random.default_rng(41)
    why = _check_transpose(la, queue, rng)
    if why:
        return Check(False, why)
    kp = la.spec.kp
    for j, (rows, extra) in enumerate(AWKWARD):
        k = kp if j % 2 == 0 else kp - kp // 3
        m = k + extra
        if not la.fits(k):
            return Check(False, f"k={k} is not for {la.cfg.short()} here")
        for largest in (True, False):
            h = sample(la.spec.dtype, rows, m, rng)
            gv, gi = run(la, queue, h, k, largest, lead=m % 3)
            why = compare(gv, gi, *reference(h, k, largest))
            if why:
                return Check(False, f"wrong answer: {rows}x{m}, k={k}, "
                             f"largest={largest}: {why}")
    return Check(True)
