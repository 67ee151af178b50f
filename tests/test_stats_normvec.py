"""cltune.stats.normvec (kernels/normvec.cl): the L2 norm of a whole float32 array on a CPU
device in vector registers, against a float64 reference: sizes around the vector width, the
accumulator step and the chunk edges; at least as accurate as numpy's float32 answer and
today's expression path; values whose squares overflow or underflow a float (and subnormals);
infinities and NaNs (in the vector part, the tail, the last element, across chunks); empty
arrays, offset views, keepdims, n-D C and F arrays; that the path is the one taken on CPU
devices (and not where it must not be); the call is asynchronous; a driver that crashes on it
(the expression path serves); the kernel under Oclgrind."""

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
from cltune.stats import normvec
from cltune.stats import warm as stats_warm
from cltune.stats.cpuvec import Plan

SIZES = (0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 1000, 4099, 65537, 1000003)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(22)


@pytest.fixture(scope="module")
def cpu(info):
    """The test device is a CPU with fp64 (every test device is, so far): the vector path
    serves."""
    if info.type != "cpu" or not info.fp64:
        pytest.skip("kernels/normvec.cl serves CPU devices with fp64; the test device is a "
                    f"{info.type} (fp64: {info.fp64})")
    return info


def dev(queue, a):
    return cla.to_device(queue, a if a.flags.f_contiguous else np.ascontiguousarray(a))


def reference(h) -> np.float32:
    """The float64 answer, rounded to float32 (overflowing to inf only where the norm does)."""
    with np.errstate(all="ignore"):
        return np.float32(np.sqrt(np.sum(np.square(np.asarray(h, np.float64)))))


def ulp(v) -> float:
    return float(np.spacing(np.float32(abs(v)))) if np.isfinite(v) else 0.0


def got_of(queue, h, x=None, **kw) -> float:
    """cltune.norm(x) (x uploaded from h unless given), checked to be a float32 0-d array."""
    x = dev(queue, h) if x is None else x
    r = cltune.norm(x, **kw)
    assert isinstance(r, cla.Array) and r.shape == () and r.dtype == np.float32
    return float(r.get())


def close(got, want) -> bool:
    """Correctly rounded (half an ulp of float32, with room for the double sum's error)."""
    if np.isnan(want):
        return bool(np.isnan(got))
    if not np.isfinite(want) or want == 0:
        return got == want
    return abs(got - float(want)) <= 0.5001 * ulp(want)


