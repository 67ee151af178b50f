"""The prepared calls' cache (cltune.opencl.prepared, issue 39): bounded, least recently used
dropped first, safe from threads, emptied by `cltune.clear_caches()` — and the one kind of cache
every family's warm path keeps its prepared calls in."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.opencl.prepared import PreparedCalls


def test_least_recently_used_goes_first():
    dropped = []
    c = PreparedCalls(3, on_drop=dropped.append)
    for k in "abc":
        c.keep(k, k.upper())
    assert c.hit("a") == "A"  # a is now the most recently used
    c.get("b")  # a plain get does not count as a use
    c.touch("b")  # ...touch does
    c.keep("d", "D")
    assert list(c) == ["a", "b", "d"] and dropped == ["C"]
    c.touch("gone")  # a key another thread dropped: nothing happens
    assert c.hit("gone") is None
    c.keep("a", "A2")  # replaced: the old value is told it was dropped
    assert dropped == ["C", "A"] and c["a"] == "A2" and list(c)[-1] == "a"
    c.keep("a", "A2")  # the same value again: nothing dropped
    assert dropped == ["C", "A"]
    with pytest.raises(ValueError):
        PreparedCalls(0)


def test_clear_caches_empties_every_instance_and_a_collected_one_is_forgotten():
    dropped = []
    a, b = PreparedCalls(4, on_drop=dropped.append), PreparedCalls(4)
    a.keep(1, "one")
    b.keep(2, "two")
    cltune.clear_caches()
    assert not a and not b and dropped == ["one"]
    ids = {id(a), id(b)}
    assert ids <= set(PreparedCalls.instances)
    del a, b
    gc.collect()  # (other tests' caches may go too: only these two are asked about)
    assert not ids & set(PreparedCalls.instances)


def test_threads_keeping_and_hitting_at_once_stay_within_the_bound():
    c = PreparedCalls(16)
    errors = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for k in rng.integers(0, 40, 3000):
                k = int(k)
                v = c.hit(k)
                if v is None:
                    c.keep(k, ("v", k))
                elif v != ("v", k):
                    errors.append((k, v))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert len(c) <= 16


def test_every_family_keeps_its_warm_calls_in_prepared_calls(queue):
    """The warm paths' look-ups are PreparedCalls: bounded, least recently used first, and
    emptied by clear_caches (a call after it takes the long way and keeps a new entry)."""
    from cltune.stats import warm

    r = cltune.get_reducer(queue, "sum", np.float32)
    s = cltune.get_scanner(queue, "sum", np.float32)
    rng = np.random.default_rng(0)
    x = cla.to_device(queue, rng.random(4099, dtype=np.float32))
    m = cla.to_device(queue, rng.random((37, 41), dtype=np.float32))
    r(x).get()
    r(m, axis=1).get()
    s(x).get()
    cltune.mean(x).get()
    cltune.mean(m, axis=0).get()
    r.many([x, x[:100]]).get()
    caches = {"1-D": r._hot, "axis": r._axis_hot, "scan": s._hot, "stats": warm.calls,
              "stats along": warm.along_calls}
    for name, c in caches.items():
        assert isinstance(c, PreparedCalls), name
        assert len(c) >= 1, name
    cltune.clear_caches()
    for name, c in caches.items():
        assert len(c) == 0, name
    # the calls still answer, and keep new entries
    np.testing.assert_allclose(r(m, axis=1).get(), m.get().sum(axis=1, dtype=np.float64),
                               rtol=1e-5)
    np.testing.assert_allclose(s(x).get(), np.cumsum(x.get(), dtype=np.float64), rtol=1e-4)
    assert len(r._axis_hot) == 1 and len(s._hot) == 1


def test_more_shapes_than_kept_drop_the_least_used(queue):
    """An application cycling through more shapes than a reducer keeps loses the least
    recently used prepared call, not all of them; every answer stays numpy's."""
    r = cltune.get_reducer(queue, "sum", np.float32)
    size = r._axis_hot.size
    rng = np.random.default_rng(1)
    hot = cla.to_device(queue, rng.random((5, 7), dtype=np.float32))
    want = hot.get().sum(axis=1, dtype=np.float64)
    np.testing.assert_allclose(r(hot, axis=1).get(), want, rtol=1e-5)
    hot_key = (hot.shape, hot.strides, hot.offset, 1, False)
    for rows in range(6, 6 + size + 3):  # more shapes than kept, the hot one used between
        y = cla.to_device(queue, rng.random((rows, 3), dtype=np.float32))
        np.testing.assert_allclose(r(y, axis=1).get(), y.get().sum(axis=1, dtype=np.float64),
                                   rtol=1e-5)
        np.testing.assert_allclose(r(hot, axis=1).get(), want, rtol=1e-5)
    assert hot_key in r._axis_hot
    assert len(r._axis_hot) == size
