"""cltune.topk (#41) against torch.topk's order computed on the host (NaN the largest, -0.0
equal to 0.0, equal values by the lower index): every dtype, sizes that are multiples of
nothing, ties across the k-th place, the smallest k, along any axis; every strategy of
kernels/topk.cl through the launcher (lists; the radix select with its kept counts or its
counting pass, its __local or global sort); the selector, the CLI and clear errors."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.topk import launch as topk_launch
from cltune.families.topk.config import TopkConfig, TopkConfigError
from cltune.families.topk.defaults import builtin_config
from cltune.families.topk.kernel import TopkSpec, spec_for
from cltune.families.topk.launch import TopkLauncher
from cltune.families.topk.reference import compare, reference, sample


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(41)


def _want(h: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    moved = np.moveaxis(h, axis, -1)
    v, i = reference(moved.reshape(-1, moved.shape[-1]), k, largest)
    shape = (*moved.shape[:-1], k)
    return (np.moveaxis(v.reshape(shape), -1, axis), np.moveaxis(i.reshape(shape), -1, axis))


def _check(got: tuple, want: tuple, what: object) -> None:
    gv, gi = (a.get() for a in got)
    assert gv.shape == want[0].shape and gv.dtype == want[0].dtype, what
    assert gi.dtype == np.int64, what
    assert np.array_equal(gv, want[0], equal_nan=True), what
    assert np.array_equal(gi, want[1]), what


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int8, np.uint16,
                                np.int32, np.uint64])
def test_topk_matches_torch_order(queue, device, rng, dt):
    """1-D and along rows, the largest and the smallest, k from 1 to past the lists' reach
    (the radix select), on data with NaN, signed zeros and a run of equal values."""
    info, _ = device
    if dt == np.float64 and not info.fp64:
        pytest.skip("the device has no cl_khr_fp64")
    h = sample(np.dtype(dt), 1, 20011, rng)[0]
    x = cla.to_device(queue, h)
    for k in ((1, 7, 300) if dt == np.float32 else (5,)):
        for largest in (True, False):
            _check(cltune.topk(x, k, largest=largest), _want(h, k, 0, largest), (dt, k))
    rows = sample(np.dtype(dt), 5, 1003, rng)
    _check(cltune.topk(rows, 9, queue=queue), _want(rows, 9, 1, True), (dt, "rows"))


def test_topk_along_any_axis_and_edge_cases(queue, rng):
    """axis 0 of C and F order, the middle axis of a 3-D array (C order: transposed on the
    device, there and back), an axis followed by axes of length 1; k = 0,
    k = n, an empty axis, a 0-d array (the result's shape as torch's); a view that is not
    contiguous is refused with the way out."""
    h = rng.standard_normal((37, 23)).astype(np.float32)
    for order in ("C", "F"):
        x = cla.to_device(queue, np.asarray(h, order=order))
        for axis in (0, 1, -1):
            _check(cltune.topk(x, 4, axis=axis), _want(h, 4, axis, True), (order, axis))
    h3 = rng.integers(-9, 9, (4, 50, 3)).astype(np.int32)  # many ties
    _check(cltune.topk(h3, 6, axis=1, largest=False, queue=queue), _want(h3, 6, 1, False),
           "3-D")
    h4 = rng.standard_normal((2, 7, 9, 4)).astype(np.float64)
    for axis in (0, 1, 2):
        _check(cltune.topk(h4, 2, axis=axis, queue=queue), _want(h4, 2, axis, True),
               ("4-D", axis))
    h1 = rng.standard_normal((5, 30, 1)).astype(np.float32)  # the axis is the last not 1
    _check(cltune.topk(h1, 4, axis=1, queue=queue), _want(h1, 4, 1, True), "trailing 1")
    x = cla.to_device(queue, h)
    v, i = cltune.topk(x, 0)
    assert v.shape == (37, 0) and i.shape == (37, 0)
    _check(cltune.topk(x, 23), _want(h, 23, 1, True), "k = n")
    v, i = cltune.topk(np.zeros((3, 0), np.float32), 0, queue=queue)
    assert v.shape == (3, 0)
    v, i = cltune.topk(np.array(2.5, np.float32), 1, queue=queue)
    assert v.shape == () and float(v.get()) == 2.5 and int(i.get()) == 0
    with pytest.raises(ValueError, match="non-contiguous"):
        cltune.topk(x[:, ::2], 3)


@pytest.mark.parametrize("bad,err,match", [
    (dict(k=24), ValueError, "out of range"), (dict(k=-1), ValueError, "out of range"),
    (dict(k=True), TypeError, "bool"), (dict(k=2, axis=2), ValueError, "out of bounds"),
    (dict(k=2, axis=1.0), TypeError, "axis must be an int"),
])
def test_topk_errors(queue, bad, err, match):
    x = np.ones((3, 23), np.float32)
    with pytest.raises(err, match=match):
        cltune.topk(x, queue=queue, **bad)
    with pytest.raises(TypeError, match="complex64 is not supported"):
        cltune.topk(x.astype(np.complex64), 1, queue=queue)
    with pytest.raises(TypeError, match="queue"):
        cltune.topk(x, 1)


def test_gpus_serve_many_short_rows_by_rowsel_with_groups_by_the_rows_length():
    """The builtin along rows on a GPU (no device needed): at least a row per compute unit of
    up to 2^16 elements with k <= 128 go to rowsel, a work-item per 32 elements of a row in
    groups of 64 to 1024 (the H100's measured best); fewer rows, longer rows, a larger k and
    CPUs keep the other strategies."""
    from types import SimpleNamespace as NS

    gpu = NS(type="gpu", max_wg=1024, local_mem=49152, compute_units=132)
    for rows, m, wg in ((4096, 4096, 128), (65536, 256, 64), (16384, 1024, 64),
                        (256, 65536, 1024), (1000, 3001, 64), (132, 20000, 512)):
        for k in (1, 10, 100, 128):
            assert builtin_config(gpu, k, 4, rows, rows * m) == TopkConfig("rowsel", wg, 1, 8)
    assert builtin_config(gpu, 10, 4, 131, 131 * 4096).strategy != "rowsel"
    assert builtin_config(gpu, 10, 4, 4096, 4096 * 70000).strategy != "rowsel"
    assert builtin_config(gpu, 129, 4, 4096, 4096 * 4096).strategy == "radix"
    # the radix select along several rows with 8-bit digits (11-bit ones failed an H100's
    # queue along 1024x16384); one row keeps 11
    assert builtin_config(gpu, 200, 4, 1024, 1024 * 16384) == TopkConfig("radix", 256, 8, 8)
    assert builtin_config(gpu, 200, 4, 1, 16384).bits == 11
    assert builtin_config(gpu, 10, 4, 4096).strategy == "lists"  # the length unknown
    small = NS(type="gpu", max_wg=256, local_mem=32768, compute_units=16)
    assert builtin_config(small, 10, 8, 64, 64 * 65536) == TopkConfig("rowsel", 256, 1, 8)
    cpu = NS(type="cpu", max_wg=4096, local_mem=65536, compute_units=2)
    assert builtin_config(cpu, 10, 4, 4096, 4096 * 4096).strategy == "lists"


@pytest.mark.parametrize("cfg", [TopkConfig("lists", 1, 4, 8), TopkConfig("lists", 8, 2, 8),
                                 TopkConfig("radix", 16, 2, 8), TopkConfig("radix", 1, 4, 11),
                                 TopkConfig("radix", 8, 1, 4), TopkConfig("sample", 16, 2, 8),
                                 TopkConfig("sample", 1, 4, 11), TopkConfig("rowsel", 1, 1, 8),
                                 TopkConfig("rowsel", 16, 1, 8), TopkConfig("rowsel", 64, 1, 8)])
def test_every_strategy_selects_exactly(ctx, queue, device, rng, cfg, monkeypatch):
    """Each strategy through the launcher, one group a row and several (the lists' second
    stage, the radix select's ticket), rows of 1 element to a few blocks, at an offset; the
    radix select with its groups' counts kept and counted again, its pairs sorted in __local
    and in global memory; rowsel with its row in __local memory where it fits and without."""
    info, dev = device
    for dt in (np.float32, np.int16):
        for rows, m, k in ((1, 1, 1), (3, 1000, 6), (1, 30011, 17), (2, 9001, 64)):
            spec = spec_for(np.dtype(dt), k, info)
            la = TopkLauncher(ctx, dev, info, spec, cfg)
            h = sample(np.dtype(dt), rows, m, rng)
            for largest in (True, False):
                x = cla.to_device(queue, np.concatenate([np.zeros(3, dt), h.ravel()]))
                v = cla.empty(queue, rows * k, dt)
                i = cla.empty(queue, rows * k, np.int64)
                la.run(queue, x, 3, m, rows, k, largest, v, i)
                why = compare(v.get().reshape(rows, k), i.get().reshape(rows, k),
                              *reference(h, k, largest))
                assert not why, (cfg.short(), dt, rows, m, k, largest, why)
    if cfg.strategy == "rowsel":  # every pass reading x, as where a row does not fit __local
        monkeypatch.setattr(topk_launch, "ROW_CACHE", False)
        h = sample(np.dtype(np.float32), 3, 9001, rng)
        la = TopkLauncher(ctx, dev, info, spec_for(np.dtype(np.float32), 33, info), cfg)
        assert not la.row_cached(9001)
        v, i = cla.empty(queue, 99, np.float32), cla.empty(queue, 99, np.int64)
        la.run(queue, cla.to_device(queue, h.ravel()), 0, 9001, 3, 33, False, v, i)
        why = compare(v.get().reshape(3, 33), i.get().reshape(3, 33), *reference(h, 33, False))
        assert not why, (cfg.short(), why)
    if cfg.strategy != "radix":
        return
    h = sample(np.dtype(np.float32), 2, 5003, rng)
    want = reference(h, 300)
    for keep, local_sort in ((0, True), (1 << 24, False)):
        monkeypatch.setattr(topk_launch, "KEEP_BYTES", keep)
        la = TopkLauncher(ctx, dev, info, TopkSpec(np.dtype(np.float32), 512, local_sort), cfg)
        v = cla.empty(queue, 600, np.float32)
        i = cla.empty(queue, 600, np.int64)
        la.run(queue, cla.to_device(queue, h.ravel()), 0, 5003, 2, 300, True, v, i)
        why = compare(v.get().reshape(2, 300), i.get().reshape(2, 300), *want)
        assert not why, (cfg.short(), keep, local_sort, why)


@pytest.mark.parametrize("dt,wg,fin", [(np.float32, 16, 8), (np.int64, 1, 1),
                                       (np.uint16, 8, 4), (np.float64, 1, 1),
                                       (np.float16, 1, 1), (np.int32, 64, 64)])
def test_the_sample_strategy_on_each_of_its_paths(ctx, queue, device, rng, dt, wg, fin,
                                                   monkeypatch):
    """The sample strategy's three ways to its answer, each forced: the candidates above the
    sample's threshold (its plan), too few of them with the keys equal to the threshold
    making up the rest (the threshold the sample's largest key, on data of a few values: the
    groups' blocks walked in order for the lowest-indexed equal keys), and the whole row by
    the finishing group (more candidates than are kept, or too few on distinct data); ties at
    the k-th place, the smallest k, ascending data, all equal, an offset; the same launcher
    called again (its counts left zero). Groups of 16 count digits in two copies of the
    bins, of 64 in eight."""
    info, dev = device
    if dt == np.float64 and not info.fp64:
        pytest.skip("the device has no cl_khr_fp64")
    orig = topk_launch.sample_plan
    k = 37
    spec = TopkSpec(np.dtype(dt), 64, True, 512, fin)
    la = TopkLauncher(ctx, dev, info, spec, TopkConfig("sample", wg, 2, 8))
    m = 20011
    datas = {"random": sample(np.dtype(dt), 1, m, rng)[0],
             "few": rng.integers(0, 6, m).astype(dt),
             "ascending": (np.arange(m) % np.iinfo(np.int16).max).astype(dt),
             "equal": np.full(m, 3, dt)}
    if np.dtype(dt).kind == "f":  # nearly all NaN: the smallest k take NaN by index too
        nan = np.full(m, np.nan, dt)
        nan[rng.choice(m, 11, replace=False)] = rng.standard_normal(11).astype(dt)
        nan[5000:5020] = rng.standard_normal(20).astype(dt)  # blocks without a NaN
        datas["nearly all NaN"] = nan
    plans = {"plan": orig, "sample max": lambda *a: (1, 4096, 0, 0, 512),
             "overflow": lambda *a: (60, 64, 0, 0, 512),
             # ~15600 candidates: past 8x the second sample's 512 keys
             "two samples": lambda *a: (400, 32768, 512, 4096, 512),
             "second overflows": lambda *a: (400, 32768, 512, 40, 512)}
    for pname, plan in plans.items():
        monkeypatch.setattr(topk_launch, "sample_plan", plan)
        for dname, h in datas.items():
            for largest in (True, False):
                x = cla.to_device(queue, np.concatenate([np.zeros(5, dt), h]))
                v = cla.empty(queue, k, dt)
                i = cla.empty(queue, k, np.int64)
                la.run(queue, x, 5, m, 1, k, largest, v, i)
                why = compare(v.get()[None], i.get()[None], *reference(h[None], k, largest))
                assert not why, (pname, dname, largest, why)
    assert orig(spec, info.local_mem, m, k) is not None  # (the plan itself was exercised)
    assert orig(spec, info.local_mem, 1000, k) is None  # a short row: the radix select's
    assert orig(spec_for(np.dtype(dt), k, info), info.local_mem, 1 << 20, k)[4] >= 512


def test_a_launcher_called_again_with_other_shapes(ctx, queue, device, rng):
    """The scratch a launcher keeps between calls (the radix select's bins, tickets and
    counts are left zero by each call instead of filled) serves calls of other row counts,
    lengths, k and orders in any sequence."""
    info, dev = device
    for cfg in (TopkConfig("radix", 8, 2, 8), TopkConfig("lists", 4, 2, 8)):
        la = TopkLauncher(ctx, dev, info, spec_for(np.dtype(np.float32), 16, info), cfg)
        for rows, m, k, largest in ((1, 5000, 16, True), (3, 700, 9, False), (1, 5000, 12, True),
                                    (2, 20011, 16, False), (5, 16, 16, True), (1, 33, 9, True)):
            h = sample(np.dtype(np.float32), rows, m, rng)
            v = cla.empty(queue, rows * k, np.float32)
            i = cla.empty(queue, rows * k, np.int64)
            la.run(queue, cla.to_device(queue, h.ravel()), 0, m, rows, k, largest, v, i)
            why = compare(v.get().reshape(rows, k), i.get().reshape(rows, k),
                          *reference(h, k, largest))
            assert not why, (cfg.short(), rows, m, k, largest, why)


def test_configs_are_validated():
    for kw in (dict(strategy="heap"), dict(wg=3), dict(groups_per_cu=0), dict(bits=7),
               dict(strategy="lists", bits=11), dict(strategy="rowsel", bits=4)):
        with pytest.raises(TopkConfigError):
            TopkConfig(**{**dict(strategy="radix", wg=8, groups_per_cu=4, bits=8), **kw})
    assert TopkConfig.from_mapping(TopkConfig().to_dict()) == TopkConfig()
    assert not TopkConfig("lists", 8, 4, 8).handles(2000)
    assert TopkConfig("radix", 8, 4, 8).handles(1 << 20)


def test_get_selector_calls_and_explains(queue, rng):
    s = cltune.get_selector(queue, np.float32)
    h = rng.standard_normal(5000).astype(np.float32)
    _check(s(cla.to_device(queue, h), 10), _want(h, 10, 0, True), "selector")
    e = s.explain(5000, 10)
    assert e.level == "builtin" and "topk/float32, k=10 of 5000" in str(e), e
    assert "rows" in s.explain(5000, 10, rows=50).why
    with pytest.raises(TypeError, match="takes float32"):
        s(h.astype(np.float64), 3)
    with pytest.raises(ValueError, match="dtype"):
        cltune.get_selector(queue, np.complex64)


def test_the_cli_tunes_stores_and_serves(info, queue, db_url, storage_url):
    """`cltune tune --topk` stores a class, `cltune show` lists it, `cltune verify`
    re-validates it, the API serves it (exact level) near the class, and `cltune bench --op
    topk` measures it against numpy."""
    import json

    from typer.testing import CliRunner

    from cltune.cli.app import app
    from cltune.families.topk.api import explain

    runner = CliRunner()
    args = ["tune", "--device", str(info.index), "--topk", "4096x16", "--dtype", "float32",
            "--trials", "3", "--timeout", "60", "--db", db_url, "--storage", storage_url]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    assert ("topk", "topk/float32", "2^12x2^4") in {
        (x["family"], x["variant"], x["size_class"]) for x in json.loads(r.output)}
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 0 and "topk/float32" in r.output, r.output
    e = explain(queue, np.float32, 5000, 13, db=db_url)
    assert e.level == "exact" and e.size_class == "2^12x2^4", e
    h = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    _check(cltune.topk(h, 13, queue=queue, db=db_url), _want(h, 13, 0, True), "served")
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--op", "topk", "--sizes",
                            "5000", "--k", "3", "--repeats", "2", "--json", "--db", db_url])
    assert r.exit_code == 0, r.output
    case = json.loads(r.output)["cases"][0]
    assert not case["wrong"] and {"cltune", "numpy"} <= set(case["rows"]), case
    for bad, msg in ((["--topk", "4096x16", "--op", "max"], "--op topk"),
                     (["--topk", "16x4096"], "must not exceed"),
                     (["--topk", "4096x16", "--hist", "4096x16"], "goes alone"),
                     (["--topk", "4096x16", "--dtype", "complex64"], "dtype")):
        r = runner.invoke(app, ["tune", "--device", str(info.index), *bad, "--db", db_url])
        assert r.exit_code != 0 and msg in r.output, (bad, r.output)
    r = runner.invoke(app, ["bench", "--device", str(info.index), "--op", "sum", "--k", "3"])
    assert r.exit_code != 0 and "--k goes with --op topk" in r.output


OCLGRIND_MARK = "CLTUNE-TOPK-OCLGRIND "
OCLGRIND_SCRIPT = r'''
import json
import numpy as np
import pyopencl.array as cla
from cltune.families.topk import launch as topk_launch
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import TopkSpec, spec_for
from cltune.families.topk.launch import TopkLauncher
from cltune.families.topk.reference import compare, reference, sample
rng = np.random.default_rng(3)
out = {"runs": []}
# (radix over 9001 and 9001 of few values: 2-3 groups a row, the last to finish picking the
# digit from the bins the others added, the ties of the k-th key ranked across the groups;
# rowsel with the row in __local memory and without)
for cfg, keep, local_sort, m, few, cache in (
        (TopkConfig("lists", 8, 2, 8), 1 << 24, True, 4001, 0, 1),
        (TopkConfig("lists", 1, 4, 8), 1 << 24, True, 4001, 0, 1),
        (TopkConfig("radix", 8, 2, 4), 1 << 24, True, 4001, 0, 1),
        (TopkConfig("radix", 8, 2, 4), 0, False, 4001, 0, 1),
        (TopkConfig("radix", 1, 4, 8), 1 << 24, True, 4001, 0, 1),
        (TopkConfig("radix", 16, 8, 11), 0, True, 9001, 1, 1),
        (TopkConfig("radix", 8, 8, 4), 1 << 24, True, 9001, 1, 1),
        (TopkConfig("rowsel", 8, 1, 8), 1 << 24, True, 4001, 0, 0),
        (TopkConfig("rowsel", 8, 1, 8), 1 << 24, True, 3001, 1, 1),
        (TopkConfig("rowsel", 64, 1, 8), 1 << 24, True, 4001, 0, 1)):
    topk_launch.ROW_CACHE = bool(cache)
    topk_launch.KEEP_BYTES = keep
    rows, k = 2, 5
    h = sample(np.dtype(np.float32), rows, m, rng)
    if few:
        h = rng.integers(0, 3, (rows, m)).astype(np.float32)
    err = ""
    try:
        spec = spec_for(np.dtype(np.float32), k, info)
        spec = TopkSpec(spec.dtype, spec.kp, local_sort)
        la = TopkLauncher(ctx, dev, info, spec, cfg)
        v = cla.empty(q, rows * k, np.float32)
        i = cla.empty(q, rows * k, np.int64)
        la.run(q, cla.to_device(q, h.ravel()), 0, m, rows, k, True, v, i)
        err = compare(v.get().reshape(rows, k), i.get().reshape(rows, k), *reference(h, k))
        if not err and cfg.strategy == "lists" and cfg.wg == 8:  # and the transposes
            t = cla.empty(q, rows * m, np.float32)
            la.transpose(q, cla.to_device(q, h.ravel()), 0, t, 1, rows, m)
            if not np.array_equal(t.get(), h.T.ravel(), equal_nan=True):
                err = "transpose differs"
    except Exception as e:
        err = f"{type(e).__name__}: {e}"[:300]
    out["runs"].append({"cfg": cfg.short(), "keep": keep, "local": local_sort, "error": err,
                        "gpr": topk_launch.groups(cfg, info.compute_units, m, rows)[0],
                        "cached": cfg.strategy == "rowsel" and la.row_cached(m)})
orig = topk_launch.sample_plan
for wg, fin, force, kind in ((8, 8, None, "random"), (8, 8, 1, "few"), (8, 4, 1, "ascending"),
                             (1, 1, None, "random"), (8, 8, 200, "random"),
                             (16, 16, None, "few"), (64, 64, None, "random")):
    topk_launch.sample_plan = (lambda *a, f=force: (11, 4096, 0, 0, 512) if f is None else
                               (f, 4096, 0, 0, 512) if f == 1 else (f, 4096, 64, 512, 512))
    cfg = TopkConfig("sample", wg, 2, 8)
    m, k = 2001, 5
    h = sample(np.dtype(np.float32), 1, m, rng)[0]
    if kind == "few":
        h = rng.integers(0, 3, m).astype(np.float32)
    elif kind == "ascending":
        h = np.arange(m, dtype=np.float32)
    err = ""
    try:
        la = TopkLauncher(ctx, dev, info, TopkSpec(np.dtype(np.float32), 8, True, 512, fin),
                          cfg)
        v = cla.empty(q, k, np.float32)
        i = cla.empty(q, k, np.int64)
        la.run(q, cla.to_device(q, h), 0, m, 1, k, True, v, i)
        err = compare(v.get()[None], i.get()[None], *reference(h[None], k))
    except Exception as e:
        err = f"{type(e).__name__}: {e}"[:300]
    out["runs"].append({"cfg": f"{cfg.short()} fin{fin} r{force} {kind}", "error": err})
print(MARK + json.dumps(out), flush=True)
'''


@pytest.mark.oclgrind
@pytest.mark.multiprocess
@pytest.mark.slow
def test_the_kernels_are_clean_under_oclgrind():
    """Every strategy (lists: the merge of the group's lists, the second stage; radix: the
    ticket that picks a digit (2-3 groups a row, the bins added and read by atomics), the kept
    counts and the counting pass, the ordered collection of ties, the __local and the global
    sort; rowsel: a group a row selecting from the row, read from x or from __local memory;
    sample: the groups' selects of the sample, the staged candidates, the finishing group's
    paths and second sample; groups of 16 and 64, whose digits are counted in copies of the
    bins) under Oclgrind: the reference's answers, no invalid access, no race, no divergent
    barrier."""
    from support.oclgrind import run_marked

    res, summary = run_marked(OCLGRIND_SCRIPT, OCLGRIND_MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert {r["cfg"].split()[0] for r in summary["runs"]} == {"lists", "radix", "sample",
                                                              "rowsel"}
    assert max(r.get("gpr", 1) for r in summary["runs"] if "radix" in r["cfg"]) > 1
    assert {r.get("cached") for r in summary["runs"] if "rowsel" in r["cfg"]} == {True, False}
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong
    assert res.reports == [], res.summary(limit=8)
