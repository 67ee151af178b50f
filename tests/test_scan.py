"""The scan family (#21): cltune.cumsum / cumprod / cummax / cummin and get_scanner against
numpy on lengths that are not multiples of anything, along every axis of C- and F-ordered
arrays, exclusive, by CSR segments (empty and one-element ones, segments spanning groups), in
place and at offsets; integer results exact with numpy's wrap-around; every config of a small
space through the validation; a tuned best stored and served; clear errors."""

from __future__ import annotations

import itertools

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.scan.config import ScanConfig, ScanConfigError
from cltune.families.scan.family import ScanVariant, variant_of
from cltune.families.scan.launch import ScanLauncher
from cltune.families.scan.reference import compare, reference, sample, validate
from cltune.families.scan.target import make_space

NP = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate,
      "min": np.minimum.accumulate}
API = {"sum": cltune.cumsum, "prod": cltune.cumprod, "max": cltune.cummax,
       "min": cltune.cummin}


def _check(v: ScanVariant, got: np.ndarray, x: np.ndarray, axis, exclusive=False,
           offsets=None) -> None:
    flat = axis is None
    xx = x.reshape(-1) if flat else x
    want, scale = reference(v, xx, 0 if flat else axis, exclusive, offsets)
    chk = compare(v, got.reshape(want.shape), want, scale, 64 + max(xx.shape))
    assert chk.ok, chk.reason


@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int32"), ("sum", "uint8"),
                                      ("sum", "int64"), ("prod", "float32"), ("prod", "int16"),
                                      ("max", "float32"), ("min", "int32"), ("max", "uint64"),
                                      ("min", "float64")])
def test_api_matches_numpy_along_every_axis(queue, device, op, dtype):
    info, _ = device
    if dtype == "float64" and not info.fp64:
        pytest.skip("device lacks cl_khr_fp64")
    v = ScanVariant(op, dtype)
    for shape, order in [((1,), "C"), ((1001,), "C"), ((37, 101), "C"), ((37, 101), "F"),
                         ((3, 41, 5), "C"), ((5, 7, 3), "F")]:
        x = np.asarray(sample(v, shape, seed=len(shape)), order=order)
        xd = cla.to_device(queue, x)
        for axis in [None, *range(len(shape))]:
            got = API[op](xd, axis=axis)
            ref = NP[op](x.reshape(-1), axis=0) if axis is None else NP[op](x, axis=axis)
            assert got.dtype == ref.dtype and got.shape == ref.shape, (op, dtype, axis)
            _check(v, got.get(), x, axis)


def test_short_columns_along_axis_0(queue):
    """#40: k = 1..9 rows of 1..65 columns (C and F order, and 3-D), scanned along the short
    axis, against numpy."""
    v = ScanVariant("sum", "float32")
    for k, cols, order in itertools.product(range(1, 10), (1, 2, 33, 65), "CF"):
        x = np.asarray(sample(v, (k, cols), seed=k * cols), order=order)
        _check(v, cltune.cumsum(cla.to_device(queue, x), axis=0).get(), x, 0)
    x = sample(v, (2, 5, 3, 7), seed=3)[0]
    _check(v, cltune.cumsum(cla.to_device(queue, x), axis=0).get(), x, 0)


def test_awkward_lengths_and_many_groups(queue):
    s = cltune.get_scanner(queue, "sum", np.float32)
    v = ScanVariant("sum", "float32")
    for n in (2, 3, 17, 255, 257, 4099, 65537, 100003):
        x = sample(v, (n,), seed=n)
        _check(v, s(cla.to_device(queue, x)).get(), x, None)


def test_integer_sums_wrap_as_numpy(queue):
    x = np.full(100003, 2**31 - 1, np.int32)
    got = cltune.cumsum(x, queue=queue)
    assert got.dtype == np.int64 and np.array_equal(got.get(), np.cumsum(x))
    g32 = cltune.cumsum(x, dtype=np.int32, queue=queue)
    assert g32.dtype == np.int32 and np.array_equal(g32.get(), np.cumsum(x, dtype=np.int32))
    y = np.full(70001, 2**63 - 3, np.int64)
    assert np.array_equal(cltune.cumsum(y, queue=queue).get(), np.cumsum(y))
    z = np.full(1000, 3, np.int64)
    assert np.array_equal(cltune.cumprod(z, queue=queue).get(), np.cumprod(z))  # wraps


