"""cltune.stats.warm along an axis: a repeated statistic along an axis launches the family's
prepared launch (`AxisReducer.warm`) without the general path, gives numpy's answers for
every statistic, axis, memory order and keepdims, takes each call's scalars (ddof), offsets,
allocator and input events; hands over to the general path once the database is read again;
its entries go with clear_caches() and keep no input alive."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as clt
import pytest

import cltune
from cltune.families.expr_axis.api import axis_reducer
from cltune.opencl.caches import clear_caches
from cltune.stats import axis as stats_axis
from cltune.stats import kernels as stats_kernels
from cltune.stats import warm

#: (function, keyword arguments, numpy reference of (array, axis, keepdims))
STATS = (
    (cltune.argmax, {}, lambda h, a, k: np.argmax(h, axis=a, keepdims=k)),
    (cltune.argmin, {}, lambda h, a, k: np.argmin(h, axis=a, keepdims=k)),
    (cltune.mean, {}, lambda h, a, k: np.mean(h, axis=a, keepdims=k)),
    (cltune.var, {}, lambda h, a, k: np.var(h, axis=a, keepdims=k)),
    (cltune.var, {"ddof": 1}, lambda h, a, k: np.var(h, axis=a, keepdims=k, ddof=1)),
    (cltune.std, {}, lambda h, a, k: np.std(h, axis=a, keepdims=k)),
    (cltune.norm, {}, lambda h, a, k: np.linalg.norm(h, axis=a, keepdims=k)),
    (cltune.norm, {"ord": 1}, lambda h, a, k: np.linalg.norm(h, ord=1, axis=a, keepdims=k)),
    (cltune.norm, {"ord": np.inf},
     lambda h, a, k: np.linalg.norm(h, ord=np.inf, axis=a, keepdims=k)),
    (cltune.count_nonzero, {}, lambda h, a, k: np.count_nonzero(h, axis=a, keepdims=k)),
    (cltune.any, {}, lambda h, a, k: np.any(h, axis=a, keepdims=k)),
    (cltune.all, {}, lambda h, a, k: np.all(h, axis=a, keepdims=k)),
)


def _check(got: cla.Array, want: np.ndarray, what: str) -> None:
    g = got.get()
    assert g.shape == np.shape(want), what
    if np.asarray(want).dtype.kind == "f":
        assert np.allclose(g, want, rtol=2e-5, atol=1e-6), what
    else:
        assert np.array_equal(g, want), what


@pytest.fixture
def general(monkeypatch):
    """Counts calls of the general path along an axis."""
    counts = {"calls": 0}
    real = stats_axis.along

    def spy(*a, **k):
        counts["calls"] += 1
        return real(*a, **k)
    monkeypatch.setattr(stats_axis, "along", spy)
    return counts


def test_warm_calls_along_axes_give_numpys_answers_without_the_general_path(queue, general):
    rng = np.random.default_rng(21)
    h = (rng.standard_normal((37, 53)) * 4).round().astype(np.float32)  # zeros too
    h3 = rng.standard_normal((5, 7, 9)).astype(np.float32)
    cases = [(h, 0, False), (h, 1, False), (h, -1, True), (np.asfortranarray(h), 0, False),
             (np.asfortranarray(h), 1, True), (h3, (1, 2), False), (h3, 1, True)]
    for arr, axis, keepdims in cases:
        x = cla.to_device(queue, arr)
        for f, kw, ref in STATS:
            if type(axis) is tuple and (f in (cltune.argmax, cltune.argmin) or "ord" in kw):
                continue  # one axis only (argmax), matrix norms
            what = f"{f.__name__}{kw} axis={axis} keepdims={keepdims} {arr.shape} " \
                   f"{'F' if not arr.flags.c_contiguous else 'C'}"
            want = ref(arr, axis, keepdims)
            _check(f(x, **kw, axis=axis, keepdims=keepdims), want, what)
            before = general["calls"]
            for _ in range(2):
                _check(f(x, **kw, axis=axis, keepdims=keepdims), want, what + " (warm)")
            assert general["calls"] == before, f"{what} took the general path again"
    # the scalars of each call reach the kept launch
    x = cla.to_device(queue, h)
    for ddof in (0, 1, 2, 0):
        _check(cltune.var(x, ddof=ddof, axis=0), np.var(h, axis=0, ddof=ddof), f"ddof {ddof}")
    # bool input (reduced as its uint8 view)
    b = rng.random((30, 40)) > 0.5
    xb = cla.to_device(queue, b)
    for _ in range(3):
        _check(cltune.count_nonzero(xb, axis=1), np.count_nonzero(b, axis=1), "bool")
        _check(cltune.argmax(xb, axis=0), np.argmax(b, axis=0), "bool argmax")


def test_offsets_allocators_events_and_other_queues_are_served_right(queue, device):
    rng = np.random.default_rng(22)
    big = rng.standard_normal((60, 50)).astype(np.float32)
    xb = cla.to_device(queue, big)
    for lo in (0, 3, 7, 3):  # one shape (50, 50) at several offsets
        _check(cltune.mean(xb[lo:lo + 50], axis=0), big[lo:lo + 50].mean(axis=0), f"at {lo}")
        _check(cltune.argmax(xb[lo:lo + 50], axis=1), np.argmax(big[lo:lo + 50], axis=1),
               f"argmax at {lo}")
    pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
    xp = cla.to_device(queue, big, allocator=pool)
    for _ in range(3):
        got = cltune.var(xp, axis=1)
        assert got.allocator is pool
        _check(got, big.var(axis=1), "pool")
    # an input still being written by another queue of the context: the call waits for it
    _, d0 = device
    q2 = cl.CommandQueue(queue.context, d0)
    x = cla.to_device(queue, big)
    for k in range(4):
        y = cla.empty(q2, big.shape, np.float32)
        y.fill(np.float32(k + 1), queue=q2)
        _check(cltune.mean(y, queue, axis=0), np.full(50, k + 1, np.float32), f"fill {k}")
    # results live on the queue asked for, entries are per queue
    for q in (queue, q2):
        for _ in range(2):
            got = cltune.mean(x, q, axis=1)
            assert got.queue is q
            _check(got, big.mean(axis=1), "queue")
    assert any(k[1] is q2 for k in warm.along_calls)


def test_warm_launches_sharing_a_build_set_again_what_others_set(queue):
    """A prepared launch along an axis sets only the buffers while its kernels still hold the
    scalars it set (their owner); views of other lengths, other scalars (ddof) and the general
    path (a first call, keepdims) set other values on the same kernels in between, and every
    call still gives numpy's answer."""
    rng = np.random.default_rng(31)
    h = rng.standard_normal((200, 64)).astype(np.float32)
    x = cla.to_device(queue, h)
    views = [(50, 0), (70, 3), (50, 3), (33, 1), (50, 0)]
    for step in range(12):
        rows, lo = views[step % len(views)]
        v, hv = x[lo:lo + rows], h[lo:lo + rows]
        for axis in (1, 0):
            _check(cltune.mean(v, axis=axis), hv.mean(axis=axis), f"{step} mean {axis}")
            _check(cltune.var(v, axis=axis, ddof=step % 2), hv.var(axis=axis, ddof=step % 2),
                   f"{step} var ddof {step % 2} axis {axis}")
        if step % 4 == 3:  # the general path on the same shapes' kernels
            _check(cltune.mean(v, axis=1, keepdims=True), hv.mean(axis=1, keepdims=True),
                   f"{step} keepdims")
            w = cla.to_device(queue, hv[:, :17].copy())
            _check(cltune.mean(w, axis=1), hv[:, :17].mean(axis=1), f"{step} new shape")
            for axis in (1, 0):  # a length never seen: the general path, other dimensions
                _check(cltune.mean(x[:41 + step], axis=axis), h[:41 + step].mean(axis=axis),
                       f"{step} first call of {41 + step} rows, axis {axis}")