def test_the_vector_path_serves_cpu_devices(queue, cpu, monkeypatch):
    calls = []
    real, real_warm = normvec.Call.launch, normvec.Call.warm
    inside: list[int] = []  # the warm call launches inline, or through launch (counted once)

    def launch(c, *a):
        if not inside:
            calls.append(c.n)
        return real(c, *a)

    def warm(c, *a):
        calls.append(c.n)
        inside.append(1)
        try:
            return real_warm(c, *a)
        finally:
            inside.pop()

    monkeypatch.setattr(normvec.Call, "launch", launch)
    monkeypatch.setattr(normvec.Call, "warm", warm)
    stats_warm.calls.clear()  # entries kept before the patch would bypass it
    h = np.arange(100, dtype=np.float32)
    x = dev(queue, h)
    assert normvec.serves(x)
    for kw in ({}, {"ord": 2}, {"ord": None}):
        assert close(got_of(queue, h, x, **kw), reference(h))
    assert len(calls) == 3
    assert close(float(cltune.get_reducer(queue, "norm", np.float32)(x).get()), reference(h))
    assert len(calls) == 4
    # any C or F n-D array: memory order does not change a sum of squares
    f2 = cla.to_device(queue, np.asfortranarray(h.reshape(10, 10)))
    assert normvec.serves(f2) and normvec.serves(x.reshape(4, 25))
    assert close(float(cltune.norm(f2).get()), reference(h))
    assert len(calls) == 5
    # what it does not take goes the other ways, still numpy's answers
    assert not normvec.serves(dev(queue, np.ones(7, np.int32)))
    assert not normvec.serves(dev(queue, np.ones(7, np.float64)))
    if cpu.fp64:
        d = np.linspace(-3, 3, 101)
        assert float(cltune.norm(dev(queue, d)).get()) == pytest.approx(np.linalg.norm(d))
    assert float(cltune.norm(x, 1).get()) == pytest.approx(np.abs(h).sum())
    assert float(cltune.norm(x, np.inf).get()) == 99
    r = cltune.norm(x.reshape(10, 10), axis=1).get()
    np.testing.assert_allclose(r, np.linalg.norm(h.reshape(10, 10), axis=1), rtol=1e-6)
    assert float(cltune.norm(f2, "fro").get()) == pytest.approx(np.linalg.norm(h), rel=1e-6)
    with pytest.raises(ValueError):
        cltune.norm(x.reshape(10, 10), 2)  # a matrix 2-norm, as before
    assert len(calls) == 5
    e = stats.explain("norm", queue, np.float32, (1 << 24,))
    assert e.level == "whole" and "normvec" in str(e), e
    assert "normvec" in str(stats.explain("norm", queue, np.float32, (4, 5), None, "F"))
    assert "normvec" not in str(stats.explain("norm", queue, np.float32, (1 << 20,), None,
                                              "C", 1))
    assert "normvec" not in str(stats.explain("norm", queue, np.float32, (4, 5), 1))
    r = cltune.get_reducer(queue, "norm", np.float32).explain(1 << 20)
    assert isinstance(r.config, Plan) and r.config.kernel == "normvec", r
    assert r.level == "builtin", r
    # the other statistics' reducers keep their kernels (norm of float64: the expression's)
    assert "normvec" not in str(cltune.get_reducer(queue, "mean", np.float32).explain(1 << 20))
    if cpu.fp64:
        e64 = cltune.get_reducer(queue, "norm", np.float64).explain(1 << 20)
        assert not isinstance(e64.config, Plan), e64


def test_plan_from_the_device(cpu, device):
    _, d = device
    lanes = normvec.lanes_for(d, cpu)
    assert lanes in (4, 8, 16)
    for n in (0, 1, 15, 1 << 16, 1 << 18, 1 << 20, (1 << 24) + 5, 3 << 31):
        p = normvec.plan(n, lanes, cpu.compute_units)
        assert p.kernel == "normvec" and p.accumulators == normvec.ACCUMULATORS
        m = max(1, n)  # an empty array: one empty chunk
        assert p.chunk % lanes == 0 and p.items * p.chunk >= m > (p.items - 1) * p.chunk
        assert p.items <= max(1, cpu.compute_units * normvec.ITEMS_PER_CU)
    assert normvec.plan(1000, lanes, cpu.compute_units).items == 1
    assert normvec.plan(0, lanes, cpu.compute_units).items == 1
    assert normvec.plan(1 << 24, lanes, 2).items == 2 * normvec.ITEMS_PER_CU


def test_random_inputs_of_every_size_as_accurate_as_numpy_and_the_expression(ctx, queue, cpu,
                                                                             rng):
    lanes = normvec.lanes_for(queue.device, cpu)
    step = lanes * normvec.ACCUMULATORS
    p = normvec.plan(1000003, lanes, cpu.compute_units)
    sizes = SIZES + (step - 1, step, step + 1, 3 * step + lanes - 1, p.chunk - 1, p.chunk + 1,
                     2 * p.chunk + 7)
    expr = stats.kernel("norm2", ctx, np.float32)
    for n in sizes:
        for scale in (1.0, 100.0):
            h = (rng.standard_normal(n) * scale).astype(np.float32)
            want = reference(h)
            got = got_of(queue, h)
            assert close(got, want), (n, scale, got, want)
            err = abs(got - float(want))
            assert err <= abs(float(np.linalg.norm(h)) - float(want)), (n, "numpy")
            x = dev(queue, h)
            assert err <= abs(float(expr(x).get()) - float(want)) + 1e-3 * ulp(want), (n, "expr")
    assert got_of(queue, np.zeros(0, np.float32)) == 0.0
    assert got_of(queue, np.zeros(1003, np.float32)) == 0.0
    h = np.full(1000003, -1.5, np.float32)  # all equal: no cancellation, exactly 1.5 sqrt(n)
    assert close(got_of(queue, h), reference(h))