@pytest.mark.parametrize("op", ["sum", "max", "prod"])
def test_exclusive(queue, op):
    s = cltune.get_scanner(queue, op, np.float32)
    v = ScanVariant(op, "float32")
    for shape, axis in [((10007,), None), ((23, 301), 1), ((301, 23), 0)]:
        x = sample(v, shape, seed=3)
        got = s(cla.to_device(queue, x), axis=axis, exclusive=True).get()
        _check(v, got, x, axis, exclusive=True)
    first = s(cla.to_device(queue, np.ones(3, np.float32)), exclusive=True).get()[0]
    assert first == {"sum": 0.0, "prod": 1.0, "max": -np.inf}[op]
    assert not np.signbit(first) or op == "max"  # the empty sum is +0.0


def test_segments(queue):
    s = cltune.get_scanner(queue, "sum", np.int32)
    v = ScanVariant("sum", "int32")
    rng = np.random.default_rng(5)
    n = 200003
    for cuts in (np.array([0, 0, 1, 1, 2, 50000, 50001, n, n]),
                 np.concatenate([[0], np.sort(rng.integers(0, n, 999)), [n]]),
                 np.array([0, n])):
        x = sample(v, (n,), seed=1)
        for excl in (False, True):
            got = s.segments(cla.to_device(queue, x), cuts, exclusive=excl).get()
            _check(v, got, x, None, excl, cuts)
    dev_offs = cla.to_device(queue, np.array([0, 2, 5], np.int64))
    got = s.segments(np.arange(5, dtype=np.int32), dev_offs).get()
    assert got.tolist() == [0, 1, 2, 5, 9]


def test_host_offsets_kept_by_their_values(queue):
    """Host offsets are checked and uploaded once per distinct value (and n): the same array
    changed in place, the same values in another dtype, and the same values against another n
    each get their own answer or their own error."""
    s = cltune.get_scanner(queue, "sum", np.int32)
    x = cla.to_device(queue, np.arange(1, 9, dtype=np.int32))
    offs = np.array([0, 3, 8], np.int64)
    assert s.segments(x, offs).get().tolist() == [1, 3, 6, 4, 9, 15, 22, 30]
    assert s.segments(x, offs).get().tolist() == [1, 3, 6, 4, 9, 15, 22, 30]  # kept
    offs[1] = 5  # changed in place: new values, a new answer
    assert s.segments(x, offs).get().tolist() == [1, 3, 6, 10, 15, 6, 13, 21]
    assert s.segments(x, offs.astype(np.int32)).get().tolist() == [1, 3, 6, 10, 15, 6, 13, 21]
    offs[1] = 9  # past the end: refused, though an array of this length was accepted before
    with pytest.raises(ValueError, match="non-decreasing"):
        s.segments(x, offs)
    with pytest.raises(ValueError, match="end at x.size"):  # the kept values, another n
        s.segments(x[:7], np.array([0, 3, 8], np.int64))


@pytest.mark.parametrize("offs,msg", [([1, 5], "start at 0"), ([0, 4], "end at x.size"),
                                      ([0, 3, 2, 5], "non-decreasing"),
                                      ([[0, 5]], "1-D array of integers"),
                                      ([0.0, 5.0], "1-D array of integers")])
def test_bad_offsets_are_clear_errors(queue, offs, msg):
    s = cltune.get_scanner(queue, "sum", np.float32)
    with pytest.raises(ValueError, match=msg):
        s.segments(np.ones(5, np.float32), np.array(offs))


def test_device_offsets_checked_on_first_use_and_used_in_place(queue):
    """Device offsets (int32 or int64, also a view at an offset) serve in place; bad ones are
    a clear error the first time and every time with check=True; check=False runs without
    reading them back (a wrong answer, no load outside x, no error)."""
    s = cltune.get_scanner(queue, "sum", np.int32)
    x = cla.to_device(queue, np.arange(10, dtype=np.int32))
    for dt in (np.int32, np.int64):
        whole = cla.to_device(queue, np.array([7, 0, 3, 3, 10], dt))
        got = s.segments(x, whole[1:]).get()  # a view: offsets start one element in
        assert got.tolist() == [0, 1, 3, 3, 7, 12, 18, 25, 33, 42]
    bad = cla.to_device(queue, np.array([0, 6, 3, 10], np.int32))
    with pytest.raises(ValueError, match="non-decreasing"):
        s.segments(x, bad)
    assert s.segments(x, bad, check=False).get().shape == (10,)
    with pytest.raises(ValueError, match="non-decreasing"):
        s.segments(x, bad, check=True)
    with pytest.raises(TypeError, match="int32 or int64"):
        s.segments(x, cla.to_device(queue, np.array([0, 10], np.float32)))


