"""cltune.stats.argvec (kernels/argvec.cl): argmax/argmin of a whole array on a CPU device in
vector registers, against numpy: sizes around the vector width, the accumulator step and the
chunk edges; ties (the first wins), NaNs (the first wins, in the vector part, the tail, the
last element), infinities, all-equal inputs, integer limits, bool, offset views, keepdims,
n-D C and F arrays; that the path is the one taken on CPU devices (and not where it must not
be); an index past 2^31; a driver that crashes on it (the expression path serves); the kernel
under Oclgrind."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from support.faults import injected
from support.oclgrind import run_marked

import cltune
from cltune.core.serving import CltuneWarning
from cltune.stats import api as stats
from cltune.stats import argvec
from cltune.stats import warm as stats_warm

DTYPES = tuple(argvec.TYPE_CODES)
SIZES = (1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099, 1000003)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(22)


@pytest.fixture(scope="module")
def cpu(info):
    """The test device is a CPU (every test device is, so far): the vector path serves."""
    if info.type != "cpu":
        pytest.skip("kernels/argvec.cl serves CPU devices; the test device is a "
                    f"{info.type}")
    return info


def dev(queue, a):
    return cla.to_device(queue, np.ascontiguousarray(a))


def both(queue, h, x=None):
    """(argmax, argmin) through cltune, checked to be int64 0-d device arrays."""
    x = dev(queue, h) if x is None else x
    out = []
    for f in (cltune.argmax, cltune.argmin):
        r = f(x)
        assert isinstance(r, cla.Array) and r.shape == () and r.dtype == np.int64
        out.append(int(r.get()))
    return tuple(out)


def want(h):
    return int(np.argmax(h)), int(np.argmin(h))


def random_of(rng, dt, n):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(n) * 100).astype(dt)
    i = np.iinfo(dt)
    return rng.integers(i.min, i.max, n, dtype=dt, endpoint=True)


def test_the_vector_path_serves_cpu_devices(queue, cpu, monkeypatch):
    calls = []
    real, real_warm = argvec.Call.launch, argvec.Call.warm
    inside: list[int] = []  # the warm call launches inline, or through launch (counted once)

    def launch(c, *a):
        if not inside:
            calls.append(c)
        return real(c, *a)

    def warm(c, *a):
        calls.append(c)
        inside.append(1)
        try:
            return real_warm(c, *a)
        finally:
            inside.pop()

    monkeypatch.setattr(argvec.Call, "launch", launch)
    monkeypatch.setattr(argvec.Call, "warm", warm)
    stats_warm.calls.clear()  # entries kept before the patch would bypass it
    h = np.arange(100, dtype=np.float32)
    x = dev(queue, h)
    assert argvec.serves(x)
    assert both(queue, h, x) == (99, 0)
    assert len(calls) == 2
    assert int(cltune.get_reducer(queue, "argmax", np.float32)(x).get()) == 99
    assert len(calls) == 3
    for dt in DTYPES:
        if dt == np.float64 and not cpu.fp64:
            continue
        assert argvec.serves(dev(queue, np.zeros(7, dt))), dt
    assert argvec.serves(dev(queue, np.zeros(7, bool)))
    # what it does not take goes the other ways, still numpy's answers
    f2 = cla.to_device(queue, np.asfortranarray(h.reshape(10, 10)))
    assert not argvec.serves(f2)
    assert int(cltune.argmax(f2).get()) == np.argmax(h.reshape(10, 10))
    assert int(cltune.argmax(x.reshape(10, 10), axis=1).get()[3]) == 9
    assert len(calls) == 3
    e = stats.explain("argmax", queue, np.float32, (1 << 24,))
    assert e.level == "whole" and "argvec" in str(e), e
    r = cltune.get_reducer(queue, "argmin", np.float32).explain(1 << 20)
    assert isinstance(r.config, argvec.Plan) and r.level == "builtin", r
    assert "argvec" not in str(stats.explain("argmax", queue, np.float32, (4, 5), None, "F"))


def test_plan_from_the_device(cpu, device):
    _, d = device
    lanes = argvec.lanes_for(d, cpu, np.dtype(np.float32))
    assert lanes in (4, 8, 16)
    assert argvec.lanes_for(d, cpu, np.dtype(np.int8)) == lanes  # compared in int lanes
    for n in (1, 15, 1 << 18, 1 << 20, (1 << 24) + 5, 3 << 31):
        p = argvec.plan(n, lanes, cpu.compute_units, 4)
        assert p.chunk % lanes == 0 and p.items * p.chunk >= n > (p.items - 1) * p.chunk
        assert p.items <= max(1, cpu.compute_units * argvec.ITEMS_PER_CU)
        assert p.chunk // lanes <= argvec.MAX_BLOCKS
    assert argvec.plan(1000, lanes, cpu.compute_units, 4).items == 1
    assert argvec.plan(1 << 24, lanes, 2, 4).items == 2 * argvec.ITEMS_PER_CU


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_random_inputs_of_every_size(queue, cpu, rng, dt):
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    sizes = SIZES if dt.itemsize >= 4 else SIZES[:-1] + (100003,)
    for n in sizes:
        h = random_of(rng, dt, n)
        assert both(queue, h) == want(h), (dt, n)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int8, np.uint16, np.int64])
def test_ties_the_first_wins(queue, cpu, rng, dt):
    dt = np.dtype(dt)
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    for n in (1, 2, 16, 17, 33, 4099, 1000003):
        assert both(queue, np.full(n, 7, dt)) == (0, 0), n
    lanes = argvec.lanes_for(queue.device, cpu, dt)
    n = 1000003
    p = argvec.plan(n, lanes, cpu.compute_units, dt.itemsize)
    top, low = (100, -100) if dt.kind != "u" else (200, 1)
    base = np.clip(random_of(rng, dt, n), low + 1 if dt.kind == "u" else -99, 99).astype(dt)
    # the same extreme in two lanes of one block, one lane of two blocks, across accumulators,
    # across a chunk edge, in the tail: each pair's first must win
    edge = p.chunk if p.items > 1 else n - 5
    for a, b in ((lanes * 10 + 3, lanes * 10 + 1), (lanes * 40 + 2, lanes * 41 + 2),
                 (lanes * 51, lanes * 50), (edge, edge - 1), (n - 1, n - 2), (edge + 1, 0)):
        h = base.copy()
        h[[a, b]] = top
        h[[a - 1 if a else 1, n - 3]] = low
        assert both(queue, h) == want(h), (a, b)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nans_the_first_wins_and_infinities(queue, cpu, rng, dt):
    dt = np.dtype(dt)
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    for n in (1, 2, 17, 33, 1000, 1000003):
        h0 = random_of(rng, dt, n)
        places = {0, n - 1, n // 2, max(0, n - 3), min(n - 1, 5)}
        for i in sorted(places):  # one NaN: in a block, in the tail, the very last element
            h = h0.copy()
            h[i] = np.nan
            assert both(queue, h) == (i, i), (n, i)
        if n > 40:
            h = h0.copy()
            h[[n - 1, n // 3, n // 2, 7]] = np.nan  # the first, not the first in memory's lane
            assert both(queue, h) == (7, 7)
            h = h0.copy()
            h[[n // 2, n - 2]] = np.inf
            h[[3, n - 1]] = -np.inf
            assert both(queue, h) == want(h) == (n // 2, 3)
            h[n - 4] = np.nan
            assert both(queue, h) == (n - 4, n - 4)
    assert both(queue, np.full(1001, -np.inf, dt)) == (0, 0)
    assert both(queue, np.full(1001, np.inf, dt)) == (0, 0)
    assert both(queue, np.full(1001, np.nan, dt)) == (0, 0)
    h = np.zeros(1001, dt)
    h[500] = -0.0
    assert both(queue, h) == (0, 0)  # -0.0 == 0.0: the first


@pytest.mark.parametrize("dt", [d for d in DTYPES if d.kind in "iu"], ids=lambda d: d.name)
def test_integer_limits(queue, cpu, dt):
    i = np.iinfo(dt)
    for n in (1, 17, 70001):
        assert both(queue, np.full(n, i.min, dt)) == (0, 0)
        assert both(queue, np.full(n, i.max, dt)) == (0, 0)
        h = np.full(n, i.min, dt)
        h[[n // 2, n - 1]] = i.max
        assert both(queue, h) == want(h)
        h = np.full(n, i.max, dt)
        h[[n - 1, n // 2]] = i.min
        assert both(queue, h) == want(h)
    h = np.array([i.max - 1, i.max, i.min + 1, i.min] * 20, dt)
    assert both(queue, h) == (1, 3)


def test_bool_offsets_keepdims_and_nd(queue, cpu, rng):
    b = np.zeros(100003, bool)
    b[[70000, 90000]] = True
    assert both(queue, b) == (70000, 0)
    assert both(queue, ~b) == (0, 70000)
    h = random_of(rng, np.float32, 1000003)
    x = dev(queue, h)
    for lo, hi in ((5, None), (1, -1), (17, 1000), (999990, None), (1000002, None)):
        v = x[lo:hi]
        assert v.offset == lo * 4 and argvec.serves(v)
        assert both(queue, h[lo:hi], v) == want(h[lo:hi]), (lo, hi)
    i8 = random_of(rng, np.int8, 4099)
    assert both(queue, i8[3:], dev(queue, i8)[3:]) == want(i8[3:])
    for shape in ((7, 11), (3, 5, 67), (1, 1000), (2, 1, 3, 1, 5)):
        c = random_of(rng, np.float64 if cpu.fp64 else np.float32, int(np.prod(shape)))
        c = c.reshape(shape)
        xc = dev(queue, c)
        assert argvec.serves(xc)
        for f, g in ((cltune.argmax, np.argmax), (cltune.argmin, np.argmin)):
            assert int(f(xc).get()) == g(c)
            k = f(xc, keepdims=True)
            assert isinstance(k, cla.Array) and k.dtype == np.int64
            assert k.shape == (1,) * len(shape) and int(k.get().ravel()[0]) == g(c)
            assert k.get().shape == g(c, keepdims=True).shape
    # F order: one axis longer than 1 is C order too (served); more keep the C-order kernel
    col = np.asfortranarray(random_of(rng, np.float32, 999).reshape(999, 1))
    xf = cla.to_device(queue, col)
    assert argvec.serves(xf) and both(queue, col, xf) == want(col)
    f3 = np.asfortranarray(random_of(rng, np.float32, 3 * 5 * 67).reshape(3, 5, 67))
    xf = cla.to_device(queue, f3)
    assert not argvec.serves(xf) and both(queue, f3, xf) == want(f3)
    assert int(cltune.argmax(xf, keepdims=True).get().ravel()[0]) == np.argmax(f3)


def test_the_call_is_asynchronous_and_takes_other_queues(ctx, queue, cpu, rng):
    h = random_of(rng, np.float32, 1 << 20)
    x = dev(queue, h)
    r = cltune.argmax(x)
    assert len(r.events) == 1 and isinstance(r.events[0], cl.Event)
    assert int(r.get()) == np.argmax(h)
    ooo = cl.CommandQueue(ctx, queue.device,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    y = x.copy(queue=ooo)
    assert int(cltune.argmin(y, queue=ooo).get(queue=ooo)) == np.argmin(h)
    assert int(cltune.argmax(x, queue=ooo).get(queue=ooo)) == np.argmax(h)


@pytest.mark.slow
def test_an_index_past_2_31(queue, cpu):
    n = (1 << 31) + (1 << 20)
    if min(d.max_mem_alloc_size for d in queue.context.devices) < n:
        pytest.skip("the device allocates less than 2^31 bytes at once")
    # made on the device: a 2 GiB host array costs a 2-core host 10-25 s of page faults; the
    # fill's pattern 128 bytes wide (PoCL fills a 1-byte pattern a byte at a time: 32 s)
    x = cla.empty(queue, n, np.uint8)
    cl.enqueue_fill_buffer(queue, x.data, np.ones(128, np.uint8), 0, n)
    for i, v in ((n - 7, 200), (n - 3, 200), (12, 200), ((1 << 31) + 5, 201), (n - 2, 201),
                 ((1 << 31) + 9, 0), (n - 1, 0)):
        x[i:i + 1].set(np.array([v], np.uint8))
    assert both(queue, None, x) == ((1 << 31) + 5, (1 << 31) + 9)
    del x


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int16, np.uint32, np.int64])
def test_along_axis_0_of_a_few_columns(queue, cpu, rng, dt, monkeypatch):
    """#40: argmax/argmin along axis 0 of C-ordered blocks of 2..lanes columns (a divisor of
    the lanes) and COLS_MIN+ elements run the vector kernel (argvec.cols): numpy's rows with
    ties (the first wins), each column's first NaN, keepdims, 3-D blocks and a view at an
    offset; columns that do not divide the lanes, small blocks and F order keep the
    expression path, as right."""
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    served = []
    real = argvec.cols
    monkeypatch.setattr(argvec, "cols", lambda *a: served.append(a[4:7]) or real(*a))
    b = argvec.served(dev(queue, np.zeros(4, dt)), queue)
    lanes = b.lanes
    r = argvec.COLS_MIN // 2 + 13
    shapes = [((r, 2), 0, 0), ((r, 4), 0, 3), ((2, r, lanes), 1, 1), ((r, lanes), -2, 0),
              ((r, 3), 0, 0), ((101, 4), 0, 0)]
    for shape, axis, lead in shapes:
        size = int(np.prod(shape))
        flat = random_of(rng, dt, size + lead)
        h = flat[lead:].reshape(shape)
        rows = h.reshape(-1, shape[-1])  # a view: every block's rows one after another
        m = shape[-2]
        if np.dtype(dt).kind == "f":
            rows[[7, m - 5], 0] = np.nan  # column 0: its first NaN wins
        rows[[3, m - 2], -1] = h.max()  # the last column: ties of the max and of the min
        rows[[4, m - 3], -1] = h.min()
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        for f, g in ((cltune.argmax, np.argmax), (cltune.argmin, np.argmin)):
            for keep in (False, True):
                got = f(x, axis=axis, keepdims=keep)
                ref = g(h, axis=axis, keepdims=keep)
                assert got.shape == ref.shape and got.dtype == np.int64
                assert np.array_equal(got.get(), ref), (shape, axis, f.__name__, keep)
    assert {(1, r, 2), (1, r, 4), (2, r, lanes), (1, r, lanes)} <= set(served), served
    assert not any(c == 3 or rows == 101 for _, rows, c in served)
    h = np.asfortranarray(random_of(rng, dt, 4 * r).reshape(r, 4))  # F order: not served
    before = len(served)
    got = cltune.argmax(cla.to_device(queue, h), axis=0).get()
    assert np.array_equal(got, np.argmax(h, axis=0)) and len(served) == before


def test_a_driver_that_crashes_on_it_leaves_the_expression_path(queue, cpu, monkeypatch,
                                                                 tmp_path):
    with injected(monkeypatch, tmp_path, "abort:check=argvec") as cache:
        h = np.arange(5003, dtype=np.float32)[::-1].copy()
        x = dev(queue, h)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not argvec.serves(x)
            assert both(queue, h, x) == (0, 5002)
        said = [str(i.message) for i in w if issubclass(i.category, CltuneWarning)]
        assert any("argvec" in s and "SIGABRT" in s for s in said), said
        assert "argvec" not in str(stats.explain("argmax", queue, np.float32, (5003,)))
        assert "check:argvec" in (cache / "vetted.json").read_text()


OCLGRIND_MARK = "CLTUNE-ARGVEC-OCLGRIND "
OCLGRIND_SCRIPT = r'''
import numpy as np
from cltune.stats import argvec
out = {"runs": []}
for dt, lanes in (("float32", 16), ("float64", 8), ("int8", 16), ("uint16", 4), ("uint64", 8)):
    if dt == "float64" and not info.fp64:
        continue
    why = argvec.check(ctx, q, dev, info, np.dtype(dt).str, lanes)
    out["runs"].append({"dtype": dt, "lanes": lanes, "error": why})
print(MARK + json.dumps(out), flush=True)
'''


@pytest.mark.oclgrind
@pytest.mark.multiprocess
@pytest.mark.slow
def test_the_kernel_is_clean_under_oclgrind():
    """The vetting check's cases (one chunk and several with the finish, tails, ties, limits,
    NaNs, an offset view; argmax and argmin) for five dtypes under Oclgrind: right answers, no
    invalid access, no race."""
    res, summary = run_marked(OCLGRIND_SCRIPT, OCLGRIND_MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert {r["dtype"] for r in summary["runs"]} >= {"float32", "int8", "uint16", "uint64"}
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong
    assert res.reports == [], res.summary(limit=8)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int8, np.uint16, np.int64, np.bool_])
def test_along_few_long_rows(queue, cpu, rng, dt, monkeypatch):
    """#40: argmax/argmin along the contiguous axis of at most ROWS_MAX rows of ROW_MIN+
    elements run the vector kernel a row at a time (argvec.rows): numpy's indices with ties
    (the first wins), NaNs (the first NaN wins), keepdims, 3-D and a row view at an offset;
    more rows, short rows and F order keep the expression path, as right."""
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    served = []
    real = argvec.rows
    monkeypatch.setattr(argvec, "rows", lambda *a: served.append(a[4:6]) or real(*a))
    n = argvec.ROW_MIN + 7
    for shape, axis, lead in (((3, n), 1, 0), ((1, n), -1, 5), ((2, 2, n), 2, 1),
                              ((2, n), 0, 0), ((argvec.ROWS_MAX + 1, 1024), 1, 0)):
        size = int(np.prod(shape))
        flat = (rng.integers(0, 2, size + lead).astype(dt) if dt == np.bool_
                else random_of(rng, dt, size + lead))
        h = flat[lead:].reshape(shape)
        if np.dtype(dt).kind == "f" and shape[0] > 1 and size > n + 3000:
            h[0, ...] = h.max()  # a whole row of ties
            h.reshape(-1)[n + 11] = np.nan  # a NaN in the second row (or block)
            h.reshape(-1)[n + 3000] = np.nan
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        for f, g in ((cltune.argmax, np.argmax), (cltune.argmin, np.argmin)):
            for keep in (False, True):
                got = f(x, axis=axis, keepdims=keep)
                ref = g(h, axis=axis, keepdims=keep)
                assert got.shape == ref.shape and got.dtype == np.int64
                assert np.array_equal(got.get(), ref), (shape, axis, f.__name__, keep)
    assert (3, n) in served and (1, n) in served and (4, n) in served
    assert not any(r == 1024 or r == 2 for _, r in served)  # many short rows, axis 0: not
    # F order: the expression path
    h = np.asfortranarray(random_of(rng, np.int32, 3 * n).reshape(3, n))
    before = len(served)
    got = cltune.argmax(cla.to_device(queue, h), axis=1).get()
    assert np.array_equal(got, np.argmax(h, axis=1)) and len(served) == before
