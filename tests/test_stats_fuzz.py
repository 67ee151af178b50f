"""cltune.stats.api against numpy on random cases (fixed seeds): shapes of 1-3 dimensions with odd
and unit lengths and empty axes, C and F order, int and adjacent-tuple axes and None,
keepdims, dtypes, NaN/inf placed at random and many ties. Every case must give numpy's answer
or the same kind of error; the one documented difference is a 2-D array's ord=2/-2 norm (its
singular values), which must be a clear ValueError naming it."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cla
import pytest

import cltune

OPS = ("argmax", "argmin", "mean", "var", "std", "norm", "count_nonzero", "any", "all")


def _case(rng):
    nd = int(rng.integers(1, 4))
    shape = tuple(int(rng.choice([1, 2, 3, 5, 7, 16, 31, 64, 100, 257])) for _ in range(nd))
    if rng.random() < 0.05:
        shape = shape[:-1] + (0,)
    order = "F" if rng.random() < 0.3 else "C"
    op = str(rng.choice(OPS))
    dt = np.dtype(rng.choice([np.float32, np.float64, np.int32, np.uint8, np.bool_]))
    if dt == np.bool_ and op not in ("count_nonzero", "any", "all"):
        dt = np.dtype(np.float32)
    if dt == np.bool_:
        h = rng.random(shape) < 0.5
    elif dt.kind == "f":
        h = (rng.standard_normal(shape) * 10).astype(dt)
        if rng.random() < 0.3 and h.size:
            h.flat[rng.integers(0, h.size, 3)] = rng.choice([np.nan, np.inf, -np.inf])
        if rng.random() < 0.3:
            h = np.round(h / 10).astype(dt)  # ties
    else:
        h = rng.integers(0, 5 if rng.random() < 0.5 else 200, shape).astype(dt)
    h = np.asarray(h, order=order)
    r = rng.random()
    if r < 0.2:
        axis = None
    elif r < 0.75 or op in ("argmax", "argmin") or nd == 1:
        axis = int(rng.integers(-nd, nd))
    else:
        a0 = int(rng.integers(0, nd - 1))
        axis = (a0, a0 + 1)
    kw = {"keepdims": bool(rng.random() < 0.3)}
    if op in ("var", "std"):
        kw["ddof"] = int(rng.integers(0, 2))
    if op == "norm" and not isinstance(axis, tuple):
        kw["ord"] = [None, 1, 2, np.inf][int(rng.integers(0, 4))]
    return op, h, axis, kw


def _numpy(op, h, axis, kw):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "norm":
            hh = h.astype(np.float64)
            return np.linalg.norm(hh, kw.get("ord"), axis=axis, keepdims=kw["keepdims"])
        hh = h.astype(np.float64) if op in ("mean", "var", "std") and h.dtype.kind == "f" else h
        return getattr(np, op)(hh, axis=axis, **kw)


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_match_numpy(queue, seed):
    rng = np.random.default_rng(1000 + seed)
    bad = []
    for _ in range(60):
        op, h, axis, kw = _case(rng)
        order = "F" if h.ndim > 1 and not h.flags.c_contiguous else "C"
        desc = f"{op} {h.dtype} {h.shape} {order} axis={axis} {kw}"
        try:
            want, want_err = _numpy(op, h, axis, kw), None
        except ValueError as e:
            want, want_err = None, e
        x = cla.to_device(queue, h)
        try:
            if op == "norm":
                got = cltune.norm(x, kw.get("ord"), axis=axis, keepdims=kw["keepdims"])
            else:
                got = getattr(cltune, op)(x, axis=axis, **kw)
            got, got_err = got.get(), None
        except ValueError as e:
            got, got_err = None, e
        if op == "norm" and kw.get("ord") == 2 and axis is None and h.ndim == 2:
            if not (got_err and "singular value" in str(got_err)):
                bad.append(f"{desc}: want the documented ValueError, got {got!r}")
            continue
        if want_err or got_err:
            if not (want_err and got_err):
                bad.append(f"{desc}: numpy {want_err!r}, cltune {got_err!r}")
            continue
        want, got = np.asarray(want), np.asarray(got)
        if want.shape != got.shape:
            bad.append(f"{desc}: shape {got.shape} != {want.shape}")
        elif op in ("argmax", "argmin", "count_nonzero", "any", "all"):
            if not np.array_equal(got, want):
                bad.append(f"{desc}: {got.ravel()[:5]} != {want.ravel()[:5]}")
        elif not np.allclose(got.astype(np.float64), want.astype(np.float64), equal_nan=True,
                             rtol=1e-9 if h.dtype == np.float64 else 2e-5, atol=1e-6):
            bad.append(f"{desc}: {got.ravel()[:5]} != {want.ravel()[:5]}")
    assert not bad, "\n".join(bad[:10])
