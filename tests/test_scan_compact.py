"""Compaction (#21): cltune.copy_if / remove_if / partition / unique with pyopencl.algorithm's
signatures and answers (extra scalar and array arguments, a preamble, offsets, empty input,
strided views refused), and cltune.nonzero with numpy's; each through the device's own kernel
shape and through the tiled one GPUs take (work-groups staging tiles in __local memory)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.algorithm as alg
import pyopencl.array as cla
import pytest

import cltune
import cltune.families.scan.compact as compact
import cltune.families.scan.nonzero as nonzero_mod

SHAPES = {"device": None, "tiled-8x4": (8, 4, 4), "tiled-64x8": (64, 8, 2),
          "tiled-32x1": (32, 1, 3), "ballots-64x3": (64, 3, 4), "ballots-96x1": (96, 1, 2)}


@pytest.fixture(params=list(SHAPES), autouse=True)
def kernel_shape(request, monkeypatch):
    """Every test once with the device's shape, with tiled ones of awkward sizes, and with
    NVIDIA's warp-ballot scatter (its warp operations emulated: 2 and 3 warps, rows of counts
    that are not a multiple of a warp)."""
    shape = SHAPES[request.param]
    if shape:
        monkeypatch.setattr(compact, "_shape_of", lambda dev, size, ballot=False: shape)
        monkeypatch.setattr(compact, "_use_ballot",
                            lambda dev: 2 if request.param.startswith("ballots") else 0)
    return request.param


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
    # extra arguments may take any name but ary, i, n and clt_*: the kernels' own are clt_*
    for name in ("c", "s", "t", "out", "chunk", "pos", "starts"):
        out, count, _ = cltune.copy_if(x, f"ary[i] > {name}",
                                       extra_args=[(name, np.float32(0.5))])
        assert np.array_equal(out[:int(count.get())].get(), h[h > 0.5]), name


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
    everything = cltune.nonzero(np.ones(777, np.int8), queue=queue)[0]
    assert everything.shape == (777,) and np.array_equal(everything.get(), np.arange(777))
    assert cltune.nonzero(cla.empty(queue, (0,), np.float32))[0].shape == (0,)


def _jax_nonzero(m, size, fill):
    """jax.numpy.nonzero(m, size=size, fill_value=fill) computed by numpy: the first `size`
    positions, then the fill (one value, or one per dimension)."""
    fills = fill if isinstance(fill, tuple) else (fill,) * m.ndim
    out = []
    for w, f in zip(np.nonzero(m), fills, strict=True):
        o = np.full(size, f, np.int64)
        o[:min(size, w.size)] = w[:size]
        out.append(o)
    return out


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_nonzero_of_a_fixed_size_reads_nothing_back(queue, monkeypatch, index_dtype):
    """size= (jax.numpy.nonzero's meaning): exactly `size` entries, the first nonzero positions
    then the fill, for sizes below, at and above the count, 1-3 dimensions, per-dimension
    fills, empty input; no count is read back; int32 indices where asked."""
    monkeypatch.setattr(nonzero_mod, "_read_count",
                        lambda *a: pytest.fail("size= must not read the count back"))
    rng = np.random.default_rng(11)
    for shape, fill in [((1001,), 0), ((1001,), -1), ((37, 41), (-1, -2)), ((3, 5, 7), 9),
                        ((70001,), 7)]:
        m = (rng.random(shape) > 0.6).astype(np.float32)
        count = int(np.count_nonzero(m))
        for size in (0, 1, count - 3, count, count + 5, m.size + 2):
            got = cltune.nonzero(cla.to_device(queue, m), size=size, fill_value=fill,
                                 index_dtype=index_dtype)
            want = _jax_nonzero(m, size, fill)
            assert len(got) == m.ndim
            for g, w in zip(got, want, strict=True):
                assert g.dtype == index_dtype and g.shape == (size,), (shape, size)
                assert np.array_equal(g.get(), w), (shape, size, fill)
    empty = cltune.nonzero(cla.empty(queue, (0,), np.float32), size=4, fill_value=-1,
                           index_dtype=index_dtype)
    assert np.array_equal(empty[0].get(), [-1, -1, -1, -1]) and empty[0].dtype == index_dtype
    (none,) = cltune.nonzero(np.zeros(9, np.int8), queue=queue, size=3)
    assert np.array_equal(none.get(), [0, 0, 0])


def test_nonzero_int32_indices_and_bad_options(queue):
    """index_dtype=np.int32 without size= (numpy's length) and the options' clear errors."""
    rng = np.random.default_rng(12)
    m = rng.random((29, 31, 3)) > 0.5
    got = cltune.nonzero(m, queue=queue, index_dtype=np.int32)
    assert all(g.dtype == np.int32 and np.array_equal(g.get(), w)
               for g, w in zip(got, np.nonzero(m), strict=True))
    x = cla.to_device(queue, m.astype(np.float32))
    for kw, err, msg in [({"size": -1}, ValueError, "non-negative"),
                         ({"size": 2.5}, ValueError, "non-negative"),
                         ({"index_dtype": np.int16}, TypeError, "int64 or np.int32"),
                         ({"index_dtype": "nope"}, TypeError, "index_dtype"),
                         ({"size": 4, "fill_value": (1, 2)}, ValueError, "one per dimension"),
                         ({"size": 4, "fill_value": 1.5}, TypeError, "integers"),
                         ({"size": 4, "fill_value": 2**40, "index_dtype": np.int32},
                          ValueError, "does not fit")]:
        with pytest.raises(err, match=msg):
            cltune.nonzero(x, **kw)


def test_nonzero_index_width_is_checked_against_the_size(monkeypatch):
    """int32 indices are refused for arrays of 2^31 elements or more (checked before any
    launch: no such array is made here)."""
    assert nonzero_mod._index_mode(np.int32, 2**31 - 1) == 2
    assert nonzero_mod._index_mode(np.int64, 2**40) == 1
    with pytest.raises(ValueError, match="below 2\\^31"):
        nonzero_mod._index_mode(np.int32, 2**31)


def test_nonzero_on_an_out_of_order_queue_and_in_a_loop(ctx):
    """The count is read after the kernels that make it (an out-of-order queue orders
    nothing by itself); results of earlier calls stay right while later ones run."""
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        q = cl.CommandQueue(ctx, properties=ooo)
    except cl.Error:
        pytest.skip("no out-of-order queues here")
    rng = np.random.default_rng(5)
    kept = []
    for i in range(6):
        m = rng.random(5000 + 997 * i) > 0.3
        (got,) = cltune.nonzero(cla.to_device(q, m))
        kept.append((got, np.flatnonzero(m)))
    for got, want in kept:
        assert np.array_equal(got.get(), want)


def test_the_prepared_call_keeps_its_scratch_only_where_the_queue_orders_the_calls(ctx, queue):
    """Calls of one key share a prepared call (one entry); on an in-order queue its chunks'
    scratch is kept and reused by calls enqueued back to back without a wait, and each answer
    stays right; an out-of-order queue's calls take scratch of their own."""
    compact._plans.clear()
    rng = np.random.default_rng(21)
    hs = [rng.random(30011).astype(np.float32) for _ in range(4)]
    xs = [cla.to_device(queue, h) for h in hs]
    queue.finish()
    res = [cltune.copy_if(x, "ary[i] > t", extra_args=[("t", np.float32(0.25 * k))])[:2]
           for k, x in enumerate(xs)]
    for k, (h, (out, count)) in enumerate(zip(hs, res, strict=True)):
        c = int(count.get())
        assert np.array_equal(out[:c].get(), h[h > np.float32(0.25 * k)]), k
    assert len(compact._plans) == 1
    # warm calls set the input and the extra arguments anew: arrays at other offsets, values
    lims = [cla.to_device(queue, np.array([9, 0.1 * k, 0.2 + 0.1 * k], np.float32))
            for k in range(3)]
    for k, lim in enumerate(lims):
        for x, h in ((xs[k], hs[k]), (xs[k + 1], hs[k + 1])):
            out, count, _ = cltune.copy_if(x, "ary[i] > lim[0] && ary[i] < lim[1]",
                                           extra_args=[("lim", lim[1:])])
            want = h[(h > np.float32(0.1 * k)) & (h < np.float32(0.2 + 0.1 * k))]
            assert np.array_equal(out[:int(count.get())].get(), want), k
    compact._plans.clear()
    res = [cltune.copy_if(x, "ary[i] > t", extra_args=[("t", np.float32(0.25 * k))])[:2]
           for k, x in enumerate(xs)]
    (plan,) = compact._plans.values()
    assert plan[-1] is not None  # the in-order queue's kept scratch
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        q2 = cl.CommandQueue(ctx, properties=ooo)
    except cl.Error:
        return
    x2 = cla.to_device(q2, hs[0])
    out, count, _ = cltune.copy_if(x2, "ary[i] > 0.5f")
    c = int(count.get())
    assert np.array_equal(out[:c].get(), hs[0][hs[0] > 0.5])
    assert [p[-1] for p in compact._plans.values()].count(None) == 1


def test_empty_and_errors(queue):
    out, count, ev = cltune.copy_if(cla.empty(queue, (0,), np.float32), "ary[i] > 0")
    assert int(count.get()) == 0 and ev is None
    x = cla.to_device(queue, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="// comments"):
        cltune.copy_if(x, "ary[i] > 0 // positive")
    out, count, _ = cltune.copy_if(x, "//CL//\nary[i] > 0")  # pyopencl's marker: dropped
    assert int(count.get()) == 4
    with pytest.raises(TypeError, match="predicate must be a string"):
        cltune.copy_if(x, 3)
    with pytest.raises(TypeError, match="numpy scalar"):
        cltune.copy_if(x, "ary[i] > t", extra_args=[("t", 0.5)])
    with pytest.raises(ValueError, match="reserved"):
        cltune.copy_if(x, "ary[i] > 0", extra_args=[("ary", np.float32(1))])
    with pytest.raises(ValueError, match="0-d"):
        cltune.nonzero(cla.to_device(queue, np.float32(1.0)))
    with pytest.raises(ValueError, match="contiguous"):
        cltune.copy_if(cla.to_device(queue, np.ones(100, np.float32))[::2], "ary[i] > 0")


@pytest.mark.parametrize("dtype", [np.int8, np.float64, np.int64, np.uint16])
def test_many_tiles_and_widths(queue, device, dtype):
    """Lengths that are not multiples of anything over many tiles and chunks, kept fractions
    from none to all, elements of 1 to 8 bytes; partition's two sides."""
    info, _ = device
    if dtype == np.float64 and not info.fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(3)
    for n, frac in ((1, 0.5), (257, 0.0), (4099, 1.0), (70001, 0.3), (200003, 0.9)):
        h = (rng.random(n) * 100).astype(dtype)
        cut = dtype(np.quantile(h, 1 - frac)) if 0 < frac < 1 else (
            dtype(h.max() + 1) if frac == 0 else dtype(0))
        x = cla.to_device(queue, h)
        keep = h >= cut
        t, f, count, _ = cltune.partition(x, "ary[i] >= c", extra_args=[("c", cut)])
        c = int(count.get())
        assert c == keep.sum() and np.array_equal(t[:c].get(), h[keep]), (n, frac)
        assert np.array_equal(f[:n - c].get(), h[~keep]), (n, frac)
        assert np.array_equal(cltune.nonzero(x >= cut)[0].get(), np.flatnonzero(keep))
