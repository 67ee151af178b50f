"""Compaction on the tuned scan (#21): cltune.copy_if / remove_if / partition / unique with
pyopencl.algorithm's signatures and answers (extra scalar and array arguments, a preamble,
offsets, empty input), and cltune.nonzero with numpy's."""

from __future__ import annotations

import numpy as np
import pyopencl.algorithm as alg
import pyopencl.array as cla
import pytest

import cltune


@pytest.fixture
def data(queue):
    h = np.random.default_rng(0).random(100003).astype(np.float32)
    return h, cla.to_device(queue, h)


def test_copy_if_matches_numpy_and_pyopencl(queue, data):
    h, x = data
    out, count, _ = cltune.copy_if(x, "ary[i] > t", extra_args=[("t", np.float32(0.5))])
    c = int(count.get())
    assert count.dtype == np.int64 and np.array_equal(out[:c].get(), h[h > 0.5])
    p_out, p_count, _ = alg.copy_if(x, "ary[i] > 0.5")
    assert int(p_count.get()) == c and np.array_equal(p_out[:c].get(), out[:c].get())
    lim = cla.to_device(queue, np.array([0.25, 0.75], np.float32))
    out, count, _ = cltune.copy_if(x[7:], "ary[i] > lim[0] && BELOW(ary[i], lim[1])",
                                   extra_args=[("lim", lim)],
                                   preamble="#define BELOW(a, b) ((a) < (b))")
    k = h[7:]
    assert np.array_equal(out[:int(count.get())].get(), k[(k > 0.25) & (k < 0.75)])


def test_remove_if_partition_unique(queue, data):
    h, x = data
    out, count, _ = cltune.remove_if(x, "ary[i] > 0.5")
    assert np.array_equal(out[:int(count.get())].get(), h[h <= 0.5])
    t, f, count, _ = cltune.partition(x, "ary[i] > 0.5")
    c = int(count.get())
    assert np.array_equal(t[:c].get(), h[h > 0.5])
    assert np.array_equal(f[:h.size - c].get(), h[h <= 0.5])
    u = np.sort(np.random.default_rng(1).integers(0, 100, 5001)).astype(np.int32)
    out, count, _ = cltune.unique(cla.to_device(queue, u))
    assert np.array_equal(out[:int(count.get())].get(), np.unique(u))
    p_out, p_count, _ = alg.unique(cla.to_device(queue, u))
    assert int(p_count.get()) == int(count.get())


def test_nonzero_matches_numpy(queue):
    rng = np.random.default_rng(2)
    for shape in [(1,), (1001,), (37, 41), (3, 5, 7)]:
        m = (rng.random(shape) > 0.7).astype(np.float32)
        got = cltune.nonzero(cla.to_device(queue, m))
        want = np.nonzero(m)
        assert len(got) == len(want)
        assert all(g.dtype == np.int64 and np.array_equal(g.get(), w)
                   for g, w in zip(got, want, strict=True))
    b = rng.random(999) > 0.5
    assert np.array_equal(cltune.nonzero(b, queue=queue)[0].get(), np.nonzero(b)[0])
    assert cltune.nonzero(np.zeros(5, np.int32), queue=queue)[0].shape == (0,)


def test_empty_and_errors(queue):
    out, count, ev = cltune.copy_if(cla.empty(queue, (0,), np.float32), "ary[i] > 0")
    assert int(count.get()) == 0 and ev is None
    x = cla.to_device(queue, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="// comments"):
        cltune.copy_if(x, "ary[i] > 0 // positive")
    with pytest.raises(TypeError, match="predicate must be a string"):
        cltune.copy_if(x, 3)
    with pytest.raises(TypeError, match="numpy scalar"):
        cltune.copy_if(x, "ary[i] > t", extra_args=[("t", 0.5)])
    with pytest.raises(ValueError, match="reserved"):
        cltune.copy_if(x, "ary[i] > 0", extra_args=[("ary", np.float32(1))])
    with pytest.raises(ValueError, match="0-d"):
        cltune.nonzero(cla.to_device(queue, np.float32(1.0)))
