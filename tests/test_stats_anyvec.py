"""cltune.stats.anyvec (kernels/anyvec.cl): any/all of a whole array on a CPU device in vector
registers, stopping at each chunk's first deciding element, against numpy: every dtype (bool
too), sizes around the vector width, the group and the chunk edges, the deciding element in a
vector, the tail, the last place and across chunks; NaN (true) and -0.0 (false); empty arrays,
offset views, keepdims, n-D C and F arrays; that the path is the one taken on CPU devices (and
the warm call); the call is asynchronous; a driver that crashes on it (the expression path
serves); the kernel under Oclgrind."""

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
from cltune.stats import anyvec
from cltune.stats import api as stats
from cltune.stats.cpuvec import Plan

SIZES = (0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 129, 1000, 4099, 65537, 300007)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(23)


@pytest.fixture(scope="module")
def cpu(info):
    """The test device is a CPU (every test device is, so far): the vector path serves."""
    if info.type != "cpu":
        pytest.skip(f"kernels/anyvec.cl serves CPU devices; the test device is a {info.type}")
    return info


def dev(queue, a):
    return cla.to_device(queue, a if a.flags.f_contiguous else np.ascontiguousarray(a))


def both(queue, h, x=None, **kw) -> tuple[bool, bool]:
    """(cltune.any(x), cltune.all(x)), each checked to be a bool 0-d array."""
    x = dev(queue, h) if x is None else x
    out = []
    for f in (cltune.any, cltune.all):
        r = f(x, **kw)
        assert isinstance(r, cla.Array) and r.shape == () and r.dtype == np.bool_
        out.append(bool(r.get()))
    return out[0], out[1]


def want(h) -> tuple[bool, bool]:
    return bool(np.any(h)), bool(np.all(h))


def dtypes(cpu):
    return [np.dtype(t) for t in anyvec.TYPE_CODES if t != np.float64 or cpu.fp64]


def test_the_vector_path_serves_cpu_devices(queue, cpu, monkeypatch):
    calls = []
    real = anyvec.Call.launch  # both the general call and the warm one (cltune.stats.warm)
    monkeypatch.setattr(anyvec.Call, "launch", lambda c, *a: calls.append(c.zero) or real(c, *a))
    h = np.arange(100, dtype=np.float32)
    x = dev(queue, h)
    assert anyvec.serves(x)
    for _ in range(3):  # the first call keeps a warm one, the next ones take it
        assert both(queue, h, x) == (True, False)
    assert calls == [0, 1] * 3
    r = cltune.get_reducer(queue, "all", np.float32)
    assert not bool(r(x).get()) and calls[-1] == 1
    assert isinstance(r.explain(1 << 20).config, Plan) and r.explain(1 << 20).level == "builtin"
    for dt in dtypes(cpu):
        assert anyvec.serves(dev(queue, np.zeros(7, dt))), dt
    assert anyvec.serves(dev(queue, np.zeros(7, bool)))
    f2 = cla.to_device(queue, np.asfortranarray(h.reshape(10, 10)))
    assert anyvec.serves(f2) and both(queue, None, f2) == (True, False)
    n = len(calls)
    # along an axis: the expression path, numpy's answers
    np.testing.assert_array_equal(cltune.any(x.reshape(10, 10), axis=1).get(),
                                  np.any(h.reshape(10, 10), axis=1))
    assert len(calls) == n
    e = stats.explain("any", queue, np.float32, (1 << 24,))
    assert e.level == "whole" and "anyvec" in str(e), e
    assert "anyvec" in str(stats.explain("all", queue, np.float32, (4, 5), None, "F"))
    assert "anyvec" not in str(stats.explain("all", queue, np.float32, (4, 5), 1))
    assert "anyvec" not in str(cltune.get_reducer(queue, "count_nonzero",
                                                  np.float32).explain(1 << 20))


def test_plan_from_the_device(cpu, device):
    _, d = device
    for dt in dtypes(cpu):
        lanes = anyvec.lanes_for(d, cpu, dt)
        assert lanes in (4, 8, 16)
        for n in (0, 1, 15, 1 << 16, 1 << 20, (1 << 24) + 5):
            p = anyvec.plan(n, lanes, cpu.compute_units, dt.itemsize)
            m = max(1, n)
            assert p.chunk % lanes == 0 and p.items * p.chunk >= m > (p.items - 1) * p.chunk
            assert p.items <= max(1, cpu.compute_units * anyvec.ITEMS_PER_CU)
    assert anyvec.plan(1000, 16, cpu.compute_units, 4).items == 1
    assert anyvec.plan(1 << 24, 16, 2, 4).items == 2 * anyvec.ITEMS_PER_CU


@pytest.mark.parametrize("dt", list(anyvec.TYPE_CODES) + [np.dtype(bool)], ids=str)
def test_every_dtype_and_size_as_numpy(queue, cpu, dt):
    if dt == np.float64 and not cpu.fp64:
        pytest.skip("no fp64")
    lanes = anyvec.lanes_for(queue.device, cpu, np.dtype(np.uint8) if dt == np.bool_ else dt)
    p = anyvec.plan(300007, lanes, cpu.compute_units, dt.itemsize)
    step = lanes * anyvec.ACCUMULATORS
    sizes = SIZES + (step - 1, step, step + 1, p.chunk - 1, p.chunk, p.chunk + 1,
                     2 * p.chunk + 7)
    for n in sizes:
        zeros, ones = np.zeros(n, dt), np.ones(n, dt)
        assert both(queue, zeros) == want(zeros) and both(queue, ones) == want(ones), n
        if n == 0:
            continue
        places = {0, n - 1, n // 2, max(0, n - 3), min(n - 1, step), min(n - 1, p.chunk),
                  min(n - 1, p.chunk - 1)}
        for i in sorted(places):  # the deciding element alone, in a block, the tail, a chunk
            h = zeros.copy()
            h[i] = 1
            assert both(queue, h) == want(h) == (True, n == 1), (n, i)
            h = ones.copy()
            h[i] = 0
            assert both(queue, h) == want(h) == (n > 1 or False, False), (n, i)