def test_in_place_and_offsets(queue):
    h = np.random.default_rng(2).random(50021).astype(np.float32)
    x = cla.to_device(queue, h)
    s = cltune.get_scanner(queue, "sum", np.float32)
    s(x, out=x)  # in place
    _check(ScanVariant("sum", "float32"), x.get(), h, None)
    y = cla.to_device(queue, h)
    got = cltune.cumsum(y[5:]).get()
    _check(ScanVariant("sum", "float32"), got, h[5:], None)
    out = cla.empty(queue, (50021 - 7,), np.float32)
    s(y[7:], out=out)
    _check(ScanVariant("sum", "float32"), out.get(), h[7:], None)


def test_empty_and_nan(queue):
    assert cltune.cumsum(np.zeros(0, np.float32), queue=queue).shape == (0,)
    assert cltune.cumsum(np.zeros((0, 3), np.float32), axis=0, queue=queue).shape == (0, 3)
    x = np.array([1, 5, np.nan, 7, 2], np.float32)
    got = cltune.cummax(x, queue=queue).get()
    assert np.array_equal(got, np.maximum.accumulate(x), equal_nan=True)


def test_errors_are_clear(queue):
    x = cla.to_device(queue, np.ones((4, 5), np.float32))
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else ValueError):
        cltune.cumsum(x, axis=2)
    with pytest.raises(TypeError, match="axis must be an int"):
        cltune.cumsum(x, axis=(0, 1))
    with pytest.raises(TypeError, match="needs queue="):
        cltune.cumsum(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="not contiguous"):
        cltune.cumsum(x[:, ::2])
    with pytest.raises(TypeError, match="this scanner is for float32"):
        cltune.get_scanner(queue, "sum", np.float32)(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="unknown scan op"):
        cltune.get_scanner(queue, "median", np.float32)
    with pytest.raises(ValueError, match="unsupported dtype"):
        cltune.get_scanner(queue, "sum", np.complex64)
    with pytest.raises(TypeError, match="out must be"):
        cltune.cumsum(x, axis=0, out=cla.empty(queue, (4, 5), np.float64))
    with pytest.raises(ScanConfigError, match="wg"):
        ScanConfig("rows", wg=3)
    with pytest.raises(ScanConfigError, match="unknown config field"):
        ScanConfig.from_mapping({"layout": "rows", "wg": 4, "items": 4, "stage": 0,
                                 "group_scan": 0, "groups_per_cu": 4, "x": 1})
    with pytest.raises(ValueError, match="op/dtype/layout"):
        variant_of("sum/float32")


def test_a_repeated_cumsum_keeps_its_queues_scanner_until_the_caches_are_cleared(ctx, queue):
    """`cltune.cumsum(x)` called again finds its scanner by (op, x's queue, dtype): each queue
    its own, cumsum and cumprod apart; calls with dtype= or queue= take the general path and
    keep nothing; `cltune.clear_caches()` forgets them."""
    import cltune.families.scan.api as A

    cltune.clear_caches()
    q2 = cl.CommandQueue(ctx)
    h = np.random.default_rng(4).random(1001).astype(np.float32)
    x, x2 = cla.to_device(queue, h), cla.to_device(q2, h)
    want = np.cumsum(h.astype(np.float64))
    for _ in range(2):
        y, y2 = cltune.cumsum(x), cltune.cumsum(x2)
        assert y.queue is queue and y2.queue is q2
        assert np.allclose(y.get(), want, rtol=1e-5) and np.allclose(y2.get(), want, rtol=1e-5)
    f32 = np.dtype(np.float32)
    assert A._plain[("sum", queue, f32)] is A.get_scanner(queue, "sum", f32)
    assert A._plain[("sum", q2, f32)] is A.get_scanner(q2, "sum", f32)
    assert np.allclose(cltune.cumprod(x).get(), np.cumprod(h.astype(np.float64)), rtol=1e-4)
    assert set(A._plain) == {("sum", queue, f32), ("sum", q2, f32), ("prod", queue, f32)}
    cltune.clear_caches()
    assert not A._plain
    assert cltune.cumsum(x, dtype=np.float64).dtype == np.float64
    assert cltune.cumsum(x, queue=q2).queue is q2
    assert not A._plain


