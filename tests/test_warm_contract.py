"""The contract every warm public call keeps (issue 39's acceptance for its prepared calls),
checked on each family's call the same way: the 1-D reducer, reductions along axes, statistics
whole and along an axis, ReductionKernel whole and along an axis, the scanner and cumsum,
compaction and histograms over a given range.

A warm call (its shape, dtype and queue seen before) must still follow what changes between
calls: new data in the same array, a freed buffer handed out again by a pool, another offset,
`out=` reused, `wait_for=` a user event not yet set, a second queue of the context, a cleared
cache, and threads calling the same key at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import cltune


@dataclass(frozen=True)
class WarmCall:
    name: str
    shape: tuple[int, ...]
    make: Callable[[cl.CommandQueue], Callable[..., cla.Array]]  # queue -> call(x, **kw)
    want: Callable[[np.ndarray], np.ndarray]  # numpy's answer, in float64
    out: bool = False  # takes out=
    wait_for: bool = False  # takes wait_for=
    exact: bool = False
    rtol: float = 2e-5
    pick: Callable[[Any], Any] = lambda res: res.get()  # the call's answer, on the host


def _reducer(q, axis=None):
    r = cltune.get_reducer(q, "sum", np.float32)
    return (lambda x, **kw: r(x, **kw)) if axis is None else (
        lambda x, **kw: r(x, axis=axis, **kw))


def _square_sum(q, axis=None):
    knl = cltune.ReductionKernel(q.context, np.float32, neutral="0", reduce_expr="a+b",
                                 map_expr="x[i]*x[i]", arguments="__global const float *x")
    if axis is None:
        return lambda x, **kw: knl(x, queue=q, **kw)
    return lambda x, **kw: knl(x, queue=q, axis=axis, **kw)


def _scanner(q, exclusive=False):
    s = cltune.get_scanner(q, "sum", np.float32)
    return lambda x, **kw: s(x, exclusive=exclusive, **kw)


OFFS = np.array([0, 100, 100, 2000, 4099], np.int64)  # an empty segment among them


def _segments(q):
    r = cltune.get_reducer(q, "sum", np.float32)
    return lambda x, **kw: r.segments(x, OFFS, **kw)


def _scan_segments(q):
    s = cltune.get_scanner(q, "sum", np.float32)
    return lambda x, **kw: s.segments(x, OFFS, **kw)


def _many(q):
    r = cltune.get_reducer(q, "sum", np.float32)
    return lambda x, **kw: r.many([x, x[:1000], x[7:]], **kw)


def _per_segment(f):
    return lambda h: np.concatenate([np.atleast_1d(f(h[a:b]))
                                     for a, b in zip(OFFS[:-1], OFFS[1:], strict=True)])


def _copy_if(q):
    return lambda x: cltune.copy_if(x, "ary[i] > 0.5f")


def _kept(res):
    out, count, _ = res
    return out.get()[:int(count.get())]


CALLS = [
    WarmCall("r(x)", (4099,), _reducer, lambda h: h.sum(), out=True, wait_for=True),
    WarmCall("r(x, axis=1)", (37, 101), lambda q: _reducer(q, 1), lambda h: h.sum(axis=1),
             wait_for=True),
    WarmCall("r(x, axis=0)", (37, 101), lambda q: _reducer(q, 0), lambda h: h.sum(axis=0),
             wait_for=True),
    WarmCall("mean(x, axis=1)", (37, 101), lambda q: lambda x: cltune.mean(x, axis=1),
             lambda h: h.mean(axis=1)),
    WarmCall("argmax(x)", (4099,), lambda q: lambda x: cltune.argmax(x), np.argmax, exact=True),
    WarmCall("norm(x)", (4099,), lambda q: lambda x: cltune.norm(x), np.linalg.norm),
    WarmCall("var(x)", (4099,), lambda q: lambda x: cltune.var(x), np.var),
    WarmCall("ReductionKernel", (4099,), _square_sum, lambda h: (h * h).sum(), out=True,
             wait_for=True),
    WarmCall("ReductionKernel axis=1", (37, 101), lambda q: _square_sum(q, 1),
             lambda h: (h * h).sum(axis=1)),
    WarmCall("scanner(x)", (1001,), _scanner, np.cumsum, out=True, wait_for=True, rtol=1e-4),
    WarmCall("cumsum(x)", (30001,), lambda q: lambda x, **kw: cltune.cumsum(x, **kw), np.cumsum,
             out=True, rtol=1e-4),
    WarmCall("r.segments(x, offsets)", (4099,), _segments,
             _per_segment(lambda v: v.sum()), out=True, wait_for=True),
    WarmCall("r.many([x, x[:1000], x[7:]])", (4099,), _many,
             lambda h: np.array([h.sum(), h[:1000].sum(), h[7:].sum()]), out=True,
             wait_for=True),
    WarmCall("cumsum(x, axis=0)", (37, 101),
             lambda q: lambda x, **kw: cltune.cumsum(x, axis=0, **kw),
             lambda h: np.cumsum(h, axis=0), out=True, rtol=1e-4),
    WarmCall("scanner(x, exclusive=True)", (1001,), lambda q: _scanner(q, True),
             lambda h: np.concatenate([[0.0], np.cumsum(h)[:-1]]), out=True, wait_for=True,
             rtol=1e-4),
    WarmCall("scanner.segments(x, offsets)", (4099,), _scan_segments,
             _per_segment(np.cumsum), out=True, rtol=1e-4),
    WarmCall("copy_if(x, x > 0.5)", (4099,), _copy_if, lambda h: h[h > 0.5], exact=True,
             pick=_kept),
    WarmCall("histogram(x, 64, (0, 1))", (4099,),
             lambda q: lambda x: cltune.histogram(x, 64, (0.0, 1.0)),
             lambda h: np.concatenate(np.histogram(h.astype(np.float32), 64, (0.0, 1.0))),
             exact=True, pick=lambda res: np.concatenate([res[0].get(), res[1].get()])),
    WarmCall("histogram(x 2-D, 100, (0.1, 0.9))", (37, 101),
             lambda q: lambda x: cltune.histogram(x, 100, (0.1, 0.9)),
             lambda h: np.concatenate(np.histogram(h.astype(np.float32), 100, (0.1, 0.9))),
             exact=True, pick=lambda res: np.concatenate([res[0].get(), res[1].get()])),
]
IDS = [c.name for c in CALLS]


def _data(c: WarmCall, seed: int) -> np.ndarray:
    h = np.random.default_rng(seed).random(c.shape).astype(np.float32)
    if c.name.startswith("argmax"):
        h.flat[seed % h.size] = 2.0  # a distinct answer per seed
    return h


def _check(c: WarmCall, got: Any, h: np.ndarray, what: str) -> None:
    g = np.asarray(c.pick(got), np.float64)
    w = np.asarray(c.want(h.astype(np.float64)), np.float64)
    if c.exact:
        assert np.array_equal(g, w), (c.name, what, g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=c.rtol, atol=1e-3, err_msg=f"{c.name}: {what}")


def _warm(c: WarmCall, call: Callable[..., cla.Array], q: cl.CommandQueue) -> None:
    h = _data(c, 99)
    x = cla.to_device(q, h)
    for _ in range(3):  # the first call serves and prepares, the next ones are warm
        _check(c, call(x), h, "warm-up")


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_new_data_in_a_new_or_the_same_array(queue, c):
    call = c.make(queue)
    _warm(c, call, queue)
    x = cla.to_device(queue, _data(c, 1))
    for seed in (2, 3, 4):
        h = _data(c, seed)
        _check(c, call(cla.to_device(queue, h)), h, f"a new array (seed {seed})")
        x.set(h)  # the same array, rewritten
        _check(c, call(x), h, f"the same array rewritten (seed {seed})")


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_a_freed_buffer_handed_out_again(queue, c):
    """A pool gives the next array the buffer the last one freed: the same cl.Buffer (and
    int_ptr) with other contents, which a call keyed on buffers would answer stale."""
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    call = c.make(queue)
    _warm(c, call, queue)
    ptrs = set()
    for seed in (5, 6, 7, 8):
        h = _data(c, seed)
        x = cla.to_device(queue, h, allocator=pool)
        ptrs.add(x.base_data.int_ptr)
        _check(c, call(x), h, f"pooled array (seed {seed})")
        queue.finish()
        del x
    assert len(ptrs) < 4  # the pool did hand a freed buffer out again


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_views_at_other_offsets(queue, c):
    call = c.make(queue)
    _warm(c, call, queue)
    n = int(np.prod(c.shape))
    rows = c.shape[-1] if len(c.shape) > 1 else 1
    big_h = np.random.default_rng(11).random(n + 5 * rows).astype(np.float32)
    big = cla.to_device(queue, big_h)
    for k in (1, 3, 5, 0):
        start = k * rows
        h = big_h[start:start + n].reshape(c.shape)
        v = big[start:start + n].reshape(c.shape)
        assert v.offset == 4 * start
        _check(c, call(v), h, f"a view at element {start}")


@pytest.mark.parametrize("c", [c for c in CALLS if c.out], ids=[c.name for c in CALLS if c.out])
def test_out_reused(queue, c):
    call = c.make(queue)
    _warm(c, call, queue)
    h1, h2 = _data(c, 21), _data(c, 22)
    first = call(cla.to_device(queue, h1))
    o = cla.empty_like(first)
    got1 = call(cla.to_device(queue, h1), out=o)
    assert got1 is o or got1.base_data is o.base_data
    _check(c, o, h1, "out, first")
    got2 = call(cla.to_device(queue, h2), out=o)
    assert got2 is o or got2.base_data is o.base_data
    _check(c, o, h2, "out, second")


@pytest.mark.parametrize("c", [c for c in CALLS if c.wait_for],
                         ids=[c.name for c in CALLS if c.wait_for])
def test_wait_for_a_user_event(ctx, device, c):
    """The call is enqueued behind a user event: it must not run before the event is set (its
    input is written only then, by a copy that waits on the same event)."""
    q = cl.CommandQueue(ctx, device[1])  # its own queue: nothing else waits behind the event
    call = c.make(q)
    _warm(c, call, q)
    x = cla.to_device(q, _data(c, 31))
    call(x)
    q.finish()
    h = _data(c, 32)
    ue = cl.UserEvent(ctx)
    try:
        cp = cl.enqueue_copy(q, x.base_data, h, dst_offset=x.offset, wait_for=[ue],
                             is_blocking=False)
        x.add_event(cp)
        res = call(x, wait_for=[ue])
        last = res.events[-1] if res.events else None
        assert last is not None, c.name
        assert last.command_execution_status != cl.command_execution_status.COMPLETE
    finally:
        ue.set_status(cl.command_execution_status.COMPLETE)
    _check(c, res, h, "behind a user event")
    q.finish()


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_two_queues_of_one_context(ctx, device, c):
    queues = [cl.CommandQueue(ctx, device[1]) for _ in range(2)]
    calls = [c.make(q) for q in queues]
    for q, call in zip(queues, calls, strict=True):
        _warm(c, call, q)
    results = []
    for seed in range(40, 48):  # interleaved, nothing waited for between them
        h = _data(c, seed)
        results.append((calls[seed % 2](cla.to_device(queues[seed % 2], h)), h, seed))
    for res, h, seed in results:
        _check(c, res, h, f"queue {1 + seed % 2}, seed {seed}")


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_a_cleared_cache(queue, c):
    call = c.make(queue)
    _warm(c, call, queue)
    cltune.clear_caches()
    for seed in (51, 52):
        h = _data(c, seed)
        _check(c, call(cla.to_device(queue, h)), h, f"after clear_caches (seed {seed})")
    fresh = c.make(queue)  # and a call made after the clear
    h = _data(c, 53)
    _check(c, fresh(cla.to_device(queue, h)), h, "made after clear_caches")


@pytest.mark.parametrize("c", CALLS, ids=IDS)
def test_threads_calling_the_same_key(queue, c):
    call = c.make(queue)
    _warm(c, call, queue)
    inputs = [(_data(c, 60 + t), t) for t in range(4)]
    errors: list[Any] = []
    barrier = threading.Barrier(len(inputs))

    def work(h: np.ndarray, t: int) -> None:
        try:
            x = cla.to_device(queue, h)
            barrier.wait()
            outs = [call(x) for _ in range(25)]
            for k, res in enumerate(outs):
                _check(c, res, h, f"thread {t}, call {k}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=a) for a in inputs]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not errors, errors[:2]
