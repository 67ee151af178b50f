"""The histogram family's host reference and validation (house rule 5: nothing is timed
before it is verified): numpy's bincount / histogram of the same input (weights summed in
float64), counts compared exactly and sums within a bound, on awkward inputs first (sizes
that are multiples of nothing, a hot bin, the last edge, values outside the range, NaN, an
offset) and then the class's own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.families.hist.launch import HistLauncher, UniformBins

#: validation inputs: (elements, bins)
AWKWARD = ((1, 1), (3, 5), (1000, 7), (20011, 300))


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""
    max_rel_error: float = 0.0


def sample(la: HistLauncher, n: int, nbins: int, rng: np.random.Generator,
           awkward: bool = True) -> tuple[np.ndarray, np.ndarray | None, UniformBins | None]:
    """(values, weights or None, bins or None) for n elements in nbins bins: uniform values
    (bincount: 0 .. nbins - 1 within the dtype; histogram: over [-1, 1) with range (-1, 1),
    uneven edges for histogram_edges),
    awkward: a third of them in one bin, NaN and the last edge (histogram)."""
    sp = la.spec
    if sp.uniform:
        h = rng.uniform(-1.0, 1.0, n).astype(sp.dtype)
        edges = np.linspace(-1.0, 1.0, nbins + 1, endpoint=True, dtype=sp.dtype)
        if sp.searched:  # uneven edges, two of them equal (numpy allows it)
            inner = np.sort(rng.uniform(-1.0, 1.0, max(0, nbins - 1)))
            edges = np.concatenate([[-1.0], inner, [1.0]]).astype(sp.dtype)
            if nbins > 3:
                edges[2] = edges[1]
        bins = UniformBins(edges, 2.0)
        if awkward and n > 6:
            h[: n // 3] = 0.25
            h[3], h[5], h[6] = np.nan, 1.0, 1.5  # NaN, the last edge, outside
    else:
        top = min(nbins, int(np.iinfo(sp.dtype).max) + 1)
        h = rng.integers(0, top, n).astype(sp.dtype)
        if awkward and n > 3:
            h[: n // 3] = top - 1
        bins = None
    w = rng.random(n).astype(sp.weights) if sp.weights is not None else None
    return h, w, bins


def reference(la: HistLauncher, h: np.ndarray, w: np.ndarray | None, nbins: int,
              bins: UniformBins | None) -> np.ndarray:
    """numpy's answer (sums of the weights in float64)."""
    w64 = w.astype(np.float64) if w is not None else None
    if bins is not None:
        return np.histogram(h, bins.edges, weights=w64)[0]
    return np.bincount(h.astype(np.int64), w64, nbins)


def compare(got: np.ndarray, want: np.ndarray, weights: np.ndarray | None,
            out_dtype: np.dtype) -> tuple[str, float]:
    """('' or why not, the largest error relative to the sum of |w|): counts exactly; sums
    within the result's rounding plus a double sum's over every weight."""
    if weights is None:
        if np.array_equal(got, want):
            return "", 0.0
        bad = int(np.flatnonzero(got != want)[0])
        return f"bin {bad}: {got[bad]}, numpy {want[bad]}", 0.0
    scale = float(np.abs(weights.astype(np.float64)).sum()) or 1.0
    eps = float(np.finfo(out_dtype).eps)
    bound = eps * np.abs(want) + 4 * np.finfo(np.float64).eps * weights.size * scale + 1e-300
    err = np.abs(got.astype(np.float64) - want)
    if np.all(err <= bound):
        return "", float(err.max() / scale) if err.size else 0.0
    bad = int(np.flatnonzero(err > bound)[0])
    return f"bin {bad}: {got[bad]!r}, numpy {want[bad]!r} (bound {bound[bad]:.3g})", 0.0


def run(la: HistLauncher, queue: cl.CommandQueue, h: np.ndarray, w: np.ndarray | None,
        nbins: int, bins: UniformBins | None, lead: int = 0) -> np.ndarray:
    """The launcher's histogram of h (uploaded after `lead` elements: an offset)."""
    x = cla.to_device(queue, np.concatenate([np.zeros(lead, h.dtype), h]))
    wd = None
    if w is not None:
        wd = cla.to_device(queue, np.concatenate([np.zeros(lead, w.dtype), w]))
    out = cla.empty(queue, nbins, la.spec.out_dtype)
    la.run(queue, x, lead, h.size, wd, lead, nbins, bins, out)
    return out.get()


def validate(la: HistLauncher, queue: cl.CommandQueue, nbins_limit: int | None = None) -> Check:
    """The awkward inputs (each at an offset) through the launcher against numpy."""
    rng = np.random.default_rng(41)
    worst = 0.0
    for n, nbins in AWKWARD:
        if nbins_limit is not None and nbins > nbins_limit or not la.fits(nbins):
            continue
        h, w, bins = sample(la, n, nbins, rng)
        got = run(la, queue, h, w, nbins, bins, lead=n % 3)
        why, err = compare(got, reference(la, h, w, nbins, bins), w, la.spec.out_dtype)
        if why:
            return Check(False, f"wrong answer: {n} elements in {nbins} bins: {why}")
        if not la.spec.uniform:  # bincount's length: the program's min/max kernel
            lead = n % 3
            x = cla.to_device(queue, np.concatenate([np.full(lead, h.max(), h.dtype), h]))
            got_ext = la.extremes(queue, x, lead, n)
            if got_ext != (h.min(), h.max()):
                return Check(False, f"wrong extremes of {n} elements: {got_ext}, numpy "
                             f"{(h.min(), h.max())}")
            if la.spec.weights is None and la.one_pass(nbins, n):
                why = _check_once(la, queue, h, nbins, lead)
                if why:
                    return Check(False, why)
        worst = max(worst, err)
    return Check(True, "", worst)


def _check_once(la: HistLauncher, queue: cl.CommandQueue, h: np.ndarray, nbins: int,
                lead: int) -> str:
    """bincount's one-pass launch (`HistLauncher.count_once`) on h with its largest value
    moved past the bins (not counted, but its extreme): '' or what went wrong."""
    h = h.copy()
    h[h.size // 2] = nbins + 3 if h.dtype.itemsize > 1 else h.max()
    x = cla.to_device(queue, np.concatenate([np.full(lead, h.max(), h.dtype), h]))
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbins * 8)
    _, lo, hi = la.count_once(queue, x[lead:], h.size, nbins, out)
    got = np.empty(nbins, np.int64)
    cl.enqueue_copy(queue, got, out)
    want = np.bincount(h[h < nbins].astype(np.int64), minlength=nbins)[:nbins]
    if (lo, hi) != (h.min(), h.max()):
        return f"one-pass bincount of {h.size}: extremes {(lo, hi)}, numpy {(h.min(), h.max())}"
    if not np.array_equal(got, want):
        bad = int(np.flatnonzero(got != want)[0])
        return f"one-pass bincount of {h.size}: bin {bad}: {got[bad]}, numpy {want[bad]}"
    return ""