def test_explain_says_where_the_config_came_from(queue, db_url):
    s = cltune.get_scanner(queue, "sum", np.float32, db=db_url)
    e = s.explain((4096, 16), axis=0)
    assert e.config.layout == "cols" and e.level == "builtin" and "untuned" in str(e)
    assert s.explain(1 << 20).config.layout == "rows"


@pytest.mark.parametrize("layout", ["rows", "cols"])
def test_every_config_of_a_small_space_validates(ctx, queue, device, layout):
    """Every point of a restricted space through the validation a tuning trial runs (awkward
    lengths, rows, segments, exclusive)."""
    info, dev = device
    sp = make_space(info, layout, 4)
    wgs = (sp.values["wg"][0], 4 if info.type == "cpu" else sp.values["wg"][1])
    tried = 0
    for op, dtype in [("sum", "float32"), ("max", "int32")]:
        v = ScanVariant(op, dtype, layout)
        for wg, items, stage, gs in itertools.product(wgs, (1, 4), sp.values["stage"],
                                                      sp.values["group_scan"]):
            if stage == 2:  # a work-item its chunk in vector registers: one shape
                wg, items, gs = 1, 8, 0
            cfg = ScanConfig(layout, wg=wg, items=items, stage=stage, group_scan=gs,
                             groups_per_cu=8)
            if sp.check(cfg):  # staging with fewer than 4 work-items is not offered
                assert cfg.stage and wg < 4
                continue
            chk = validate(ScanLauncher(ctx, dev, info, v, cfg), queue, 1 << 12)
            assert chk.ok, (str(v), cfg.short(), chk.reason)
            tried += 1
    assert tried >= 8


@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int32"), ("max", "float32"),
                                      ("prod", "float64")])
def test_cols_in_the_gpu_geometry(ctx, queue, device, op, dtype, monkeypatch):
    """GPUs cut strided scans in two dimensions (launch.plan(gpu=True)): a group of wc strips
    by wg / wc chunks, the top step's lanes per column; and build them with rows loaded in
    batches before their stores (CLT_COLS_BATCH). Run here on the CPU device with both forced,
    over few and many columns, long and short axes, exclusive and inclusive, at an offset,
    in place: numpy's answers within the plan's rounding bound."""
    from cltune.families.scan import kernel as sk
    from cltune.families.scan import launch as sl
    from cltune.families.scan.reference import roundings, run_view

    defines, source = sk.build_defines, sk.scan_source()
    monkeypatch.setattr(sk, "build_defines",
                        lambda v, c, f, **kw: defines(v, c, f, **{**kw, "gpu": True}))
    monkeypatch.setattr(sk, "scan_source", lambda: source + "\n/* gpu build */\n")

    info, dev = device
    if dtype == "float64" and not info.fp64:
        pytest.skip("no fp64")
    cfg = ScanConfig("cols", wg=16, items=1, stage=0, group_scan=0, groups_per_cu=64)
    v = ScanVariant(op, dtype, "cols")
    assert f"-DCLT_COLS_BATCH={sk.COLS_BATCH}" in sk.build_defines(v, cfg, sk.Form())
    la = ScanLauncher(ctx, dev, info, v, cfg)
    monkeypatch.setattr(sl, "TILE_COLS", True)  # the tile kernel, off until measured
    la.plan = lambda o, r, i: sl.plan(cfg, info.compute_units, o, r, i, gpu=True)
    seen, tiles = set(), 0
    for j, (shape, axis, excl) in enumerate([((20000, 3), 0, False), ((5001, 16), 0, True),
                                             ((3, 2999, 5), 1, False), ((777, 40), 0, True),
                                             ((64, 300), 0, False), ((1, 7), 0, False),
                                             ((9, 65), 0, True), ((4, 3, 17), 1, False),
                                             ((129, 33), 0, False)]):
        x = sample(v, shape, seed=j)
        outer = int(np.prod(shape[:axis]))
        r, inner = shape[axis], int(np.prod(shape[axis + 1:]))
        p = la.plan(outer, r, inner)
        seen.add((p.wc < cfg.wg, p.lanes > 1))
        tiles += p.tile
        got = run_view(la, queue, x, (outer, r, inner), excl, None, xoff=j % 3)
        want, scale = reference(v, x, axis, excl, None)
        chk = compare(v, got.reshape(shape), want.reshape(shape), scale,
                      roundings(v, cfg, p.groups, p.chunk, r, p.lanes))
        assert chk.ok, (shape, axis, excl, p, chk.reason)
    assert (True, True) in seen and (False, False) in seen  # both cuts ran
    assert tiles >= 2  # short columns with the group's carries (clt_scan_cols_tile) ran
    # short columns (<= SHORT_COLS rows) are one launch however few the columns: by a
    # work-item a column up to COLS_BATCH rows (or where a group cannot hold the chunks), else
    # by a group's chunks of at most COLS_BATCH rows; longer ones are cut to fill the device
    for rows, cols in ((1, 7), (9, 65), (64, 10**4), (sl.SHORT_COLS, 1), (8, 10**4)):
        p = sl.plan(cfg, 132, 1, rows, cols, gpu=True)
        assert la._one_launch(p) and (p.tile == (rows > sk.COLS_BATCH
                                                 and rows <= sk.COLS_BATCH * cfg.wg)), (rows, p)
        assert not p.tile or p.chunk <= sk.COLS_BATCH and p.groups * p.wc <= cfg.wg, p
    assert sl.plan(cfg, 132, 1, sl.SHORT_COLS + 1, 1, gpu=True).groups > 1
    if v.result_dtype != np.dtype(dtype):  # int32 sums widen to int64 (numpy): no in place
        return
    # in place (out = x): a batch's rows are all read before any of them is written
    x = sample(v, (3001, 5), seed=9)
    buf = cla.to_device(queue, x)
    evs = la.enqueue(queue, buf.base_data, 0, buf.base_data, 0, (1, 3001, 5))
    cl.wait_for_events(evs)
    want, scale = reference(v, x, 0, False, None)
    p = la.plan(1, 3001, 5)
    chk = compare(v, buf.get(), want, scale, roundings(v, cfg, p.groups, p.chunk, 3001, p.lanes))
    assert chk.ok, chk.reason