def test_a_prepared_launch_sets_its_arguments_again_after_another_launch_of_its_build(queue):
    """`AxisReducer.warm`'s launch keeps the scalars it set while it owns the kernels; a launch
    of the same build for another view (the general path's `enqueue`, the tuner's `launch`)
    takes them, and the prepared launch then sets all of its arguments again."""
    from cltune.families.expr_axis.launch import device_plan

    knl = cltune.ReductionKernel(queue.context, np.float32, neutral="0", reduce_expr="a+b",
                                 map_expr="x[i]", arguments="__global const float *x")
    red = axis_reducer(queue.context, queue.device, knl.spec)
    h = np.random.default_rng(41).random(6400).astype(np.float32)
    x = cla.to_device(queue, h)
    prepared = red.warm(queue, 64, 100, 1)
    assert prepared is not None
    b, _ = red.plan(64, 100, 1)
    other = cla.zeros(queue, 32, np.float32)
    for step in range(4):
        out = cla.zeros(queue, 64, np.float32)
        for _ in range(2):
            ev = prepared([x.base_data, x.offset], out.base_data, 0, None)
            assert ev is not None
            queue.finish()
            _check(out, h.reshape(64, 100).sum(axis=1), f"step {step}")
        # the same build on another view (32 rows of 200), its arguments set by enqueue
        p2 = device_plan(b.config, red.info, 32, 200, 1)
        red.launch(queue, b, p2, [x.base_data, x.offset], 32, 200, 1, other.base_data, 0)
        queue.finish()
        _check(other, h.reshape(32, 200).sum(axis=1), f"step {step}: the other view")