def test_huge_and_tiny_values_neither_overflow_nor_underflow(queue, cpu, rng):
    for n in (1, 2, 17, 1000, 1000003):
        base = rng.standard_normal(n).astype(np.float32)
        for scale in (1e30, 1e-30, 3e18, 1e-20):  # squares beyond float32's range, both ways
            h = (base * np.float32(scale)).astype(np.float32)
            want = reference(h)
            assert np.isfinite(want) and want > 0
            got = got_of(queue, h)
            assert close(got, want), (n, scale, got, want)
        h = np.full(n, 1e30, np.float32)
        h[::3] = np.float32(1e-30)
        assert close(got_of(queue, h), reference(h))
    # subnormal inputs (the device keeps them: CPU runtimes do)
    for v in (1e-40, 1.4e-45):
        h = np.full(1001, v, np.float32)
        assert close(got_of(queue, h), reference(h)), v
    # a norm beyond float32 is inf, as the float64 answer rounded is
    h = np.full(1000, 3e38, np.float32)
    assert got_of(queue, h) == np.inf == reference(h)
    h = np.array([3e38, 3e38], np.float32)  # sqrt(2) * 3e38 > FLT_MAX
    assert got_of(queue, h) == np.inf
    h = np.array([3e38, 1e38], np.float32)  # squares overflow float32, the norm does not
    assert close(got_of(queue, h), reference(h)) and np.isfinite(reference(h))