@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int8"), ("prod", "float64"),
                                      ("max", "float32"), ("min", "int32"), ("sum", "uint64")])
def test_cols_in_wide_strips(ctx, queue, device, op, dtype):
    """CPUs scan strided columns in wide strips (64..1024 columns a work-item, a row at a time
    in vectors of 16: kernels/scan.cl's COLS_WIDE): strips cut short by the last column
    (widths not multiples of 16), one chunk and many (carries), exclusive and inclusive, at an
    offset, 3-D, floats' min/max element by element, int8 summed as int64, and in place:
    numpy's answers within the plan's rounding bound."""
    from cltune.families.scan.reference import roundings, run_view

    info, dev = device
    if dtype == "float64" and not info.fp64:
        pytest.skip("no fp64")
    v = ScanVariant(op, dtype, "cols")
    for j, (items, gpc, shape, axis, excl) in enumerate([
            (64, 4, (37, 70), 0, False), (64, 256, (301, 150), 0, True),
            (128, 1, (5, 1000), 0, True), (256, 64, (999, 17), 0, False),
            (64, 128, (4, 33, 131), 1, False), (1024, 4, (3, 2049), 0, False),
            (512, 256, (2000, 515), 0, True), (64, 16, (9, 7, 3), 1, True)]):
        cfg = ScanConfig("cols", wg=1, items=items, stage=0, group_scan=0, groups_per_cu=gpc)
        la = ScanLauncher(ctx, dev, info, v, cfg)
        x = sample(v, shape, seed=j)
        outer = int(np.prod(shape[:axis]))
        r, inner = shape[axis], int(np.prod(shape[axis + 1:]))
        p = la.plan(outer, r, inner)
        got = run_view(la, queue, x, (outer, r, inner), excl, None, xoff=j % 3)
        want, scale = reference(v, x, axis, excl, None)
        chk = compare(v, got.reshape(shape), want.reshape(shape), scale,
                      roundings(v, cfg, p.groups, p.chunk, r, p.lanes))
        assert chk.ok, (items, shape, axis, excl, p, chk.reason)
        if items == 64 and gpc >= 128 and info.type == "cpu":
            # the chunks' carries ran (reduce, top, down); a GPU's plan (many compute units,
            # colgroups) may keep 301 rows in one chunk: answered right above all the same
            assert p.groups > 1, p
    if v.result_dtype != np.dtype(dtype):  # int8 sums widen to int64 (numpy): no in place
        return
    cfg = ScanConfig("cols", wg=1, items=64, stage=0, group_scan=0, groups_per_cu=64)
    la = ScanLauncher(ctx, dev, info, v, cfg)
    x = sample(v, (3001, 83), seed=9)
    buf = cla.to_device(queue, x)
    cl.wait_for_events(la.enqueue(queue, buf.base_data, 0, buf.base_data, 0, (1, 3001, 83)))
    want, scale = reference(v, x, 0, False, None)
    p = la.plan(1, 3001, 83)
    chk = compare(v, buf.get(), want, scale, roundings(v, cfg, p.groups, p.chunk, 3001, p.lanes))
    assert chk.ok, chk.reason


