"""The warm call (`Reducer.__call__`'s hot path, `Prepared.launch`): correct results under
threads, `wait_for` and pending events, inputs that change between calls, a reused `out=`,
out-of-order queues, and results of earlier calls that later calls must not overwrite."""

import threading
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from cltune import get_reducer
from cltune.core.serving import CltuneWarning
from cltune.families.reduce.config import Config

ONE_PASS = Config("serial", 8, 0, 8, 16, 8, 1, "native")  # the ticket-and-last-group finish
TWO_PASS = Config("serial", 8, 0, 8, 16, 8, 2, "native")


@pytest.fixture(params=["builtin", "one-pass", "two-pass"])
def db(request, tmp_path, info):
    """A database serving the builtin config, or a stored one- or two-pass config at the sizes
    used here (buckets 2^10..2^16)."""
    url = f"sqlite:///{tmp_path / 'hot.db'}"
    if request.param != "builtin":
        from support.tuned import store_bests

        cfg = ONE_PASS if request.param == "one-pass" else TWO_PASS
        store_bests(url, info, {b: cfg for b in range(10, 17)})
    return url


def _reducer(target, db, op="sum"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CltuneWarning)
        return get_reducer(target, op=op, db=db)


def _warm(r, x):
    """Two calls: the first takes the general path and prepares the launch, the next is hot."""
    r(x)
    r(x).get()
    assert x.size in r._hot, "the hot path was not armed"


def _rand(n, seed):
    return np.random.default_rng(seed).integers(-50, 50, n).astype(np.float32)


def test_views_and_computed_arrays_take_the_hot_path(queue, db):
    """Slices, reshapes, `cla.empty`/`zeros` and results of array arithmetic (whose contiguity
    flags pyopencl computes lazily) are served by the hot path too, and right."""
    r = _reducer(queue, db)
    host = _rand(3 * 4096, 7)
    base = cla.to_device(queue, host)
    _warm(r, base[:4096])
    o = cla.empty(queue, (), np.float32)
    cases = {"slice": (base[5:4101], host[5:4101]),
             "reshape": (base[:4096].reshape(64, 64), host[:4096]),
             "row": (base.reshape(3, 4096)[2], host[2 * 4096:]),
             "arith": (base[:4096] + 1, host[:4096] + 1),
             "zeros": (cla.zeros(queue, 4096, np.float32), np.zeros(4096, np.float32))}
    for name, (x, h) in cases.items():
        for kw in ({}, {"out": o}):
            r._last = None
            assert r(x, **kw).get() == h.sum(), name
            assert r._last is not None, f"{name}: not served by the hot path"


def test_held_results_are_not_overwritten(queue, db):
    """Many results held at once, each from another input of the same n; some dropped in
    between (their pool buffers come back and are reused)."""
    r = _reducer(queue, db)
    n = 3000
    hosts = [_rand(n, k) for k in range(40)]
    xs = [cla.to_device(queue, h) for h in hosts]
    _warm(r, xs[0])
    held = {}
    for k, x in enumerate(xs):
        res = r(x)
        if k % 3 != 1:
            held[k] = res
    assert all(res.get() == hosts[k].sum() for k, res in held.items())


def test_input_changes_between_calls(queue, db):
    """The same n from other buffers, offsets and views: each call reads what it is given."""
    r = _reducer(queue, db)
    n = 2048
    big_host = _rand(5 * n + 3, 1)
    big = cla.to_device(queue, big_host)
    other = cla.to_device(queue, _rand(n, 2))
    _warm(r, big[:n])
    o = cla.empty(queue, (), np.float32)
    for off in (0, 1, 7, 0, 2 * n + 3, 3, 0):
        want = big_host[off:off + n].sum()
        assert r(big[off:off + n]).get() == want
        assert r(big[off:off + n], out=o).get() == want
        assert r(other).get() == other.get().sum()
    # a new array of the same n at each call (buffers freed and allocated again)
    for k in range(10):
        h = _rand(n, 100 + k)
        assert r(cla.to_device(queue, h)).get() == h.sum()


def test_out_reused(queue, db):
    """One `out` reused: each call's value is there after it, also between reducers, and it
    takes the general path's checks when it does not fit."""
    r, m = _reducer(queue, db), _reducer(queue, db, "max")
    n = 4096
    hosts = [_rand(n, k) for k in range(12)]
    xs = [cla.to_device(queue, h) for h in hosts]
    _warm(r, xs[0])
    _warm(m, xs[0])
    o = cla.empty(queue, (), np.float32)
    for h, x in zip(hosts, xs, strict=True):
        assert r(x, out=o) is o and len(o.events) == 1, "out accumulates events"
        assert o.get() == h.sum()
        assert m(x, out=o).get() == h.max()
    results = [float(r(x, out=o).get()) for x in xs]  # back to back, read each time
    assert results == [h.sum() for h in hosts]
    for x in xs:  # back to back, read once: the last one wins
        r(x, out=o)
    assert o.get() == hosts[-1].sum()
    with pytest.raises(TypeError, match="0-d"):
        r(xs[0], out=cla.empty(queue, (2,), np.float32))
    with pytest.raises(TypeError, match="0-d"):
        r(xs[0], out=cla.empty(queue, (), np.float64))


