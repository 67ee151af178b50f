"""cltune.stats.warm: the warm call of a whole-array statistic. Warm calls give numpy's
answers and skip the general path; a call that differs from a kept one in dtype, size,
queue (and context), memory order or offset is served correctly; a kept launch that no
longer serves (the database read again, the scratch grown) hands over to the general path;
entries go with clear_caches() and keep no input alive; reducer objects share the entries;
bad input keeps its errors."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as clt
import pytest

import cltune
from cltune.families.expr.api import ReductionKernel
from cltune.opencl.caches import clear_caches
from cltune.stats import kernels as stats_kernels
from cltune.stats import warm

#: (function, kernel op, numpy reference) of the statistics with default options
STATS = (
    (cltune.argmax, "argmax", np.argmax),
    (cltune.argmin, "argmin", np.argmin),
    (cltune.mean, "mean", np.mean),
    (cltune.var, "var", np.var),
    (cltune.std, "std", np.std),
    (cltune.norm, "norm2", lambda h: np.linalg.norm(h.astype(np.float64))),
    (cltune.count_nonzero, "count_nonzero", np.count_nonzero),
    (cltune.any, "any", np.any),
    (cltune.all, "all", np.all),
)


def dev(queue, a, **kw):
    return cla.to_device(queue, np.ascontiguousarray(a), **kw)


def same(got, want, dt) -> bool:
    tol = 1e-5 if np.dtype(dt) == np.float32 else 1e-10
    return np.allclose(float(got), float(want), rtol=tol, atol=0)


@pytest.fixture
def general(monkeypatch):
    """Counts calls of the general path (the expression kernel's __call__ and the vector
    kernels' plan)."""
    counts = {"calls": 0}
    real = ReductionKernel.__call__

    def spy(self, *a, **k):
        counts["calls"] += 1
        return real(self, *a, **k)
    monkeypatch.setattr(ReductionKernel, "__call__", spy)
    from cltune.stats import argvec, normvec

    for mod in (argvec, normvec):
        real_call = mod.call

        def spy_call(*a, _real=real_call, **k):
            counts["calls"] += 1
            return _real(*a, **k)
        monkeypatch.setattr(mod, "call", spy_call)
    return counts


def test_warm_calls_give_numpys_answers_without_the_general_path(queue, general):
    rng = np.random.default_rng(5)
    for dt in (np.float32, np.int32):
        h = (rng.standard_normal(4099) * 10).astype(dt)
        x = dev(queue, h)
        for f, op, ref in STATS:
            first = f(x)
            before = general["calls"]
            for _ in range(3):
                got = f(x)
                assert got.shape == () and got.dtype == first.dtype and got.queue is queue
                assert same(got.get(), ref(h), dt), (op, dt)
            assert general["calls"] == before, f"{op} of {np.dtype(dt)} took the general path"
            assert (op, queue, x.dtype, x.size) in warm.calls
        # the scalars of a call reach the kept launch (ddof)
        for ddof in (1, 0, 2):
            assert same(cltune.var(x, ddof=ddof).get(), np.var(h, ddof=ddof), dt)
            assert same(cltune.std(x, ddof=ddof).get(), np.std(h, ddof=ddof), dt)
    b = dev(queue, rng.random(1000) > 0.5)
    for _ in range(3):
        assert int(cltune.count_nonzero(b).get()) == np.count_nonzero(b.get())
        assert bool(cltune.any(b).get()) and not bool(cltune.all(b).get())
        assert int(cltune.argmax(b).get()) == np.argmax(b.get())


def test_another_dtype_size_order_offset_or_queue_is_served_right(queue, device):
    rng = np.random.default_rng(6)
    h = rng.standard_normal(1000).astype(np.float32)
    x = dev(queue, h)
    for _ in range(2):  # kept, then warm
        assert int(cltune.argmax(x).get()) == np.argmax(h)
        assert same(cltune.mean(x).get(), h.mean(), np.float32)
    # same size, other dtype
    d = h.astype(np.float64)
    assert int(cltune.argmax(dev(queue, d)).get()) == np.argmax(d)
    assert same(cltune.mean(dev(queue, d)).get(), d.mean(), np.float64)
    assert cltune.mean(dev(queue, d)).dtype == np.float64
    # other size
    assert int(cltune.argmax(dev(queue, h[:999])).get()) == np.argmax(h[:999])
    # same size, n-D: C order is memory order; F order is not (argmax is a C-order index)
    h2 = rng.standard_normal((40, 25)).astype(np.float32)
    c2, f2 = dev(queue, h2), cla.to_device(queue, np.asfortranarray(h2))
    for _ in range(2):
        assert int(cltune.argmax(c2).get()) == np.argmax(h2)
        assert int(cltune.argmax(f2).get()) == np.argmax(h2)
        assert same(cltune.var(f2).get(), h2.var(), np.float32)
    # same size at an offset
    big = rng.standard_normal(1003).astype(np.float32)
    xb = dev(queue, big)
    for _ in range(2):
        assert int(cltune.argmin(xb[3:]).get()) == np.argmin(big[3:])
        assert same(cltune.mean(xb[3:]).get(), big[3:].mean(), np.float32)
    # another queue of the same context, and another context: results live on it
    _, d0 = device
    q2 = cl.CommandQueue(queue.context, d0)
    ctx3 = cl.Context([d0])
    q3 = cl.CommandQueue(ctx3, d0)
    for q in (q2, q3):
        y = dev(q, h)
        for _ in range(2):
            got = cltune.mean(y)
            assert got.queue is q and got.context.int_ptr == q.context.int_ptr
            assert same(got.get(), h.mean(), np.float32)
            assert int(cltune.argmax(y).get()) == np.argmax(h)
    # queue= picks the queue over the array's
    assert same(cltune.mean(x, queue=q2).get(), h.mean(), np.float32)
    assert cltune.mean(x, queue=q2).queue is q2
    assert ("mean", q3, x.dtype, x.size) in warm.calls


def test_a_launch_that_no_longer_serves_hands_over(queue, device):
    h = np.random.default_rng(7).random(5000).astype(np.float32)
    x = dev(queue, h)
    for _ in range(2):
        cltune.mean(x)
    key = ("mean", queue, x.dtype, x.size)
    kept = warm.calls[key]
    stats_kernels.kernel("mean", queue.context, np.float32).reload()  # as after tuning
    assert kept(x, ()) is None
    assert same(cltune.mean(x).get(), h.mean(), np.float32)
    assert warm.calls[key] is not kept  # the general path kept the new launch
    # a bigger n on the same queue grows the scratch that the kept launch of a small n used
    # (a fresh context: its scratch starts at the small n's size)
    ctx = cl.Context([device[1]])
    q = cl.CommandQueue(ctx, device[1])
    small = dev(q, h[:5])
    for _ in range(2):
        cltune.mean(small)
    kept = warm.calls[("mean", q, small.dtype, 5)]
    big = np.random.default_rng(8).random(1 << 22).astype(np.float32)
    assert same(cltune.mean(dev(q, big)).get(), big.mean(), np.float32)
    st = stats_kernels.kernel("mean", q.context, np.float32)._state(q.device)
    if st.launcher_for(5)[0].plan(5).groups < st.launcher_for(1 << 22)[0].plan(1 << 22).groups:
        assert kept(small, ()) is None
    for _ in range(2):
        assert same(cltune.mean(small).get(), h[:5].mean(), np.float32)


def test_reducers_share_the_warm_calls(queue, general):
    h = np.random.default_rng(9).standard_normal(3000).astype(np.float32)
    x = dev(queue, h)
    for op, ref in (("argmax", np.argmax), ("var", np.var), ("norm", np.linalg.norm),
                    ("mean", np.mean)):
        r = cltune.get_reducer(queue, op, np.float32)
        r(x)
        before = general["calls"]
        assert same(r(x).get(), ref(h), np.float32)
        assert same(getattr(cltune, op)(x).get(), ref(h), np.float32)
        assert general["calls"] == before, op
    # options go the general way, with their meaning
    r = cltune.get_reducer(queue, "var", np.float32)
    assert same(r(x, ddof=1).get(), np.var(h, ddof=1), np.float32)
    assert same(cltune.get_reducer(queue, "norm", np.float32)(x, ord=1).get(),
                np.abs(h).sum(), np.float32)
    with pytest.raises(TypeError, match="this reducer is for float32"):
        r(dev(queue, h.astype(np.float64)))


def test_bad_input_keeps_its_errors_after_warm_calls(queue):
    h = np.arange(20, dtype=np.float32)
    x = dev(queue, h)
    for _ in range(2):
        cltune.argmax(x)
        cltune.var(x)
    strided = dev(queue, np.arange(40, dtype=np.float32))[::2]  # 20 elements, not contiguous
    with pytest.raises(ValueError, match="non-contiguous"):
        cltune.argmax(strided)
    with pytest.raises(ValueError, match="ddof must be a non-negative integer"):
        cltune.var(x, ddof=-1)
    with pytest.raises(TypeError, match="a numpy array needs queue="):
        cltune.var(h)
    with pytest.raises(TypeError, match="takes a pyopencl Array or a numpy array"):
        cltune.var(list(h))
    # a numpy array with queue= is uploaded (as the reducers and scans do), never kept warm
    # (its upload is gone after the call); F order and every statistic, numpy's answers
    m = np.asfortranarray(np.arange(35, dtype=np.float32).reshape(5, 7) % 6)
    before = len(warm.calls) + len(warm.along_calls)
    assert float(cltune.var(h, 1, queue).get()) == pytest.approx(h.var(ddof=1), rel=1e-6)
    assert int(cltune.argmax(m, queue).get()) == int(np.argmax(m))
    np.testing.assert_array_equal(cltune.argmax(m, queue, axis=0).get(), np.argmax(m, axis=0))
    np.testing.assert_allclose(cltune.mean(m, queue, axis=1).get(), m.mean(axis=1), rtol=1e-6)
    assert bool(cltune.any(h[:0], queue).get()) is False
    assert len(warm.calls) + len(warm.along_calls) == before
    with pytest.raises(ValueError, match="empty sequence"):
        cltune.argmax(dev(queue, h[:0]))


def test_entries_go_with_clear_caches_and_keep_no_input_alive(queue):
    pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
    h = np.arange(3001, dtype=np.float32)
    x = dev(queue, h, allocator=pool)
    for f, op, ref in STATS[:6]:
        for _ in range(2):
            got = f(x)
            assert same(got.get(), ref(h), np.float32), op
            assert got.allocator is pool  # the result from the input's allocator, as before
            del got
    assert any(k[1] is queue for k in warm.calls)
    del x
    gc.collect()
    assert pool.active_blocks == 0, "a kept call holds the input or a result"
    clear_caches()
    assert not warm.calls


def test_out_of_order_queues_are_not_kept(queue, device):
    _, d0 = device
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        q = cl.CommandQueue(queue.context, d0, properties=ooo)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    h = np.random.default_rng(10).random(2000).astype(np.float32)
    x = dev(q, h)
    for _ in range(3):
        assert same(cltune.mean(x).get(), h.mean(), np.float32)
        assert int(cltune.argmax(x).get()) == np.argmax(h)
    assert not any(k[1] == q for k in warm.calls)


def test_threads_share_warm_calls(queue):
    rng = np.random.default_rng(11)
    hs = [rng.standard_normal(4096).astype(np.float32) for _ in range(4)]
    xs = [dev(queue, h) for h in hs]
    cltune.var(xs[0]), cltune.argmax(xs[0])
    bad = []

    def work(i):
        for _ in range(50):
            if not same(cltune.var(xs[i]).get(), hs[i].var(), np.float32) or \
                    int(cltune.argmax(xs[i]).get()) != np.argmax(hs[i]):
                bad.append(i)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