@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int8"), ("prod", "float64"),
                                      ("min", "int32"), ("max", "uint8")])
def test_rows_shorter_than_a_vector(ctx, queue, device, op, dtype):
    """CPUs' vector scan takes rows shorter than its vectors (8 or 16) as whole vectors of
    (head flag, value) pairs (kernels/scan.cl's CHUNK_SCAN_MASKED): every row length 1..17,
    chunks that end mid-row (one chained pass and reduce-then-scan), vectors of 8 and 16,
    exclusive and inclusive, at an offset: numpy's answers within the plan's bound."""
    from cltune.families.scan.reference import roundings, run_view

    info, dev = device
    if dtype == "float64" and not info.fp64:
        pytest.skip("no fp64")
    v = ScanVariant(op, dtype, "rows")
    chains = (0, 3) if info.int64_atomics else (0,)
    j = 0
    for items, chain in itertools.product((8, 16), chains):
        cfg = ScanConfig("rows", wg=1, items=items, stage=2, group_scan=0, groups_per_cu=64,
                         chain=chain)
        la = ScanLauncher(ctx, dev, info, v, cfg)
        for length in (*range(1, 18), 3):
            j += 1
            shape, excl = (997 // length + 3, length), bool(j % 2)
            x = sample(v, shape, seed=j)
            p = la.plan(shape[0], length, 1)
            got = run_view(la, queue, x, (shape[0], length, 1), excl, None, xoff=j % 5)
            want, scale = reference(v, x, 1, excl, None)
            chk = compare(v, got.reshape(shape), want.reshape(shape), scale,
                          roundings(v, cfg, p.groups, p.chunk, length, p.lanes))
            assert chk.ok, (items, chain, shape, excl, p, chk.reason)
            assert p.groups > 1 or shape[0] * length <= cfg.tile, p


def test_validation_refuses_a_wrong_answer(queue):
    v = ScanVariant("sum", "float32")
    x = sample(v, (1000,), seed=1)
    want, scale = reference(v, x, 0)
    bad = want.astype(np.float32)
    bad[500] += 1e-2
    assert not compare(v, bad, want, scale, 30).ok
    vi = ScanVariant("sum", "int32")
    xi = sample(vi, (1000,), seed=1)
    wi, _ = reference(vi, xi, 0)
    got = wi.copy()
    got[999] += 1
    assert "element 999" in compare(vi, got, wi, None, 0).reason


def test_tune_stores_a_best_and_the_runtime_serves_it(ctx, queue, device, db_url,
                                                      storage_url):
    from cltune.tuning.tuner import TuneOptions, Tuner  # the tuner loads optuna
    from cltune.tuning_db import Store

    info, dev = device
    store = Store.open(db_url)
    try:
        opts = TuneOptions(family="scan", variant="sum/float32/rows", buckets=((0, 14),),
                           trials=4, timeout_s=120, seed=1,
                           restrict={"items": (4, 8), "groups_per_cu": (2, 4)})
        res = Tuner(ctx, dev, info, store, storage_url, opts).run()
    finally:
        store.close()
    assert [r.size_class for r in res] == ["2^0x2^14"]
    assert isinstance(res[0].config, ScanConfig) and res[0].gbps
    s = cltune.get_scanner(queue, "sum", np.float32, db=db_url)
    e = s.explain(20000)
    assert e.level == "exact" and e.size_class == "2^0x2^14" and e.config == res[0].config
    h = sample(ScanVariant("sum", "float32"), (20000,), seed=4)
    _check(ScanVariant("sum", "float32"), s(cla.to_device(queue, h)).get(), h, None)


@pytest.mark.slow
def test_past_2_to_the_31(queue):
    """n = 2^31 + 1027 bytes (64-bit indices in every kernel; 64-bit CSR offsets): a running
    max whose steps sit past 2^31, whole and restarted by a segment that starts past 2^31."""
    n = 2**31 + 1027
    big = 2**31
    if queue.device.max_mem_alloc_size < n:  # PoCL on a 24 GiB host: 2 GiB per buffer
        pytest.skip(f"the device allocates at most {queue.device.max_mem_alloc_size} bytes")
    # made, and checked, on the device (by pyopencl's own reduction: the elements of a span
    # unlike v): a 2 GiB host copy costs a 2-core host 30-50 s of page faults and compares
    from pyopencl.reduction import ReductionKernel

    xd = cla.zeros(queue, n, np.uint8)
    for i, v in ((1000, 100), (big + 500, 50), (n - 3, 200)):
        xd[i:i + 1].set(np.array([v], np.uint8))
    unlike = ReductionKernel(queue.context, np.int64, neutral="0", reduce_expr="a+b",
                             map_expr="x[i] != v", arguments="const uchar *x, uchar v")

    def same(a, lo, hi, v):  # a[lo:hi] all v
        return int(unlike(a[lo:hi], np.uint8(v)).get()) == 0

    s = cltune.get_scanner(queue, "max", np.uint8)
    got = s(xd)
    assert same(got, 0, 1000, 0) and same(got, 1000, n - 3, 100) and same(got, n - 3, n, 200)
    del got
    got = s.segments(xd, np.array([0, big + 7, n], np.int64))
    assert same(got, 1000, big + 7, 100) and same(got, big + 7, big + 500, 0)
    assert same(got, big + 500, n - 3, 50) and same(got, n - 3, n, 200)


def test_out_of_order_queue(ctx, device):
    """Calls back to back on an out-of-order queue: each call's launches wait for each other
    and for the previous call's (they share the partials)."""
    import pyopencl as cl

    _, dev = device
    try:
        q = cl.CommandQueue(ctx, dev,
                            cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    v = ScanVariant("sum", "int32")
    hs = [sample(v, (70001 + k,), seed=k) for k in range(6)]
    s = cltune.get_scanner(q, "sum", np.int32)
    outs = [s(cla.to_device(q, h)) for h in hs]
    for h, o in zip(hs, outs, strict=True):
        assert np.array_equal(o.get(), np.cumsum(h))


def test_repeated_calls_of_one_shape_stay_right_and_checked(ctx, queue, monkeypatch):
    """The short way of a shape served before (Scanner._hot): other arrays of that shape,
    views at an offset, out reused or not, exclusive; it waits for an unfinished event of
    out's (a user event); arrays it must not take (another dtype, a wrong out, F order, an
    axis that is not an int) still go the long way and get its answers and errors."""
    import pyopencl as cl

    s = cltune.get_scanner(queue, "sum", np.float32)
    s._hot.clear()  # the scanner is shared: other tests may have served these shapes before
    short = []
    real = s._hot_call
    monkeypatch.setattr(s, "_hot_call", lambda *a: short.append(real(*a)) or short[-1])

    def counted_goes() -> None:  # the launcher's prepared call (hot[4]) is the short way too
        for key, e in list(s._hot.items()):
            if e[4] is not None and not hasattr(e[4], "counted"):
                def go(*a, g=e[4]):
                    short.append(g(*a))
                    return short[-1]
                go.counted = True
                s._hot[key] = (*e[:4], go)

    v = ScanVariant("sum", "float32")
    base = sample(v, (3 * 4099 + 11,), seed=9)
    xd = cla.to_device(queue, base)
    out = cla.empty(queue, (4099,), np.float32)
    for k in range(6):
        part = xd[k:k + 4099]  # same shape, offsets 0..5 elements
        got = s(part, out=out if k % 2 else None, exclusive=k >= 4)
        _check(v, got.get(), base[k:k + 4099], None, exclusive=k >= 4)
        counted_goes()
    assert len(short) == 4 and all(r is not None for r in short)  # calls 2, 3, 4 and 6
    gate = cl.UserEvent(ctx)
    out.events.append(gate)
    res = s(xd[1:4100], out=out)
    assert res is out and len(out.events) == 1
    assert out.events[0].command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    _check(v, out.get(), base[1:4100], None)
    with pytest.raises(TypeError, match="dtype"):
        s(cla.to_device(queue, base[:4099].astype(np.float64)))
    with pytest.raises(TypeError, match="out must be"):
        s(xd[:4099], out=cla.empty(queue, (4099,), np.float64))
    with pytest.raises(TypeError, match="axis"):
        s(xd[:4099], axis=1.0)
    # a 2-D shape's fresh results on the short way: the long way's shape and C strides
    x2 = cla.to_device(queue, base[:40 * 101].reshape(40, 101))
    first, n_short = s(x2, axis=1), len(short)
    counted_goes()
    again = s(x2, axis=1)
    assert len(short) == n_short + 1 and short[-1] is not None
    assert (again.shape, again.strides) == (first.shape, first.strides) == ((40, 101), (404, 4))
    _check(v, again.get(), base[:40 * 101].reshape(40, 101), 1)
    h2 = base[:40 * 101].reshape(40, 101)
    for arr in (h2, np.asfortranarray(h2)):
        for axis in (0, 1, None):
            got = s(cla.to_device(queue, arr), axis=axis).get()
            _check(v, got, np.ascontiguousarray(arr) if axis is None else arr, axis)


def test_served_cpu_scans_cut_rows_into_chunks_of_at_least_the_bound(ctx, queue, device):
    """CPUs: a served 1-D scan cuts its rows into chunks of >= CPU_MIN_CHUNK elements (one
    group under twice that), large inputs into the config's own; the answers stay numpy's
    around the bounds; the tuner validates the config in its own many short chunks."""
    from cltune.families.scan import launch
    cfg = ScanConfig("rows", wg=1, items=16, stage=2, groups_per_cu=128, chain=3)
    m = launch.CPU_MIN_CHUNK
    assert launch.plan(cfg, 2, 1, 4096, 1).groups == 256
    assert launch.plan(cfg, 2, 1, 4096, 1, min_chunk=m).groups == 1
    p = launch.plan(cfg, 2, 1, 3 * m + 11, 1, min_chunk=m)
    assert p.groups == 3 and p.chained and p.chunk >= m
    assert launch.plan(cfg, 2, 1, 1 << 24, 1, min_chunk=m).groups == 256
    r2t = ScanConfig("rows", wg=4, items=2, stage=0, groups_per_cu=4)
    assert launch.plan(r2t, 8, 1, 2 * m - 1, 1, min_chunk=m).groups == 1
    info, dev = device
    la = ScanLauncher(ctx, dev, info, ScanVariant("sum", "float32"), cfg,
                      launch.serving_min_chunk(info))
    own = la.in_own_chunks()
    assert own.min_chunk == 0 and own._builds is la._builds
    if info.type == "cpu":
        assert la.min_chunk == m and own is not la
    else:
        assert la.min_chunk == 0 and own is la
    for n in (m - 1, 2 * m - 1, 2 * m + 1, 5 * m + 3):
        for dt in ("float32", "int32"):
            v = ScanVariant("sum", dt)
            h = sample(v, (n,), seed=n)
            _check(v, cltune.cumsum(cla.to_device(queue, h)).get(), h, None)


def test_cpu_strided_columns_take_a_work_item_a_group():
    """CPUs scan strided columns a work-item a group (groups of 4 ran 1.1-1.4x slower on
    both CPU runtimes, docs/logs/cpu-scan-cols-2026-12-07.txt) in wide strips of 512 columns
    (16 where the device's health caps vectors below 16 accumulators); GPUs keep groups of
    256 one column a work-item."""
    from types import SimpleNamespace as NS

    from cltune.families.scan.defaults import builtin_config as scan_builtin

    cpu = scan_builtin(NS(type="cpu", max_wg=8192), "cols")
    gpu = scan_builtin(NS(type="gpu", max_wg=1024), "cols")
    assert (cpu.wg, cpu.items) == (1, 512) and (gpu.wg, gpu.items) == (256, 1)
    capped = scan_builtin(NS(type="cpu", max_wg=8192, max_vector_bytes=32), "cols")
    assert capped.items == 16