def test_wait_for_and_pending_events_are_honoured(ctx, device, queue, db):
    """Work the call must wait for, held back by a user event: an input being written
    (wait_for, and the input's own events) and an `out` being filled on another queue."""
    r = _reducer(queue, db)
    n = 4096
    host = _rand(n, 3)
    x = cla.to_device(queue, host)
    _warm(r, x)
    q2 = cl.CommandQueue(ctx, device[1])

    def gated_copy(value: float) -> tuple[cl.UserEvent, cl.Event]:
        """Write host + value into x on q2 once the returned gate opens."""
        staged = cla.to_device(q2, host + value)
        q2.finish()
        gate = cl.UserEvent(ctx)
        ev = cl.enqueue_copy(q2, x.base_data, staged.base_data, byte_count=4 * n,
                             wait_for=[gate])
        return gate, ev

    gate, ev = gated_copy(1)
    res = r(x, wait_for=[ev])
    _open(gate)
    q2.finish()
    assert res.get() == (host + 1).sum()

    gate, ev = gated_copy(2)  # the same through the input's own events (the hot path)
    x.add_event(ev)
    res = r(x)
    _open(gate)
    q2.finish()
    assert res.get() == (host + 2).sum()
    x.events.clear()

    o = cla.empty(queue, (), np.float32)
    r(x, out=o).get()
    gate = cl.UserEvent(ctx)  # out is filled on q2 after the gate: the call must come after
    fill = cl.enqueue_fill_buffer(q2, o.base_data, np.float32(-1), 0, 4, wait_for=[gate])
    o.add_event(fill)
    r(x, out=o)
    _open(gate)
    q2.finish()
    assert o.get() == (host + 2).sum()


def _open(gate: cl.UserEvent) -> None:
    """Open the gate a little later: a call that did not wait for it has run by then."""
    time.sleep(0.05)
    gate.set_status(cl.command_execution_status.COMPLETE)


def test_threads_on_one_reducer(queue, db):
    """Several threads call one reducer (one queue) on their own inputs, fresh and into
    their own `out`, and hold their results."""
    r = _reducer(queue, db)
    n = 8192
    _warm(r, cla.to_device(queue, _rand(n, 0)))
    errors: list[tuple] = []

    def work(k: int) -> None:
        hosts = [_rand(n, 1000 * k + i) for i in range(6)]
        xs = [cla.to_device(queue, h) for h in hosts]
        o = cla.empty(queue, (), np.float32)
        for _ in range(30):
            held = [r(x) for x in xs]
            for h, x, res in zip(hosts, xs, held, strict=True):
                if res.get() != h.sum() or r(x, out=o).get() != h.sum():
                    errors.append((k, float(res.get()), float(h.sum())))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_out_of_order_queue(ctx, device, db):
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if not device[1].queue_properties & ooo:
        pytest.skip("the device has no out-of-order queues")
    q = cl.CommandQueue(ctx, device[1], properties=ooo)
    r = _reducer(q, db)
    hosts = [_rand(n, n) for n in (1500, 1500, 4096, 1500, 60000)]
    xs = [cla.to_device(q, h) for h in hosts]
    q.finish()
    _warm(r, xs[0])
    o = cla.empty(q, (), np.float32)
    for _ in range(5):
        held = [r(x) for x in xs]
        into = [float(r(x, out=o).get()) for x in xs]
        assert [res.get() for res in held] == [h.sum() for h in hosts]
        assert into == [h.sum() for h in hosts]


def test_dot_and_other_queues_keep_the_general_path(ctx, device, queue, db):
    """The hot path is for one input on the reducer's own queue: a dot reducer still wants two
    arrays after warm calls, and `queue=` calls are right."""
    d = _reducer(queue, db, "dot")
    h = _rand(2000, 5)
    a = cla.to_device(queue, h)
    for _ in range(3):
        assert d(a, a).get() == (h.astype(np.float64) ** 2).sum()
    with pytest.raises(TypeError, match="two arrays"):
        d(a)
    r = _reducer(queue, db)
    _warm(r, a)
    q2 = cl.CommandQueue(ctx, device[1])
    assert r(a, queue=q2).get(queue=q2) == h.sum()
