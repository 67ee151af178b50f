"""Signed zeros, the same on every path (whole arrays, both axes in C and F order, an axis of
length 1, segments, many(); every float dtype the device has): prod, min and max of negative
zeros are -0.0 as numpy's; a sum of negative zeros only is -0.0, IEEE's -0 + -0 (numpy 2.4 says
+0.0 because its reduction inserts a +0.0 start value, which its maintainers call a bug:
numpy gh-21213, gh-21218; tests/test_kernels.py asserts the same for every strategy), and an
empty sum (an empty segment) is +0.0."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import cltune


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'none.db'}"  # never tuned: builtin configs


def _dtypes(device):
    info = device[0]
    out = [np.float32]
    if info.fp64:
        out.append(np.float64)
    if "cl_khr_fp16" in device[1].extensions:
        out.append(np.float16)
    return out


def _want(f, op, h, **kw):
    """numpy's answer, with IEEE's sign for a non-empty sum of negative zeros only."""
    w = np.asarray(f(h, **kw))
    if op == "sum" and h.size:
        neg = (w == 0) & np.all(np.signbit(h), **kw)
        w = np.where(neg, w.dtype.type(-0.0), w).astype(w.dtype)
    return w


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    assert np.array_equal(np.signbit(got), np.signbit(want)), (what, got, want)
    assert np.array_equal(got, want), what


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_negative_zeros_reduce_to_numpys_zero(queue, device, db, op):
    for dt in _dtypes(device):
        r = cltune.get_reducer(queue, op, dt, db=db)
        f = getattr(np, op)
        for n in (1, 7, 4099):
            h = np.full(n, -0.0, dt)
            _same(r(cla.to_device(queue, h)).get(), _want(f, op, h), (op, dt, n))
        for shape in ((37, 5), (3, 1), (1, 41), (300, 17), (2, 3, 5)):
            h = np.full(shape, -0.0, dt)
            for order in "CF":
                x = cla.to_device(queue, np.asarray(h, order=order))
                for axis in range(len(shape)):
                    _same(r(x, axis=axis).get(), _want(f, op, h, axis=axis),
                          (op, dt, shape, order, axis))
        h = np.full(100, -0.0, dt)
        offs = np.array([0, 3, 3, 50, 100], np.int64)
        if op == "sum":  # an empty segment is the identity, +0.0
            got = r.segments(cla.to_device(queue, h), cla.to_device(queue, offs)).get()
            want = [_want(f, op, h[a:b]) for a, b in zip(offs[:-1], offs[1:], strict=True)]
            _same(got, np.array(want, got.dtype), (op, dt, "segments"))
        if dt != np.float16:
            xs = [cla.to_device(queue, np.full(n, -0.0, dt)) for n in (1, 5, 4096)]
            _same(r.many(xs).get(), np.array([_want(f, op, x.get()) for x in xs]),
                  (op, dt, "many"))


def test_positive_and_mixed_zeros_are_untouched(queue, device, db):
    r = cltune.get_reducer(queue, "sum", np.float32, db=db)
    h = np.array([-0.0, 0.0, -0.0], np.float32)
    _same(r(cla.to_device(queue, h)).get(), np.float32(0.0), "mixed: +0.0")
    h = np.array([-1.5, 1.5, -0.0], np.float32)
    _same(r(cla.to_device(queue, h)).get(), np.sum(h), "cancel")
    h = np.array([-3.25], np.float32)
    _same(r(cla.to_device(queue, h)).get(), np.sum(h), "one")