def test_nan_is_true_and_negative_zero_false(queue, cpu):
    for dt in [d for d in dtypes(cpu) if d.kind == "f"]:
        for n in (1, 17, 1000, 300007):
            h = np.zeros(n, dt)
            h[n // 2] = np.nan
            assert both(queue, h) == want(h) == (True, n == 1), (dt, n)
            h = np.full(n, np.nan, dt)
            assert both(queue, h) == want(h) == (True, True)
            h[n - 1] = -0.0
            assert both(queue, h) == want(h) == (n > 1, False)
            h = np.full(n, -0.0, dt)
            assert both(queue, h) == want(h) == (False, False)
            h = np.full(n, np.inf, dt)
            h[0] = -np.inf
            assert both(queue, h) == (True, True)
    for dt in [d for d in dtypes(cpu) if d.kind in "iu"]:
        h = np.zeros(1001, dt)
        h[500] = np.iinfo(dt).min or np.iinfo(dt).max
        assert both(queue, h) == want(h) == (True, False), dt


def test_offsets_keepdims_and_nd(queue, cpu, rng):
    h = rng.standard_normal(300007).astype(np.float32)
    h[[4, 999, 150000]] = 0
    x = dev(queue, h)
    for lo, hi in ((5, None), (4, 5), (1, -1), (17, 1000), (999, 1000), (1000, None),
                   (300006, None), (300007, None), (3, 3 + 2 * 4099)):
        v = x[lo:hi]
        assert anyvec.serves(v)
        assert both(queue, None, v) == want(h[lo:hi]), (lo, hi)
    z = dev(queue, np.zeros(1001, np.float32))
    assert both(queue, None, z[7:]) == (False, False)
    for shape in ((7, 11), (3, 5, 67), (1, 1000), (2, 1, 3, 1, 5), (513, 2049)):
        c = np.ones(shape, np.int16)
        c.reshape(-1)[-1] = 0
        for a in (np.ascontiguousarray(c), np.asfortranarray(c)):
            xa = dev(queue, a)
            assert anyvec.serves(xa)
            assert both(queue, None, xa) == want(a) == (True, False), shape
            for f, g in ((cltune.any, np.any), (cltune.all, np.all)):
                k = f(xa, keepdims=True)
                assert k.dtype == np.bool_ and k.shape == g(a, keepdims=True).shape
                assert bool(k.get().ravel()[0]) == bool(g(a))


def test_the_call_is_asynchronous_and_takes_other_queues(ctx, queue, cpu):
    h = np.ones(1 << 20, np.float32)
    h[-1] = 0
    x = dev(queue, h)
    r = cltune.all(x)
    assert len(r.events) == 1 and isinstance(r.events[0], cl.Event)
    assert not bool(r.get())
    ooo = cl.CommandQueue(ctx, queue.device,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    y = x.copy(queue=ooo)
    assert not bool(cltune.all(y, queue=ooo).get(queue=ooo))
    assert bool(cltune.any(x[7:], queue=ooo).get(queue=ooo))
    rs = [cltune.all(x[:-i] if i else x) for i in range(4)]  # back to back, read afterwards
    assert [bool(r.get()) for r in rs] == [False, True, True, True]


def test_a_driver_that_crashes_on_it_leaves_the_expression_path(queue, cpu, monkeypatch,
                                                                 tmp_path):
    with injected(monkeypatch, tmp_path, "abort:check=anyvec") as cache:
        h = np.arange(5003, dtype=np.float32)
        x = dev(queue, h)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not anyvec.serves(x)
            assert both(queue, h, x) == (True, False)
        said = [str(i.message) for i in w if issubclass(i.category, CltuneWarning)]
        assert any("anyvec" in s and "SIGABRT" in s for s in said), said
        assert "anyvec" not in str(stats.explain("any", queue, np.float32, (5003,)))
        assert "check:anyvec" in (cache / "vetted.json").read_text()
        # argmax is vetted on its own: the crash of this check leaves it alone
        assert int(cltune.argmax(x).get()) == 5002


OCLGRIND_MARK = "CLTUNE-ANYVEC-OCLGRIND "
OCLGRIND_SCRIPT = r'''
import numpy as np
from cltune.stats import anyvec
out = {"runs": []}
for dt, lanes in (("<f4", 16), ("|u1", 4), ("<i8", 8)):
    why = anyvec.check(ctx, q, dev, info, dt, lanes)
    out["runs"].append({"dtype": dt, "lanes": lanes, "error": why})
print(MARK + json.dumps(out), flush=True)
'''


@pytest.mark.oclgrind
@pytest.mark.multiprocess
@pytest.mark.slow
def test_the_kernel_is_clean_under_oclgrind():
    """The vetting check's cases (one chunk and several with the finish, tails, a NaN and
    -0.0, all zeros and all ones, an offset view, an empty array) for three dtypes and widths
    under Oclgrind: right answers, no invalid access, no race."""
    res, summary = run_marked(OCLGRIND_SCRIPT, OCLGRIND_MARK)
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong
    assert res.reports == [], res.summary(limit=8)
