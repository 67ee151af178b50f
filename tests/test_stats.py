"""cltune.stats.api against numpy: argmin/argmax (ties, NaN), norm (1, 2 without overflow, inf),
mean, var/std (ddof, one pass), count_nonzero, any/all; odd sizes, empty inputs, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.stats import api as stats
from cltune.stats import kernels as stats_kernels

SIZES = (1, 3, 1000003)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(3)


def dev(queue, a):
    return cla.to_device(queue, np.ascontiguousarray(a))


def test_argmin_argmax_first_occurrence_and_nan(queue, rng):
    for dt in (np.float32, np.float64, np.int32):
        for n in SIZES:
            h = (rng.standard_normal(n) * 50).astype(dt)
            x = dev(queue, h)
            got = cltune.argmax(x)
            assert got.shape == () and got.dtype == np.int64
            assert int(got.get()) == np.argmax(h)
            assert int(cltune.argmin(x).get()) == np.argmin(h)
    ties = np.array([1, 5, 2, 5, 5, -3, -3], np.float32)
    assert int(cltune.argmax(dev(queue, ties)).get()) == 1
    assert int(cltune.argmin(dev(queue, ties)).get()) == 5
    big = np.zeros(1000003, np.float32)
    big[[77, 500000, 999999]] = 9
    big[[12, 600000]] = np.nan
    assert int(cltune.argmax(dev(queue, big)).get()) == np.argmax(big) == 12
    assert int(cltune.argmin(dev(queue, big)).get()) == np.argmin(big) == 12
    inf = np.array([-np.inf, -np.inf, -np.inf], np.float32)
    assert int(cltune.argmax(dev(queue, inf)).get()) == 0
    assert int(cltune.argmin(dev(queue, -inf)).get()) == 0
    for dt in (np.int32, np.int64, np.uint8):  # the neutral value itself, everywhere
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
        assert int(cltune.argmax(dev(queue, np.full(5003, lo, dt))).get()) == 0
        assert int(cltune.argmin(dev(queue, np.full(5003, hi, dt))).get()) == 0
        h = np.full(5003, lo, dt)
        h[[4000, 4001]] = hi
        assert int(cltune.argmax(dev(queue, h)).get()) == 4000
    nan0 = np.array([np.nan, 1, np.nan, 2], np.float32)
    assert int(cltune.argmax(dev(queue, nan0)).get()) == 0
    assert int(cltune.argmin(dev(queue, nan0)).get()) == 0
    with pytest.raises(ValueError, match="empty sequence"):
        cltune.argmax(cla.empty(queue, 0, np.float32))
    two_d = rng.random((301, 7)).astype(np.float32)
    assert int(cltune.argmax(dev(queue, two_d)).get()) == np.argmax(two_d)


def test_norms(queue, rng):
    for dt in (np.float32, np.float64):
        for n in SIZES:
            h = (rng.standard_normal(n)).astype(dt)
            x = dev(queue, h)
            h64 = h.astype(np.float64)
            for ord_ in (None, 2, 1, np.inf):
                got = cltune.norm(x, ord_)
                assert got.dtype == dt
                np.testing.assert_allclose(got.get(), np.linalg.norm(h64, ord_), rtol=1e-5)
    # L2 of values whose squares overflow (float32: 1e30^2, float64: 1e200^2) or underflow
    for dt, v in ((np.float32, 1e30), (np.float32, 1e-30), (np.float64, 1e200),
                  (np.float64, 1e-200)):
        h = np.full(1001, v, dt)
        want = v * np.sqrt(1001.0)
        np.testing.assert_allclose(cltune.norm(dev(queue, h)).get(), want, rtol=1e-5)
    h = np.array([1, np.inf, 2], np.float64)
    assert cltune.norm(dev(queue, h)).get() == np.inf
    h = np.array([1, np.nan, np.inf], np.float64)
    assert np.isnan(cltune.norm(dev(queue, h)).get())
    assert np.isnan(cltune.norm(dev(queue, h), np.inf).get())
    assert cltune.norm(cla.empty(queue, 0, np.float32)).get() == 0
    with pytest.raises(ValueError, match="ord="):
        cltune.norm(dev(queue, h), 3)


def test_mean_var_std(queue, rng):
    for dt in (np.float32, np.float64, np.int32):
        for n in SIZES:
            h = (rng.standard_normal(n) * 10 + 1000).astype(dt)
            x = dev(queue, h)
            h64 = h.astype(np.float64)
            res_dt = np.float64 if dt == np.int32 else dt
            m = cltune.mean(x)
            assert m.dtype == res_dt
            np.testing.assert_allclose(m.get(), h64.mean(), rtol=1e-6)
            for ddof in (0, 1):
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    want_v, want_s = h64.var(ddof=ddof), h64.std(ddof=ddof)
                got_v = cltune.var(x, ddof=ddof).get()
                assert got_v.dtype == res_dt
                if np.isfinite(want_v):
                    np.testing.assert_allclose(got_v, want_v, rtol=1e-5, atol=1e-9)
                    np.testing.assert_allclose(cltune.std(x, ddof=ddof).get(), want_s,
                                               rtol=1e-5, atol=1e-9)
                else:  # n - ddof == 0: numpy's inf or nan
                    assert np.isnan(got_v) or np.isinf(got_v)
    # one pass stays accurate with a large mean (the naive sum-of-squares formula does not)
    h = (np.arange(100003) % 7 + 1e8).astype(np.float64)
    np.testing.assert_allclose(cltune.var(dev(queue, h)).get(), h.var(), rtol=1e-9)
    # the shifted accumulators: a first element far from the rest, each accumulator's first
    # element an outlier, a constant input (M2 exactly 0, never negative)
    h = np.concatenate([[1e12], rng.standard_normal(100002) + 5e7])
    np.testing.assert_allclose(cltune.var(dev(queue, h)).get(), h.var(), rtol=1e-9)
    h = rng.standard_normal(65537) + 3e5
    h[::97] = -4e9
    np.testing.assert_allclose(cltune.var(dev(queue, h)).get(), h.var(), rtol=1e-9)
    h = np.full(10007, 0.1, np.float32)
    assert cltune.var(dev(queue, h)).get() == 0 and cltune.std(dev(queue, h)).get() == 0
    assert np.isnan(cltune.var(dev(queue, np.array([1, np.inf], np.float32))).get())
    assert np.isnan(cltune.var(dev(queue, np.array([np.inf, 1], np.float32))).get())
    assert np.isnan(cltune.var(dev(queue, np.array([np.inf, np.inf], np.float32))).get())
    assert np.isnan(cltune.mean(dev(queue, np.array([1, np.nan], np.float32))).get())
    assert np.isnan(cltune.mean(cla.empty(queue, 0, np.float32)).get())
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="ddof"):
            cltune.var(dev(queue, h), ddof=bad)


def test_var_merges_stay_accurate_where_the_shift_drifts(queue, rng):
    """float64 variances against a two-pass reference in long double, on inputs whose
    accumulators start far from the merged mean: a sorted input (every accumulator's shift
    on one side), a ramp on a 1e9 offset, halves a million apart, blocks of different means.
    The merge re-shifts while (c - m)^2 <= 16 v and recentres otherwise (SHIFT_K); with
    Chan's formula at every merge the ramp was 1e-9 off and the sorted input 1.4e-12."""
    if not stats_kernels._fp64(queue.context):
        pytest.skip("the device has no fp64")
    n = 300_007
    cases = {"sorted": np.sort(rng.standard_normal(n)) * 1e3 + 5e6,
             "ramp": np.arange(n, dtype=np.float64) * 1e-3 + 1e9,
             "halves": np.concatenate([rng.standard_normal(n // 2),
                                       1e6 + rng.standard_normal(n - n // 2)]),
             "blocks": np.repeat(rng.standard_normal(301) * 1e4, 1000)[:n]
             + rng.standard_normal(n) * 1e-2}
    for name, h in cases.items():
        hl = h.astype(np.longdouble)
        want = float(((hl - hl.mean()) ** 2).mean())
        got = float(cltune.var(dev(queue, h)).get())
        assert abs(got - want) <= 1e-12 * want, (name, got, want)


def test_count_nonzero_any_all(queue, rng):
    for n in SIZES:
        h = (rng.random(n) < 0.3) * rng.standard_normal(n)
        h = h.astype(np.float32)
        x = dev(queue, h)
        c = cltune.count_nonzero(x)
        assert c.dtype == np.int64 and int(c.get()) == np.count_nonzero(h)
        assert bool(cltune.any(x).get()) == h.any()
        assert bool(cltune.all(x).get()) == h.all()
        b = dev(queue, h != 0)
        assert int(cltune.count_nonzero(b).get()) == np.count_nonzero(h)
        assert cltune.any(b).get().dtype == np.bool_
    assert int(cltune.count_nonzero(dev(queue, np.array([np.nan, 0], np.float32))).get()) == 1
    empty = cla.empty(queue, 0, np.float32)
    assert not cltune.any(empty).get() and cltune.all(empty).get()
    assert cltune.all(dev(queue, np.ones(1000003, np.float32))).get()
    z = np.ones(1000003, np.float32)
    z[999999] = 0
    assert not cltune.all(dev(queue, z)).get()


def test_errors_and_kernel_cache(ctx, queue):
    with pytest.raises(TypeError, match="pyopencl Array"):
        cltune.mean(np.ones(3))
    with pytest.raises(TypeError, match="not supported"):
        cltune.mean(cla.zeros(queue, 3, np.complex64))
    with pytest.raises(ValueError, match="unknown op"):
        stats.kernel("median", ctx, np.float32)
    x = cla.zeros(queue, (4, 4), np.float32)
    with pytest.raises(ValueError, match="non-contiguous"):
        cltune.mean(x[:, 1])
    assert stats.kernel("mean", ctx, np.float32) is stats.kernel("mean", ctx, np.float32)
    knl = stats.kernel("argmax", ctx, np.float32)
    assert knl.explain(1 << 20).level in ("builtin", "derived", "exact", "driver-changed",
                                          "same-device", "shipped", "vendor-default")


def test_every_statistic_has_a_reference_and_tunes(ctx, queue, db_url, storage_url):
    for op in stats.OPS:
        assert callable(getattr(stats.kernel(op, ctx, np.float32), "reference", None)), op
    knl = stats.kernel("var", ctx, np.float32)
    x = dev(queue, np.random.default_rng(5).standard_normal(1000).astype(np.float32) + 50)
    res = knl.tune(x, 1.0, trials=3, timeout=30, db=db_url, storage=storage_url)
    assert res[0].config is not None and res[0].size_class == "2^10"


def test_whole_array_rules_of_numpy_for_nd_inputs(queue, rng):
    """Without axis, numpy gives F-ordered inputs' argmax/argmin as the first extreme in C
    order (on ties that is not the first in memory), and a 2-D array's norm with an ord is a
    matrix norm (cltune/stats/whole.py); an ord with 3+ dimensions is numpy's ValueError."""
    for dt in (np.int32, np.float32, np.uint8):
        for shape in ((100, 31), (7, 3, 257), (2, 1, 9000), (31, 1)):
            h = np.asfortranarray(rng.integers(0, 4, shape).astype(dt))  # many ties
            x = cla.to_device(queue, h)
            assert not x.flags.c_contiguous or h.ndim == 1 or min(shape) == 1
            assert int(cltune.argmax(x).get()) == np.argmax(h), (dt, shape)
            assert int(cltune.argmin(x).get()) == np.argmin(h), (dt, shape)
            got = cltune.argmax(x, keepdims=True)
            assert got.shape == (1,) * h.ndim and int(got.get().ravel()[0]) == np.argmax(h)
    h = np.asfortranarray(rng.standard_normal((40, 50)).astype(np.float32))
    h[[3, 30], [40, 2]] = np.nan  # C order meets (3, 40) first, memory order (30, 2)
    assert int(cltune.argmax(cla.to_device(queue, h)).get()) == np.argmax(h) == 3 * 50 + 40
    for order in ("C", "F"):
        h = np.asarray(rng.standard_normal((37, 23)), order=order)
        x = cla.to_device(queue, h)
        for o in (None, "fro", 1, -1, np.inf, -np.inf):
            np.testing.assert_allclose(cltune.norm(x, o).get(), np.linalg.norm(h, o), rtol=1e-9,
                                       err_msg=f"ord={o} {order}")
            k = cltune.norm(x, o, keepdims=True)
            assert k.shape == np.linalg.norm(h, o, keepdims=True).shape
        for o in (2, -2, "nuc"):
            with pytest.raises(ValueError, match="not supported"):
                cltune.norm(x, o)
    for shape in ((3, 0), (0, 3)):  # numpy 2: 0 (an empty max of non-negative sums)
        for o in (1, np.inf):
            z = cla.to_device(queue, np.zeros(shape))
            assert cltune.norm(z, o).get() == np.linalg.norm(np.zeros(shape), o) == 0
    assert cltune.norm(cla.empty(queue, 0, np.float32), np.inf).get() == 0
    h3 = rng.standard_normal((3, 4, 5))
    for o in (1, np.inf, "fro"):
        with pytest.raises(ValueError, match="Improper number of dimensions"):
            cltune.norm(cla.to_device(queue, h3), o)
        with pytest.raises(ValueError, match="Improper number of dimensions"):
            np.linalg.norm(h3, o)
    np.testing.assert_allclose(cltune.norm(cla.to_device(queue, h3)).get(),
                               np.linalg.norm(h3), rtol=1e-9)