def test_a_prepared_launch_takes_a_scalar_of_the_other_sign(queue):
    """A prepared launch keeps the scalars it set while they compare equal to the call's:
    -0.0 == 0.0, yet x / a gives infinities of opposite signs, so a float's sign counts."""
    knl = cltune.ReductionKernel(queue.context, np.float32, neutral="0", reduce_expr="a+b",
                                 map_expr="x[i] / d",
                                 arguments="const float d, __global const float *x")
    red = axis_reducer(queue.context, queue.device, knl.spec)
    x = cla.to_device(queue, np.random.default_rng(43).random(400).astype(np.float32) + 1)
    prepared = red.warm(queue, 4, 100, 1)
    assert prepared is not None
    for d in (0.0, 0.0, -0.0, -0.0, 0.0, 2.0, 2.0):
        out = cla.zeros(queue, 4, np.float32)
        assert prepared([d, x.base_data, x.offset], out.base_data, 0, None) is not None
        got = out.get()
        if d == 0:
            assert np.all(np.isinf(got)) and np.all(np.signbit(got) == np.signbit(d)), (d, got)
        else:
            _check(out, x.get().reshape(4, 100).sum(axis=1) / d, f"d={d}")


def test_a_launch_that_no_longer_serves_hands_over(queue):
    h = np.random.default_rng(23).random((300, 70)).astype(np.float32)
    x = cla.to_device(queue, h)
    for _ in range(2):
        cltune.mean(x, axis=0)
    key = warm.along_key("mean", x, queue, 0, False)
    kept = warm.along_calls[key]
    knl = stats_kernels.kernel("mean", queue.context, np.float32)
    axis_reducer(queue.context, queue.device, knl.spec, knl.db, knl).reload()  # as tuning does
    assert kept(x, ()) is None
    _check(cltune.mean(x, axis=0), h.mean(axis=0), "after reload")
    assert warm.along_calls[key] is not kept  # the general path kept the new launch


def test_bad_input_keeps_its_errors_after_warm_calls(queue):
    h = np.arange(40, dtype=np.float32).reshape(4, 10)
    x = cla.to_device(queue, h)
    for _ in range(2):
        cltune.var(x, axis=1)
        cltune.argmax(x, axis=0)
    with pytest.raises(ValueError, match="ddof must be a non-negative integer"):
        cltune.var(x, ddof=-1, axis=1)
    with pytest.raises(Exception, match="axis"):
        cltune.var(x, axis=2)
    with pytest.raises(TypeError):
        cltune.argmax(x, axis=(0, 1))
    with pytest.raises(ValueError, match="empty sequence"):
        cltune.argmax(cla.to_device(queue, np.zeros((4, 0), np.float32)), axis=1)
    strided = cla.to_device(queue, np.arange(80, dtype=np.float32).reshape(8, 10))[::2]
    with pytest.raises(ValueError, match="non-contiguous"):
        cltune.var(strided, axis=1)


def test_entries_go_with_clear_caches_and_keep_no_input_alive(queue):
    pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
    h = np.arange(3000, dtype=np.float32).reshape(60, 50)
    x = cla.to_device(queue, h, allocator=pool)
    for _ in range(2):
        got = cltune.mean(x, axis=0)
        _check(got, h.mean(axis=0), "pool")
        del got
    assert any(k[1] is queue for k in warm.along_calls)
    del x
    gc.collect()
    assert pool.active_blocks == 0, "a kept call holds the input or a result"
    clear_caches()
    assert not warm.along_calls


def test_threads_share_warm_calls_along_axes(queue):
    rng = np.random.default_rng(24)
    hs = [rng.standard_normal((64, 33)).astype(np.float32) for _ in range(4)]
    xs = [cla.to_device(queue, h) for h in hs]
    cltune.var(xs[0], axis=0)
    bad = []

    def work(i):
        for _ in range(30):
            if not np.allclose(cltune.var(xs[i], axis=0).get(), hs[i].var(axis=0), rtol=2e-5) \
                    or not np.array_equal(cltune.argmax(xs[i], axis=1).get(),
                                          np.argmax(hs[i], axis=1)):
                bad.append(i)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


def test_an_axis_that_is_no_int_keeps_numpys_error_after_warm_calls(queue):
    """An axis tuple holding a list (unhashable) is not looked up among the kept calls: the
    general path's message, not a TypeError from a dict."""
    x = cla.to_device(queue, np.ones((4, 5), np.float32))
    for _ in range(2):
        cltune.mean(x, axis=(0,))
    with pytest.raises((TypeError, ValueError), match="axis|integer"):
        cltune.mean(x, axis=([0],))
