"""cltune.bincount and cltune.histogram (#41) against numpy: exact counts for every integer
dtype and sizes that are multiples of nothing, weights, minlength; uniform bins with the range
given or found, values on the edges, outside the range and NaN, an all-equal input, empty
inputs, F order, density; every strategy of kernels/hist.cl (global atomics, replicated
__local copies, a work-item's own) through the launcher; clear errors."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.hist.config import HistConfig, HistConfigError
from cltune.families.hist.kernel import HistSpec
from cltune.families.hist.launch import HistLauncher, UniformBins

INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.bool_)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(41)


@pytest.mark.parametrize("dt", INTS)
def test_bincount_matches_numpy(queue, rng, dt):
    for n, top in ((1, 1), (17, 5), (4099, 300), (100003, 70)):
        top = 2 if dt == np.bool_ else min(top, int(np.iinfo(dt).max) + 1)
        h = rng.integers(0, top, n).astype(dt)
        if n > 10:
            h[: n // 3] = h[0]  # a hot bin
        got = cltune.bincount(cla.to_device(queue, h))
        want = np.bincount(h.astype(np.int64))
        assert got.dtype == np.int64 and np.array_equal(got.get(), want), (dt, n)
        got = cltune.bincount(h, minlength=top + 9, queue=queue).get()
        assert np.array_equal(got, np.bincount(h.astype(np.int64), minlength=top + 9))


def test_bincount_weights_and_edge_cases(queue, device, rng):
    info, _ = device
    h = rng.integers(0, 1000, 20011).astype(np.int32)
    for wd in (np.float32, np.float64, np.int16):
        w = (rng.standard_normal(h.size) * 10).astype(wd)
        if not (info.fp64 and info.int64_atomics):
            with pytest.raises(ValueError, match="fp64"):
                cltune.bincount(h, weights=w, queue=queue)
            continue
        got = cltune.bincount(cla.to_device(queue, h), weights=cla.to_device(queue, w))
        want = np.bincount(h, weights=w)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got.get(), want, rtol=1e-12, atol=1e-9)
    empty = cla.empty(queue, (0,), np.int32)
    assert cltune.bincount(empty).get().shape == (0,)
    assert np.array_equal(cltune.bincount(empty, minlength=4).get(), np.zeros(4, np.int64))


@pytest.mark.parametrize("bad,err,match", [
    (np.array([1, -2, 3], np.int32), ValueError, "negative"),
    (np.array([1.0, 2.0]), TypeError, "integers"),
    (np.ones((2, 2), np.int32), ValueError, "1-D"),
])
def test_bincount_errors(queue, bad, err, match):
    with pytest.raises(err, match=match):
        cltune.bincount(bad, queue=queue)
    with pytest.raises(ValueError, match="minlength"):
        cltune.bincount(np.array([1], np.int32), minlength=-1, queue=queue)
    with pytest.raises(ValueError, match="same shape"):
        cltune.bincount(np.array([1, 2], np.int32), weights=np.ones(3), queue=queue)
    with pytest.raises(TypeError, match="queue"):
        cltune.bincount(np.array([1], np.int32))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.uint8])
def test_histogram_matches_numpy(queue, device, rng, dt):
    info, _ = device
    if (dt in (np.float64, np.int32, np.uint8)) and not info.fp64:
        pytest.skip("bins in float64 need fp64")
    n = 100003
    h = (rng.standard_normal(n) * 3).astype(dt) if np.dtype(dt).kind == "f" else \
        rng.integers(0, 200, n).astype(dt)
    if np.dtype(dt).kind == "f":
        h[7] = np.nan  # counted in no bin when the range is given
        h[11], h[13] = -2.0, 2.0  # the range's edges: the first and the last bin
    x = cla.to_device(queue, h)
    cases = [dict(bins=1, range=(-2.0, 2.0)), dict(bins=7, range=(-2.0, 2.0)),
             dict(bins=256, range=(-1.5, 0.3)), dict(bins=1000, range=(0, 100))]
    for kw in cases:
        got, edges = cltune.histogram(x, **kw)
        want, wedges = np.histogram(h, **kw)
        assert got.dtype == np.int64 and np.array_equal(got.get(), want), kw
        assert np.array_equal(edges.get(), wedges)
    if np.dtype(dt).kind == "f":
        with pytest.raises(ValueError, match="not finite"):
            cltune.histogram(x, bins=10)  # NaN in the data, no range: numpy's error
        h[7] = 0.5
        x = cla.to_device(queue, h)
    for bins in (3, 77):  # the range from the data (min and max on the device)
        got, edges = cltune.histogram(x, bins=bins)
        want, wedges = np.histogram(h, bins=bins)
        assert np.array_equal(got.get(), want) and np.array_equal(edges.get(), wedges), bins


def test_histogram_weights_density_layouts_and_edge_cases(queue, device, rng):
    info, _ = device
    h = rng.random((301, 67)).astype(np.float32)
    w = rng.random((301, 67)).astype(np.float32)
    for order in "CF":
        hh, ww = np.asarray(h, order=order), np.asarray(w, order=order)
        got, _ = cltune.histogram(cla.to_device(queue, hh), 50, (0.0, 1.0),
                                  weights=cla.to_device(queue, ww))
        want, _ = np.histogram(hh, 50, (0.0, 1.0), weights=ww)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.get(), want, rtol=2e-6)
        got, _ = cltune.histogram(cla.to_device(queue, hh), 50, (0.0, 1.0))
        assert np.array_equal(got.get(), np.histogram(hh, 50, (0.0, 1.0))[0])
    # weights in the other layout than the data: paired element by element all the same
    got, _ = cltune.histogram(cla.to_device(queue, np.asfortranarray(h)), 20, (0.0, 1.0),
                              weights=cla.to_device(queue, w))
    np.testing.assert_allclose(got.get(), np.histogram(h, 20, (0.0, 1.0), weights=w)[0],
                               rtol=2e-6)
    got, _ = cltune.histogram(cla.to_device(queue, h), 13, density=True)
    want, _ = np.histogram(h, 13, density=True)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.get(), want, rtol=1e-12)
    same = np.full(1001, 3.0, np.float32)  # min == max: numpy widens the range by 0.5
    got, edges = cltune.histogram(same, 4, queue=queue)
    want, wedges = np.histogram(same, 4)
    assert np.array_equal(got.get(), want) and np.array_equal(edges.get(), wedges)
    got, edges = cltune.histogram(np.zeros(0, np.float32), 5, queue=queue)
    want, wedges = np.histogram(np.zeros(0, np.float32), 5)
    assert np.array_equal(got.get(), want) and np.array_equal(edges.get(), wedges)


def test_histogram_errors(queue):
    x = np.ones(10, np.float32)
    for kw, err, match in ((dict(bins=0), ValueError, "positive"),
                           (dict(bins=5, range=(2.0, 1.0)), ValueError, "larger"),
                           (dict(bins=5, range=(0.0, np.inf)), ValueError, "not finite"),
                           (dict(bins=5, weights=np.ones(3)), ValueError, "same shape")):
        with pytest.raises(err, match=match):
            cltune.histogram(x, queue=queue, **kw)
    with pytest.raises(TypeError, match="float16"):
        cltune.histogram(np.ones(4, np.float16), queue=queue)


@pytest.mark.parametrize("cfg", [HistConfig("global", 8, 1, 2, 1), HistConfig("local", 8, 4, 2),
                                 HistConfig("local", 16, 1, 4, 8), HistConfig("private", 1, 8, 4),
                                 HistConfig("private", 1, 1, 2, 2)])
def test_every_strategy_counts_exactly(ctx, queue, device, rng, cfg):
    """Each strategy through the launcher (the builtin picks one per device): counts, sums of
    weights, uniform bins; blocks that leave tails, a run of one value (the copies' turns)."""
    info, dev = device
    double = bool(info.fp64)
    for nbins, n in ((5, 3), (300, 20011), (64, 100003)):
        h = rng.integers(0, nbins, n + 3).astype(np.int32)
        h[3: n // 2] = nbins - 1
        spec = HistSpec(np.dtype(np.int32), False, None, double)
        la = HistLauncher(ctx, dev, info, spec, cfg)
        out = cla.empty(queue, nbins, np.int64)
        la.run(queue, cla.to_device(queue, h), 3, n, None, 0, nbins, None, out)
        assert np.array_equal(out.get(), np.bincount(h[3:], minlength=nbins)), (nbins, n)
        f = rng.random(n).astype(np.float32)
        edges = np.linspace(0.0, 1.0, nbins + 1, dtype=np.float32)
        fspec = HistSpec(np.dtype(np.float32), True, None, double)
        la = HistLauncher(ctx, dev, info, fspec, cfg)
        la.run(queue, cla.to_device(queue, f), 0, n, None, 0, nbins, UniformBins(edges, 1.0),
               out)
        assert np.array_equal(out.get(), np.histogram(f, nbins, (0.0, 1.0))[0])
        uneven = np.sort(np.concatenate([[0.0, 1.0], rng.random(nbins - 1)])).astype(np.float32)
        sspec = HistSpec(np.dtype(np.float32), True, None, double, searched=True)
        la = HistLauncher(ctx, dev, info, sspec, cfg)
        la.run(queue, cla.to_device(queue, f), 0, n, None, 0, nbins, UniformBins(uneven, 1.0),
               out)
        assert np.array_equal(out.get(), np.histogram(f, uneven)[0])
        rows = 3  # a histogram per row: every strategy's groups of one row each
        hr = rng.integers(0, nbins, rows * n).astype(np.int32)
        rout = cla.empty(queue, rows * nbins, np.int64)
        HistLauncher(ctx, dev, info, spec, cfg).run(queue, cla.to_device(queue, hr), 0,
                                                    rows * n, None, 0, nbins, None, rout,
                                                    rows=rows)
        want = np.stack([np.bincount(r, minlength=nbins) for r in hr.reshape(rows, n)])
        assert np.array_equal(rout.get().reshape(rows, nbins), want), (nbins, n, "rows")
        if double and info.int64_atomics:
            w = rng.random(n).astype(np.float64)
            wspec = HistSpec(np.dtype(np.int32), False, np.dtype(np.float64), True)
            la = HistLauncher(ctx, dev, info, wspec, cfg)
            wout = cla.empty(queue, nbins, np.float64)
            la.run(queue, cla.to_device(queue, h), 3, n, cla.to_device(queue, w), 0, nbins,
                   None, wout)
            np.testing.assert_allclose(wout.get(), np.bincount(h[3:], w, nbins), rtol=1e-12)


def test_a_launcher_called_again_with_other_shapes(ctx, queue, device, rng):
    """The scratch a launcher keeps between calls (left zero by each call's merge instead of
    filled) serves calls of more or fewer bins and rows in any sequence."""
    info, dev = device
    for cfg in (HistConfig("local", 8, 2, 2), HistConfig("global", 8, 1, 2),
                HistConfig("private", 1, 4, 4)):
        la = HistLauncher(ctx, dev, info, HistSpec(np.dtype(np.int32), False, None, False), cfg)
        for nbins, rows, n in ((300, 1, 20011), (5, 3, 3000), (300, 2, 4000), (7, 1, 999),
                               (1000, 1, 5000)):
            h = rng.integers(0, nbins, n).astype(np.int32)
            out = cla.empty(queue, rows * nbins, np.int64)
            la.run(queue, cla.to_device(queue, h), 0, n, None, 0, nbins, None, out, rows=rows)
            want = np.stack([np.bincount(r, minlength=nbins) for r in h.reshape(rows, -1)])
            assert np.array_equal(out.get().reshape(rows, nbins), want), (cfg.short(), nbins,
                                                                          rows)


def test_the_warm_call_is_one_launch_whose_last_group_finishes(ctx, queue, device, rng):
    """The prepared launch (clt_hist_fin: counts, their move into the result by the last group
    to finish, the returned edges) for every strategy, several groups, called again and again
    between `run`s of other bins and rows on the same scratch: numpy's counts and edges each
    time (the ticket and the cells are left zero), one launch a call; and through
    `cltune.histogram` itself, one enqueue a warm call."""
    from cltune.opencl.host_part import stubbed_enqueue

    info, dev = device
    nbins, n = 37, 30011
    edges = np.linspace(0.0, 1.0, nbins + 1, dtype=np.float32)
    bins = UniformBins(edges, 1.0)
    for cfg in (HistConfig("local", 8, 2, 2), HistConfig("global", 8, 1, 2),
                HistConfig("private", 1, 4, 4)):
        la = HistLauncher(ctx, dev, info, HistSpec(np.dtype(np.float32), True, None,
                                                   bool(info.fp64)), cfg)
        out = cla.empty(queue, nbins, np.int64)
        f = rng.random(n).astype(np.float32)
        la.run(queue, cla.to_device(queue, f), 0, n, None, 0, nbins, bins, out)
        launch = la.prepared(queue, n, nbins, bins)
        assert launch is not None, cfg.short()
        for rep in range(4):
            f = rng.random(n).astype(np.float32)
            f[:50] = np.nan
            f[50:90] = 1.0  # the closed last edge
            x, e = cla.to_device(queue, f), cla.empty(queue, nbins + 1, np.float32)
            assert launch(x.base_data, 0, out.base_data, 0, e.base_data, 0, None) is not None
            assert np.array_equal(out.get(), np.histogram(f, edges)[0]), (cfg.short(), rep)
            assert np.array_equal(e.get(), edges)
            if rep == 1:  # another run on the scratch between warm calls: 3 rows of 300 bins
                o2 = cla.empty(queue, 900, np.int64)
                g = rng.random(3000).astype(np.float32)
                e300 = np.linspace(0.0, 1.0, 301, dtype=np.float32)
                la.run(queue, cla.to_device(queue, g), 0, 3000, None, 0, 300,
                       UniformBins(e300, 1.0), o2, rows=3)
                want = np.stack([np.histogram(r, e300)[0] for r in g.reshape(3, -1)])
                assert np.array_equal(o2.get().reshape(3, 300), want)
                # that run grew the scratch: the old launch declines, a new one takes it
                assert launch(x.base_data, 0, out.base_data, 0, e.base_data, 0, None) is None
                launch = la.prepared(queue, n, nbins, bins)
    h = rng.random(n).astype(np.float32)
    x = cla.to_device(queue, h)
    for _ in range(2):
        cltune.histogram(x, 64, (0.0, 1.0))
    count = [0]
    with stubbed_enqueue(queue, count):
        cltune.histogram(x, 64, (0.0, 1.0))
    assert count[0] == 1
    cltune.clear_caches()  # the stubbed call left nothing a later call could trust
    got, e = cltune.histogram(x, 64, (0.0, 1.0))
    want, we = np.histogram(h, 64, (0.0, 1.0))
    assert np.array_equal(got.get(), want) and np.array_equal(e.get(), we)


def test_histograms_larger_than_local_memory_go_a_window_at_a_time(ctx, queue, device, rng):
    """local and private configs on a device whose __local memory holds a few hundred bins:
    the histogram a window at a time (counts, weighted sums, rows, uniform bins), numpy's
    answers."""
    import dataclasses

    info, dev = device
    small = dataclasses.replace(info, local_mem=4096)  # r2 of 4-byte counts: 384 bins
    for cfg in (HistConfig("local", 16, 2, 2), HistConfig("private", 1, 2, 2)):
        for nbins, rows, n in ((1000, 1, 20011), (777, 3, 6000)):
            la = HistLauncher(ctx, dev, small, HistSpec(np.dtype(np.int32), False, None, False),
                              cfg)
            assert 1 <= la.window(nbins) < nbins
            h = rng.integers(0, nbins, n).astype(np.int32)
            h[: n // 4] = 5  # a hot bin
            out = cla.empty(queue, rows * nbins, np.int64)
            la.run(queue, cla.to_device(queue, h), 0, n, None, 0, nbins, None, out, rows=rows)
            want = np.stack([np.bincount(r, minlength=nbins) for r in h.reshape(rows, -1)])
            assert np.array_equal(out.get().reshape(rows, nbins), want), (cfg.short(), nbins)
        f = rng.random(20011).astype(np.float32)
        edges = np.linspace(0.0, 1.0, 1001, dtype=np.float32)
        la = HistLauncher(ctx, dev, small, HistSpec(np.dtype(np.float32), True, None,
                                                    bool(info.fp64)), cfg)
        out = cla.empty(queue, 1000, np.int64)
        la.run(queue, cla.to_device(queue, f), 0, f.size, None, 0, 1000,
               UniformBins(edges, 1.0), out)
        assert np.array_equal(out.get(), np.histogram(f, 1000, (0.0, 1.0))[0])
        if info.fp64 and info.int64_atomics:
            w = rng.random(20011)
            la = HistLauncher(ctx, dev, small, HistSpec(np.dtype(np.int32), False,
                                                        np.dtype(np.float64), True), cfg)
            h = rng.integers(0, 1000, 20011).astype(np.int32)
            out = cla.empty(queue, 1000, np.float64)
            la.run(queue, cla.to_device(queue, h), 0, h.size, cla.to_device(queue, w), 0,
                   1000, None, out)
            np.testing.assert_allclose(out.get(), np.bincount(h, w, 1000), rtol=1e-12)


def test_configs_are_validated():
    for kw in (dict(strategy="shared"), dict(wg=3), dict(strategy="global", reps=2),
               dict(strategy="private", wg=4), dict(reps=3), dict(groups_per_cu=0),
               dict(items=3)):
        with pytest.raises(HistConfigError):
            HistConfig(**{**dict(strategy="local", wg=8, reps=1, groups_per_cu=4), **kw})
    assert HistConfig.from_mapping(HistConfig().to_dict()) == HistConfig()


OCLGRIND_MARK = "CLTUNE-HIST-OCLGRIND "
OCLGRIND_SCRIPT = r'''
import json
import numpy as np
import pyopencl.array as cla
from cltune.families.hist.config import HistConfig
from cltune.families.hist.kernel import HistSpec
from cltune.families.hist.launch import HistLauncher, UniformBins
rng = np.random.default_rng(3)
out = {"runs": []}
double = bool(info.fp64)
import dataclasses
small = dataclasses.replace(info, local_mem=1024 + 8 * 4 * 8)  # local r2: windows of 8 bins
for cfg, where in ((HistConfig("global", 8, 1, 2, 2), info),
                   (HistConfig("local", 8, 2, 2, 4), info),
                   (HistConfig("private", 1, 4, 4), info),
                   (HistConfig("local", 8, 2, 2, 4), small)):
    for kind in ("counts", "uniform", "weights", "searched"):
        if kind == "weights" and not (double and info.int64_atomics):
            continue
        n, nbins = 1001, 37
        h = rng.integers(0, nbins, n).astype(np.int32)
        h[: 300] = 5  # a hot bin: contended atomics
        w = rng.random(n)
        x, bins, want = cla.to_device(q, h), None, np.bincount(h, minlength=nbins)
        spec = HistSpec(np.dtype(np.int32), False, None, double)
        wd = None
        if kind in ("uniform", "searched"):
            f = rng.random(n).astype(np.float32)
            edges = np.linspace(0.0, 1.0, nbins + 1, dtype=np.float32)
            if kind == "searched":
                edges = np.sort(np.concatenate([[0.0, 1.0], rng.random(nbins - 1)])).astype(
                    np.float32)
            x, bins = cla.to_device(q, f), UniformBins(edges, 1.0)
            want = np.histogram(f, edges)[0]
            spec = HistSpec(np.dtype(np.float32), True, None, double, kind == "searched")
        if kind == "weights":
            spec = HistSpec(np.dtype(np.int32), False, np.dtype(np.float64), True)
            wd, want = cla.to_device(q, w), np.bincount(h, w, nbins)
        res = cla.empty(q, nbins, spec.out_dtype)
        err = ""
        try:
            la = HistLauncher(ctx, dev, where, spec, cfg)
            la.run(q, x, 0, n, wd, 0, nbins, bins, res)
            got = res.get()
            if kind == "counts" and la.extremes(q, x, 0, n) != (h.min(), h.max()):
                raise AssertionError("extremes differ")
            if kind == "counts" and where is info:
                # bincount in one launch (clt_hist_fin, track 1): the counts below nbins and
                # the extremes, twice (cells and ticket left zero), then values past nbins
                import pyopencl as cl
                for hh in (h, h, np.concatenate([h, [nbins + 4, 2, 0]]).astype(np.int32)):
                    ob = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbins * 8)
                    _, elo, ehi = la.count_once(q, cla.to_device(q, hh), hh.size, nbins, ob)
                    got1 = np.empty(nbins, np.int64)
                    cl.enqueue_copy(q, got1, ob)
                    if not np.array_equal(got1, np.bincount(hh[hh < nbins], minlength=nbins)):
                        raise AssertionError(f"one-pass counts differ: {got1[:6]}")
                    if (elo, ehi) != (hh.min(), hh.max()):
                        raise AssertionError(f"one-pass extremes {(elo, ehi)}")
            if kind == "counts":  # and a histogram per row: 7 rows of 143
                rres = cla.empty(q, 7 * nbins, spec.out_dtype)
                la.run(q, x, 0, n, None, 0, nbins, None, rres, rows=7)
                rwant = np.stack([np.bincount(r, minlength=nbins) for r in h.reshape(7, 143)])
                if not np.array_equal(rres.get().reshape(7, nbins), rwant):
                    raise AssertionError("rows differ")
            ok = np.allclose(got, want, rtol=1e-12) if kind == "weights" else \
                np.array_equal(got, want)
            err = "" if ok else f"wrong: {got[:6]} numpy {want[:6]}"
            if ok and kind == "uniform" and where is info:
                # the warm call's one launch (clt_hist_fin: its last group of 3 finishes),
                # twice: the ticket and the cells are left zero for the next
                launch = la.prepared(q, 9001, nbins, bins)
                for rep in range(2):
                    f2 = rng.random(9001).astype(np.float32)
                    x2, e2 = cla.to_device(q, f2), cla.empty(q, nbins + 1, np.float32)
                    launch(x2.base_data, 0, res.base_data, 0, e2.base_data, 0, None)
                    w2 = np.histogram(f2, edges)[0]
                    if not (np.array_equal(res.get(), w2) and np.array_equal(e2.get(), edges)):
                        err = f"clt_hist_fin (call {rep}): {res.get()[:6]} numpy {w2[:6]}"
                        break
        except Exception as e:
            err = f"{type(e).__name__}: {e}"[:300]
        out["runs"].append({"cfg": cfg.short(), "kind": kind, "error": err,
                            "windows": where is small})
print(MARK + json.dumps(out), flush=True)
'''


@pytest.mark.oclgrind
@pytest.mark.multiprocess
@pytest.mark.slow
def test_the_kernels_are_clean_under_oclgrind():
    """Every strategy (global atomics, replicated __local copies with their merge, a
    work-item's own copies) for counts (and bincount's min/max kernel), uniform bins and
    weighted sums (the CAS loops), and the warm call's one launch (clt_hist_fin, its last
    group finishing) under Oclgrind: numpy's answers, no invalid access, no race."""
    from support.oclgrind import run_marked

    res, summary = run_marked(OCLGRIND_SCRIPT, OCLGRIND_MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert {r["cfg"].split()[0] for r in summary["runs"]} == {"global", "local", "private"}
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong
    assert res.reports == [], res.summary(limit=8)


def test_the_cli_tunes_stores_and_serves(info, queue, db_url, storage_url):
    """`cltune tune --hist` stores a class per variant, `cltune show` lists it, `cltune
    verify` re-validates it and the API serves it (exact level) to a call near the class."""
    import json

    from typer.testing import CliRunner

    from cltune.cli.app import app
    from cltune.families.hist.api import explain

    runner = CliRunner()
    args = ["tune", "--device", str(info.index), "--hist", "4096x64", "--op", "bincount",
            "--dtype", "int32", "--trials", "3", "--timeout", "60", "--db", db_url,
            "--storage", storage_url]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    rows = json.loads(r.output)
    assert ("hist", "bincount/int32", "2^12x2^6") in {
        (x["family"], x["variant"], x["size_class"]) for x in rows}
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 0 and "bincount/int32" in r.output, r.output
    e = explain(queue, "bincount", np.int32, 5000, 60, db=db_url)
    assert e.level == "exact" and e.size_class == "2^12x2^6", e
    h = np.random.default_rng(1).integers(0, 60, 5000).astype(np.int32)
    assert np.array_equal(cltune.bincount(h, queue=queue, db=db_url).get(), np.bincount(h))
    for bad, msg in ((["--op", "sum"], "histogram or histogram_edges"),
                     (["--op", "bincount", "--dtype", "float32"], "integers"),
                     (["--op", "histogram", "--axis", "1"], "goes alone")):
        r = runner.invoke(app, ["tune", "--device", str(info.index), "--hist", "4096x64",
                                *bad, "--db", db_url])
        assert r.exit_code != 0 and msg in r.output, r.output
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--weights", "float32",
                            "--db", db_url])
    assert r.exit_code != 0 and "--weights goes with --hist" in r.output


def test_get_histogrammer_calls_and_explains(queue, rng):
    h = cltune.get_histogrammer(queue, "histogram", np.float32)
    y = rng.random(5000).astype(np.float32)
    got, edges = h(cla.to_device(queue, y), 32, (0.0, 1.0))
    want, wedges = np.histogram(y, 32, (0.0, 1.0))
    assert np.array_equal(got.get(), want) and np.array_equal(edges.get(), wedges)
    e = h.explain(5000, 32)
    assert e.level in ("builtin", "exact") and "histogram/float32" in str(e)
    b = cltune.get_histogrammer(queue, "bincount", np.int32)
    x = rng.integers(0, 9, 1000).astype(np.int32)
    assert np.array_equal(b(x, minlength=12).get(), np.bincount(x, minlength=12))
    with pytest.raises(TypeError, match="takes int32"):
        b(x.astype(np.int64))
    with pytest.raises(ValueError, match="kind"):
        cltune.get_histogrammer(queue, "topk", np.int32)


def test_one_histogram_per_slice_along_an_axis(queue, device, rng):
    """axis=k: a histogram per slice over shared bins (numpy's per slice), C and F order, 2-D
    and 3-D, every axis (contiguous ones as views, others copied), weights, density, a few
    long rows and many short ones."""
    info, _ = device
    for shape, order in (((3, 20011), "C"), ((2000, 7), "C"), ((301, 67), "F"),
                         ((4, 5, 33), "C"), ((1, 9), "C")):
        h = np.asarray(rng.integers(0, 50, shape).astype(np.int32), order=order)
        x = cla.to_device(queue, h)
        for axis in range(len(shape)):
            got = cltune.bincount(x, axis=axis, minlength=60)
            moved = np.moveaxis(h, axis, -1)
            want = np.stack([np.bincount(r, minlength=60)
                             for r in moved.reshape(-1, moved.shape[-1])]).reshape(
                *moved.shape[:-1], 60)
            assert got.shape == want.shape and np.array_equal(got.get(), want), (shape, axis)
        f = np.asarray(rng.random(shape).astype(np.float32), order=order)
        w = np.asarray(rng.random(shape).astype(np.float32), order=order)
        xf, wd = cla.to_device(queue, f), cla.to_device(queue, w)
        for axis in (0, len(shape) - 1):
            moved = np.moveaxis(f, axis, -1).reshape(-1, shape[axis])
            mw = np.moveaxis(w, axis, -1).reshape(-1, shape[axis])
            kept = tuple(d for i, d in enumerate(shape) if i != axis)
            got, edges = cltune.histogram(xf, 16, (0.0, 1.0), axis=axis)
            want = np.stack([np.histogram(r, 16, (0.0, 1.0))[0] for r in moved])
            assert np.array_equal(got.get(), want.reshape(*kept, 16)), (shape, axis)
            got, _ = cltune.histogram(xf, 16, (0.0, 1.0), weights=wd, axis=axis)
            want = np.stack([np.histogram(r, 16, (0.0, 1.0), weights=v)[0]
                             for r, v in zip(moved, mw, strict=True)])
            np.testing.assert_allclose(got.get(), want.reshape(*kept, 16), rtol=2e-6)
            got, _ = cltune.histogram(xf, 16, (0.0, 1.0), density=True, axis=axis)
            want = np.stack([np.histogram(r, 16, (0.0, 1.0), density=True)[0] for r in moved])
            np.testing.assert_allclose(got.get(), want.reshape(*kept, 16), rtol=1e-12)
    with pytest.raises(ValueError, match="out of bounds"):
        cltune.bincount(np.ones((2, 2), np.int32), axis=2, queue=queue)
    with pytest.raises(TypeError, match="axis must be an int"):
        cltune.histogram(np.ones((2, 2), np.float32), axis=(0, 1), queue=queue)


def test_histogram_with_an_array_of_edges(queue, device, rng):
    """bins as an array: numpy's searchsorted rules (a value on an edge goes right, equal
    edges allowed: the last of them, the last bin closed, NaN and outside values in none),
    compared in the common type of the values and the edges; weights, density; errors."""
    info, _ = device
    h = (rng.standard_normal(20011) * 2).astype(np.float32)
    h[:7] = [np.nan, -1.0, 0.0, 0.5, 0.5, 3.0, 9.0]
    x = cla.to_device(queue, h)
    cases = [np.array([-1.0, -0.5, 0.0, 0.5, 0.5, 2.0, 3.0], np.float32),  # equal edges
             np.sort(rng.uniform(-3, 3, 40)).astype(np.float32), [-2, 0, 1, 4]]
    if info.fp64:
        cases.append(np.array([-1.0, 0.1, 0.2, 2.5]))  # float64 edges: compared in float64
    for edges in cases:
        got, e = cltune.histogram(x, bins=edges)
        want, we = np.histogram(h, bins=edges)
        assert np.array_equal(got.get(), want), edges
        assert np.array_equal(e.get(), we) and e.dtype == we.dtype
        w = rng.random(h.size).astype(np.float32)
        got, _ = cltune.histogram(x, bins=edges, weights=cla.to_device(queue, w))
        # numpy sums weights between given edges as differences of float32 running sums
        # (errors ~ eps32 x the whole sum); the reference here sums in float64
        want = np.histogram(h, edges, weights=w.astype(np.float64))[0]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.get(), want, rtol=1e-6)
        got, _ = cltune.histogram(x, bins=edges, density=True)
        np.testing.assert_allclose(got.get(), np.histogram(h, edges, density=True)[0],
                                   rtol=1e-12)
    if info.fp64:
        k = rng.integers(-5, 50, 5000).astype(np.int32)  # integers: compared in float64
        got, _ = cltune.histogram(k, bins=[0, 10, 10.5, 49], queue=queue)
        assert np.array_equal(got.get(), np.histogram(k, bins=[0, 10, 10.5, 49])[0])
    for bad, match in (([1.0, 0.0], "monotonically"), ([[0.0, 1.0]], "1d"), ([1.0], "2 or more"),
                       ([0.0, np.inf], "finite")):
        with pytest.raises(ValueError, match=match):
            cltune.histogram(x, bins=bad)
    with pytest.raises(TypeError, match="estimators"):
        cltune.histogram(x, bins="auto")


def test_unique_counts(queue, rng):
    """torch.unique(sorted=True, return_counts=True) of integers: a histogram over min..max
    and a compaction of its non-empty bins; negative values, one value, empty, and a span
    past UNIQUE_SPAN (numpy on the host, with a warning)."""
    from cltune.families.hist import api as hist_api

    for dt, lo, hi in ((np.int32, -50, 300), (np.uint8, 0, 256), (np.int64, 7, 8),
                       (np.int16, -3000, -2000)):
        h = rng.integers(lo, hi, 20011).astype(dt)
        v, c = cltune.unique_counts(cla.to_device(queue, h))
        wv, wc = np.unique(h, return_counts=True)
        assert v.dtype == h.dtype and c.dtype == np.int64
        assert np.array_equal(v.get(), wv) and np.array_equal(c.get(), wc), dt
    v, c = cltune.unique_counts(np.zeros(0, np.int32), queue=queue)
    assert v.size == 0 and c.size == 0
    wide = np.array([0, hist_api.UNIQUE_SPAN + 5, 0, 3], np.int64)
    with pytest.warns(RuntimeWarning, match="host"):
        v, c = cltune.unique_counts(wide, queue=queue)
    assert np.array_equal(v.get(), [0, 3, hist_api.UNIQUE_SPAN + 5])
    assert np.array_equal(c.get(), [2, 1, 1])
    with pytest.raises(TypeError, match="integers"):
        cltune.unique_counts(np.ones(3), queue=queue)


def test_calls_wait_for_their_inputs_pending_writes_only(ctx, queue, rng):
    """Histograms over a given range, top-k and sorts wait for what their inputs' events still
    have pending (a gate on another queue: a user event set after the call), and not for
    completed events or the in-order queue's own (opencl.events.waits_on). (bincount reads
    its input's extremes back first, as numpy's length rule needs: it would wait here.)"""
    import pyopencl as cl

    h = rng.random(5000).astype(np.float32)
    calls = [
        (lambda x: cltune.histogram(x, 16, (0.0, 1.0))[0], h,
         np.histogram(h, 16, (0.0, 1.0))[0]),
        (lambda x: cltune.topk(x, 5)[0], h, np.sort(h)[::-1][:5]),
        (lambda x: cltune.sort(x), h, np.sort(h)),
    ]
    for f, host, want in calls:
        x = cla.to_device(queue, host)
        x.finish()
        f(x).get()  # warm: a prepared launch where the family keeps one
        x = cla.to_device(queue, np.zeros_like(host))
        x.finish()
        gate = cl.UserEvent(ctx)
        q2 = cl.CommandQueue(ctx)
        up = cl.enqueue_copy(q2, x.base_data, host, wait_for=[gate], is_blocking=False)
        x.add_event(up)
        got = f(x)
        gate.set_status(cl.command_execution_status.COMPLETE)
        np.testing.assert_array_equal(got.get(), want)
        q2.finish()


def test_bincount_guesses_its_length_and_counts_again_when_short(queue, rng):
    """A plain bincount counts the values below a guessed length in the launch that finds its
    min and max (`_bincount_once`); a guess too short counts again with the length found and
    is the next call's guess, rounded up to a power of two; values of the type's extremes
    (uint8 255, a hot bin) and minlength past the guess count right."""
    from cltune.families.hist import api as hist_api

    guesses = hist_api._once_bins.get(queue.context, "bincount", dict)
    for top, ml in ((10, 0), (5000, 0), (10, 0), (3, 700), (70000, 0), (1, 0)):
        h = rng.integers(0, top, 30011).astype(np.int32)
        h[:9000] = top - 1  # the largest value hot
        got = cltune.bincount(cla.to_device(queue, h), minlength=ml)
        want = np.bincount(h, minlength=ml)
        assert got.shape == want.shape and np.array_equal(got.get(), want), (top, ml)
        assert guesses[np.dtype(np.int32).str] == want.size
    h = np.full(4097, 255, np.uint8)
    h[::7] = 0
    assert np.array_equal(cltune.bincount(h, queue=queue).get(), np.bincount(h))
    # a length past MAX_ONCE_BINS is not guessed again (min and max found first), and the
    # guessing starts afresh after it
    big = np.array([3, hist_api.MAX_ONCE_BINS + 5, 0], np.int32)
    for _ in range(2):
        assert np.array_equal(cltune.bincount(big, queue=queue).get(), np.bincount(big))
    assert guesses.get(np.dtype(np.int32).str) is None
    small = np.array([1, 2, 2], np.int32)
    assert np.array_equal(cltune.bincount(small, queue=queue).get(), np.bincount(small))
    assert guesses[np.dtype(np.int32).str] == 3


def test_bincount_on_an_out_of_order_queue_and_past_int64(ctx, queue, rng):
    """An out-of-order queue has no memory pool: the one-pass count allocates its own buffer;
    uint64 values past int64 are refused as numpy refuses them (a ValueError, not a
    traceback from deeper down)."""
    import pyopencl as cl

    oq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    for h in (np.array([1, 2, 2], np.int32), rng.integers(0, 3000, 20011).astype(np.int64)):
        got = cltune.bincount(cla.to_device(oq, h))
        assert np.array_equal(got.get(), np.bincount(h))
    oq.finish()
    with pytest.raises(ValueError, match="int64"):
        cltune.bincount(np.array([2**63 + 5, 1], np.uint64), queue=queue)


def test_bincount_forgets_a_guess_its_config_cannot_count_in_one_launch(queue, monkeypatch):
    """A guess that the served config cannot count in one launch is dropped (the next call
    guesses afresh) instead of keeping every later call on the two-launch path."""
    from cltune.families.hist import api as hist_api
    from cltune.families.hist.launch import HistLauncher

    guesses = hist_api._once_bins.get(queue.context, "bincount", dict)
    key = np.dtype(np.int16).str
    guesses[key] = 200001
    monkeypatch.setattr(HistLauncher, "one_pass", lambda self, nbins, n: nbins < 1 << 17)
    h = np.array([0, 9, 9], np.int16)
    assert np.array_equal(cltune.bincount(h, queue=queue).get(), np.bincount(h))
    assert key not in guesses
    assert np.array_equal(cltune.bincount(h, queue=queue).get(), np.bincount(h))
    assert guesses[key] == 10