def test_infinities_and_nans_as_numpy(queue, cpu, rng):
    lanes = normvec.lanes_for(queue.device, cpu)
    for n in (1, 2, 17, 33, 1000, 1000003):
        h0 = rng.standard_normal(n).astype(np.float32)
        p = normvec.plan(n, lanes, cpu.compute_units)
        places = {0, n - 1, n // 2, max(0, n - 3), min(n - 1, 5), min(n - 1, p.chunk)}
        for i in sorted(places):  # in a block, in the tail, the last element, a chunk's first
            for bad, want in ((np.inf, np.inf), (-np.inf, np.inf), (np.nan, np.nan)):
                h = h0.copy()
                h[i] = bad
                got = got_of(queue, h)
                assert close(got, want), (n, i, bad, got)
                with np.errstate(all="ignore"):
                    assert close(got, np.float32(np.linalg.norm(h))), (n, i, bad)
        if n > 40:
            h = h0.copy()
            h[[3, n - 1]] = (np.inf, np.nan)  # inf and NaN, in different chunks or lanes: NaN
            assert np.isnan(got_of(queue, h))
            h[[3, n - 1]] = (np.nan, -np.inf)
            assert np.isnan(got_of(queue, h))
            h = h0.copy()
            h[[n // 2, n - 2]] = (np.inf, -np.inf)
            assert got_of(queue, h) == np.inf
    assert got_of(queue, np.full(1001, -np.inf, np.float32)) == np.inf
    assert np.isnan(got_of(queue, np.full(1001, np.nan, np.float32)))


def test_offsets_keepdims_and_nd(queue, cpu, rng):
    h = rng.standard_normal(1000003).astype(np.float32)
    x = dev(queue, h)
    for lo, hi in ((5, None), (1, -1), (17, 1000), (999990, None), (1000002, None),
                   (1000003, None), (3, 3 + 2 * 4099)):
        v = x[lo:hi]
        assert v.offset == lo * 4 and normvec.serves(v)
        assert close(got_of(queue, h[lo:hi], v), reference(h[lo:hi])), (lo, hi)
    for shape in ((7, 11), (3, 5, 67), (1, 1000), (2, 1, 3, 1, 5), (513, 2049)):
        c = rng.standard_normal(int(np.prod(shape))).astype(np.float32).reshape(shape)
        for a in (np.ascontiguousarray(c), np.asfortranarray(c)):
            xa = dev(queue, a)
            assert normvec.serves(xa)
            want = reference(a)
            assert close(float(cltune.norm(xa).get()), want), (shape, a.flags.f_contiguous)
            k = cltune.norm(xa, keepdims=True)
            assert isinstance(k, cla.Array) and k.dtype == np.float32
            assert k.shape == (1,) * len(shape) == np.linalg.norm(a, keepdims=True).shape
            assert close(float(k.get().ravel()[0]), want)
    k = cltune.norm(x, 2, keepdims=True)
    assert k.shape == (1,) and close(float(k.get()[0]), reference(h))


def test_the_call_is_asynchronous_and_takes_other_queues(ctx, queue, cpu, rng):
    h = rng.standard_normal(1 << 20).astype(np.float32)
    x = dev(queue, h)
    r = cltune.norm(x)
    assert len(r.events) == 1 and isinstance(r.events[0], cl.Event)
    assert close(float(r.get()), reference(h))
    ooo = cl.CommandQueue(ctx, queue.device,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    y = x.copy(queue=ooo)
    assert close(float(cltune.norm(y, queue=ooo).get(queue=ooo)), reference(h))
    assert close(float(cltune.norm(x[7:], queue=ooo).get(queue=ooo)), reference(h[7:]))
    # calls back to back on one queue, results read afterwards
    rs = [cltune.norm(x[i:]) for i in range(4)]
    assert all(close(float(r.get()), reference(h[i:])) for i, r in enumerate(rs))


def test_mean_norm_and_var_along_axis_0_of_a_few_columns(queue, cpu, rng, monkeypatch):
    """#40: the float32 mean and L2 norm along axis 0 of C-ordered blocks of 2..lanes columns
    (a divisor of the lanes) and COLS_MIN+ elements run the vector kernel (normvec.cols):
    within 2 float32 ulps of the float64 reference with huge values, an infinity and a NaN in
    a column, keepdims, 3-D blocks and a view at an offset; var and std with ddof 0 and 1
    (normvec.var_cols) within 4 ulps with a mean far from the spread, a first row far from
    the mean, outliers, an infinity and a NaN; 3 columns, small blocks, float64 and F order
    keep the expression path, as right."""
    served = []
    real = normvec.cols
    monkeypatch.setattr(normvec, "cols", lambda *a: served.append(a[4:7]) or real(*a))
    lanes = normvec.served(dev(queue, np.zeros(4, np.float32)), queue).lanes
    r = normvec.COLS_MIN // 2 + 13
    for shape, axis, lead in (((r, 2), 0, 0), ((r, 4), 0, 3), ((2, r, lanes), 1, 1),
                              ((r, lanes), -2, 0), ((r, 3), 0, 0), ((101, 4), 0, 0)):
        size = int(np.prod(shape))
        flat = rng.standard_normal(size + lead).astype(np.float32) * np.float32(1e3)
        h = flat[lead:].reshape(shape)
        rows = h.reshape(-1, shape[-1])
        m = shape[-2]
        rows[[5, m - 4], 0] = np.float32(3e38)  # column 0: squares and sums past FLT_MAX
        rows[9, -1] = np.inf
        if shape[-1] > 2:
            rows[m - 2, 1] = np.nan
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        h64 = h.astype(np.float64)
        with np.errstate(all="ignore"):
            for f, ref in ((cltune.mean, np.mean(h64, axis=axis, keepdims=True)),
                           (cltune.norm, np.sqrt(np.sum(h64 * h64, axis=axis, keepdims=True)))):
                want = ref.astype(np.float32)
                for keep in (False, True):
                    got = f(x, axis=axis, keepdims=keep)
                    w = want if keep else np.squeeze(want, axis=axis)
                    assert got.shape == w.shape and got.dtype == np.float32
                    g = got.get()
                    ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (
                        np.abs(g - w) <= 2 * np.spacing(np.abs(w)))
                    assert ok.all(), (shape, axis, f.__name__, keep, g, w)
    assert {(1, r, 2), (1, r, 4), (2, r, lanes), (1, r, lanes)} <= set(served), served
    assert not any(c == 3 or rows_ == 101 for _, rows_, c in served)
    before = len(served)
    var_served = []
    real_var = normvec.var_cols
    monkeypatch.setattr(normvec, "var_cols",
                        lambda *a: var_served.append(a[5:8]) or real_var(*a))
    long = 2 * normvec.COLS_MIN + 5
    for shape, axis, lead in (((r, 4), 0, 1), ((2, r, lanes), 1, 0), ((r, 2), -2, 0),
                              ((3, long), 1, 2)):  # the last: three long rows
        size = int(np.prod(shape))
        flat = (rng.standard_normal(size + lead) * 3 + 1e4).astype(np.float32)  # mean >> std
        h = flat[lead:].reshape(shape)
        rows = h.reshape(-1, shape[-1]) if axis != 1 or len(shape) == 3 else h.T
        rows[0, 0] = np.float32(-1e6)  # a first row far from the mean: the shift
        rows[[7, shape[axis] // 2], 1] = np.float32(3e5)
        if rows.shape[1] > 3:
            rows[5, 2] = np.inf  # numpy's var of a column with an infinity or a NaN: NaN
            rows[9, 3] = np.nan
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        h64 = h.astype(np.float64)
        for f, g in ((cltune.var, np.var), (cltune.std, np.std)):
            for ddof in (0, 1):
                with np.errstate(all="ignore"):
                    want = g(h64, axis=axis, ddof=ddof).astype(np.float32)
                got = f(x, axis=axis, ddof=ddof).get()
                ok = (np.isnan(got) & np.isnan(want)) | (
                    np.abs(got - want) <= 4 * np.spacing(np.abs(want)))
                assert got.dtype == np.float32 and ok.all(), (shape, f.__name__, ddof, got, want)
    assert {(1, r, 4), (2, r, lanes), (1, r, 2), (3, long, 1)} <= set(var_served), var_served
    before = len(served)
    x = cla.to_device(queue, rng.standard_normal((3, long)).astype(np.float32))
    cltune.mean(x, axis=1)  # the mean along long rows keeps the expression path
    assert len(served) == before
    h = np.asfortranarray(rng.standard_normal((r, 4)).astype(np.float32))  # F order: not
    got = cltune.mean(cla.to_device(queue, h), axis=0).get()
    assert np.allclose(got, h.astype(np.float64).mean(axis=0), rtol=1e-6)
    if cpu.fp64:
        h = rng.standard_normal((r, 4))  # float64: not
        got = cltune.mean(cla.to_device(queue, h), axis=0).get()
        assert np.allclose(got, h.mean(axis=0), rtol=1e-12)
    assert len(served) == before


def test_statistics_along_short_rows(queue, cpu, rng, monkeypatch):
    """#40: the float32 mean, L2 norm, var and std along a last axis of 2..16 elements (many
    short rows, ROWS_MIN+ elements) run clt_normvec_rows<L>: as numpy within a few float32
    ulps of the float64 reference (var: numpy's two passes, with a mean far from the spread),
    an infinity and a NaN in a row, huge values in the norm, ddof 0, 1 and the row's length
    (inf / NaN as numpy), keepdims, 3-D, a view at an offset; small arrays, float64 and rows
    of 17 keep the expression path, as right."""
    served = []
    real = normvec.rows
    monkeypatch.setattr(normvec, "rows", lambda *a: served.append(a[5:7]) or real(*a))
    for length, lead, shape3 in ((2, 0, False), (3, 1, True), (4, 0, False), (5, 3, False),
                                 (7, 0, True), (8, 1, False), (13, 0, False), (16, 2, False)):
        nrows = normvec.ROWS_MIN // length + 7
        shape = (3, -(-nrows // 3), length) if shape3 else (nrows, length)
        size = int(np.prod(shape))
        flat = (rng.standard_normal(size + lead) * 3 + 1e3).astype(np.float32)
        h = flat[lead:].reshape(shape)
        rows = h.reshape(-1, length)
        rows[5, 0] = np.inf
        rows[9, length - 1] = np.nan
        rows[11] = np.float32(3e38)  # the norm's squares past FLT_MAX
        x = cla.to_device(queue, flat)[lead:].reshape(shape)
        h64 = h.astype(np.float64)
        cases = [(cltune.mean, lambda a, k: np.mean(a, axis=-1, keepdims=k), {}),
                 (cltune.norm, lambda a, k: np.sqrt(np.sum(a * a, axis=-1, keepdims=k)), {})]
        for ddof in (0, 1, length):
            cases += [(cltune.var, lambda a, k, d=ddof: np.var(a, axis=-1, ddof=d, keepdims=k),
                       {"ddof": ddof}),
                      (cltune.std, lambda a, k, d=ddof: np.std(a, axis=-1, ddof=d, keepdims=k),
                       {"ddof": ddof})]
        for f, ref, kw in cases:
            for keep in (False, True):
                with np.errstate(all="ignore"):
                    want = ref(h64, keep).astype(np.float32)
                got = f(x, axis=-1, keepdims=keep, **kw)
                assert got.shape == want.shape and got.dtype == np.float32
                g = got.get()
                # the mean: a float sum's rounding (numpy's too), len ulps of the magnitude
                slack = 2 * length * np.finfo(np.float32).eps * np.mean(
                    np.abs(h64), axis=-1, keepdims=keep) if f is cltune.mean else 0.0
                ok = (g == want) | (np.isnan(g) & np.isnan(want)) | (
                    np.abs(g - want) <= 8 * np.spacing(np.abs(want)) + slack)
                assert ok.all(), (length, f.__name__, kw, keep, g[~ok][:4], want[~ok][:4])
        assert served and served[-1][1] == length, (length, served[-1:])
    before = len(served)
    small = rng.standard_normal((100, 4)).astype(np.float32)
    wide = rng.standard_normal((normvec.ROWS_MIN // 17 + 1, 17)).astype(np.float32)
    for h in (small, wide, small.astype(np.float64)):
        got = cltune.var(cla.to_device(queue, h), axis=-1).get()
        assert np.allclose(got, h.astype(np.float64).var(axis=-1), rtol=1e-5)
    assert len(served) == before


def test_a_driver_that_crashes_on_it_leaves_the_expression_path(queue, cpu, monkeypatch,
                                                                 tmp_path):
    with injected(monkeypatch, tmp_path, "abort:check=normvec") as cache:
        h = np.arange(5003, dtype=np.float32)
        x = dev(queue, h)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not normvec.serves(x)
            assert close(got_of(queue, h, x), reference(h))
        said = [str(i.message) for i in w if issubclass(i.category, CltuneWarning)]
        assert any("normvec" in s and "SIGABRT" in s for s in said), said
        assert "normvec" not in str(stats.explain("norm", queue, np.float32, (5003,)))
        assert "check:normvec" in (cache / "vetted.json").read_text()
        # argmax is vetted on its own: the crash of the norm's check leaves it alone
        assert int(cltune.argmax(x).get()) == 5002


OCLGRIND_MARK = "CLTUNE-NORMVEC-OCLGRIND "
OCLGRIND_SCRIPT = r'''
import numpy as np
from cltune.stats import normvec
out = {"runs": []}
if info.fp64:
    for lanes in (16, 4):
        why = normvec.check(ctx, q, dev, info, lanes)
        out["runs"].append({"lanes": lanes, "error": why})
print(MARK + json.dumps(out), flush=True)
'''


@pytest.mark.oclgrind
@pytest.mark.multiprocess
@pytest.mark.slow
def test_the_kernel_is_clean_under_oclgrind():
    """The vetting check's cases (one chunk and several with the finish, tails, huge and tiny
    values, an infinity and a NaN, an offset view, an empty array) for two widths under
    Oclgrind: right answers, no invalid access, no race."""
    res, summary = run_marked(OCLGRIND_SCRIPT, OCLGRIND_MARK)
    assert res.returncode == 0 and summary, res.summary()
    if not summary["runs"]:
        pytest.skip("Oclgrind's device has no fp64")
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong
    assert res.reports == [], res.summary(limit=8)
