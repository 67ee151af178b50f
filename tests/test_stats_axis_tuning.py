"""Statistics along an axis, tuned (family `expr_axis`): `knl.tune(x, axis=k)` stores a validated
best per layout and shape class that calls are then served (level exact, nearest class), with
numpy's answers; hostile stored configs never reach the compiler (the heuristic serves);
`cltune show` / `export` / `import` carry the family; the bench's validation and the space."""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import numpy as np
import pyopencl.array as cla
import pytest
from typer.testing import CliRunner

import cltune
from cltune.cli.app import app
from cltune.core.family import get
from cltune.core.serving import CltuneWarning
from cltune.families.expr_axis.api import axis_reducer
from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import choose
from cltune.families.expr_axis.family import FAMILY as EXPR_AXIS
from cltune.families.expr_axis.family import variant
from cltune.families.expr_axis.reference import awkward, close
from cltune.families.expr_axis.target import ExprAxisTarget, make_space
from cltune.stats import api as stats
from cltune.stats.kernels import kernel as stats_kernel
from cltune.tuning_db import Store
from cltune.tuning_db.rows import Measurement

runner = CliRunner()
EXTRA = {"argmax": (), "var": (0.0,)}


@pytest.fixture
def tuned_db(ctx, db_url, monkeypatch):
    """CLTUNE_DB is a fresh database, and the statistics' reducers along axes read it (again
    after the test, the default one)."""
    monkeypatch.setenv("CLTUNE_DB", db_url)
    knls = [stats.kernel(op, ctx, np.float32) for op in EXTRA]

    def reload():
        for k in knls:
            for dev in ctx.devices:
                axis_reducer(ctx, dev, k.spec, None).reload()

    reload()
    yield db_url
    monkeypatch.delenv("CLTUNE_DB")
    reload()


def _want(op, h, axis):
    return np.argmax(h, axis=axis) if op == "argmax" else h.astype(np.float64).var(axis=axis)


def _check(op, x, h, axis):
    got = getattr(cltune, op)(x, axis=axis).get()
    if op == "argmax":
        np.testing.assert_array_equal(got, _want(op, h, axis))
    else:
        np.testing.assert_allclose(got, _want(op, h, axis), rtol=1e-5)


@pytest.mark.parametrize("op", list(EXTRA))
def test_tuning_each_axis_stores_a_best_that_is_served(ctx, queue, tuned_db, storage_url, op):
    h = np.random.default_rng(3).standard_normal((512, 32)).astype(np.float32)
    x = cla.to_device(queue, h)
    knl = stats.kernel(op, ctx, np.float32)
    for axis, layout, cls in ((1, "rows", "2^9x2^5"), (0, "cols", "2^9x2^5")):
        assert stats.explain(op, queue, np.float32, h.shape, axis).level == "builtin"
        res = knl.tune(x, *EXTRA[op], axis=axis, trials=4, timeout=60, db=tuned_db,
                       storage=storage_url)
        assert [r.size_class for r in res] == [cls]
        assert isinstance(res[0].config, AxisExprConfig) and res[0].config.layout == layout
        assert res[0].vs_builtin is not None  # the heuristic competed
        ex = stats.explain(op, queue, np.float32, h.shape, axis)
        assert (ex.level, ex.size_class, ex.config) == ("exact", cls, res[0].config)
        assert ex.variant == variant(knl.fingerprint, layout) and "class 2^9x2^5" in str(ex)
        _check(op, x, h, axis)
        # nearest class: another shape of the same layout is served by the tuned class
        h2 = np.random.default_rng(4).standard_normal((700, 45)).astype(np.float32)
        near = stats.explain(op, queue, np.float32, h2.shape, axis)
        assert (near.level, near.size_class) == ("exact", cls)
        _check(op, cla.to_device(queue, h2), h2, axis)
    s = Store.open(tuned_db, readonly=True)
    try:
        bests = {(b.family, b.variant, b.size_class) for b in s.bests(None)}
    finally:
        s.close()
    assert bests == {("expr_axis", variant(knl.fingerprint, lay), "2^9x2^5")
                     for lay in ("rows", "cols")}


def test_f_order_and_the_reducer_explain(ctx, queue, tuned_db, storage_url):
    """An F-ordered array along axis 0 is the rows layout; StatsReducer.explain_axis reports
    the tuned class and level; a reduction of everything stays the 1-D kernel's."""
    h = np.asfortranarray(np.random.default_rng(5).standard_normal((100, 30)).astype(
        np.float32))
    x = cla.to_device(queue, h)
    knl = stats.kernel("var", ctx, np.float32)
    res = knl.tune(x, 0.0, axis=0, trials=3, timeout=60, db=tuned_db, storage=storage_url)
    assert res[0].size_class == "2^5x2^7" and res[0].config.layout == "rows"
    r = cltune.get_reducer(queue, "var", np.float32)
    ex = r.explain_axis((100, 30), 0, order="F")
    assert (ex.level, ex.size_class) == ("exact", "2^5x2^7")
    assert r.explain_axis((100, 30), 0).level == "builtin"  # C order: cols, not tuned
    _check("var", x, h, 0)
    with pytest.raises(ValueError, match="nothing to tune"):
        knl.tune(cla.to_device(queue, h[:1].copy()), 0.0, axis=1, trials=1, db=tuned_db,
                 storage=storage_url)


def _store_best(db, info, fp, layout, size_class, config):
    s = Store.open(db)
    try:
        dev = s.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                              info.name)
        m = Measurement("expr_axis", variant(fp, layout), size_class, config, "k" * 16, "ok",
                        1 << 14, "t", "0" * 16, "", 1e-5, 1.0, None)
        s.set_best(dev, s.record(dev, m))
    finally:
        s.close()


GOOD = {"layout": "rows", "wg": 8, "lanes": 1, "items": 2, "strip": 1, "groups_per_cu": 8}


@pytest.mark.parametrize("config", [
    {**GOOD, "wg": "64 -DX=1"},
    {**GOOD, "evil": "-DCLT_AX_WG=1"},
    {k: v for k, v in GOOD.items() if k != "items"},
    {**GOOD, "lanes": 3},
    {**GOOD, "wg": True},
    {**GOOD, "layout": "cols", "strip": 4},  # valid, but stored for the rows layout
])
def test_a_hostile_stored_config_is_never_built(ctx, queue, info, tuned_db, config):
    knl = stats.kernel("argmax", ctx, np.float32)
    _store_best(tuned_db, info, knl.fingerprint, "rows", "2^8x2^4", config)
    if config.get("layout") == "rows":
        with pytest.raises(ValueError):
            get("expr_axis").parse_config(config)  # what import files and `show` go through
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ex = stats.explain("argmax", queue, np.float32, (256, 16), 1)
    assert ex.level == "builtin" and ex.size_class is None and "do not validate" in ex.why
    assert any(issubclass(x.category, CltuneWarning) and "skipped" in str(x.message)
               for x in w)
    assert ex.config == choose(info, 256, 16, 1, knl.spec.dtype_out.itemsize)
    h = np.random.default_rng(6).standard_normal((256, 16)).astype(np.float32)
    _check("argmax", cla.to_device(queue, h), h, 1)


def test_a_valid_stored_config_is_served_to_the_nearest_shape(ctx, queue, info, tuned_db):
    knl = stats.kernel("argmax", ctx, np.float32)
    tuned = {**GOOD, "wg": 4, "items": 4}
    _store_best(tuned_db, info, knl.fingerprint, "rows", "2^8x2^4", tuned)
    _store_best(tuned_db, info, knl.fingerprint, "rows", "2^4x2^12", {**GOOD, "wg": 2})
    for shape, cls in (((300, 20), "2^8x2^4"), ((10, 5000), "2^4x2^12"),
                       ((1 << 10, 3), "2^8x2^4")):
        ex = stats.explain("argmax", queue, np.float32, shape, 1)
        assert (ex.level, ex.size_class) == ("exact", cls), (shape, ex)
        h = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        _check("argmax", cla.to_device(queue, h), h, 1)
    assert stats.explain("argmax", queue, np.float32, (300, 20), 0).level == "builtin"
    # a class more than 2^3 away in either dimension does not serve: the heuristic does
    for shape in ((1 << 14, 3), (16, 1 << 16)):
        ex = stats.explain("argmax", queue, np.float32, shape, 1)
        assert ex.level == "builtin" and "more than 2^3 away" in ex.why, (shape, ex)
        assert ex.config == choose(info, *shape, 1, knl.spec.dtype_out.itemsize)
        h = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        _check("argmax", cla.to_device(queue, h), h, 1)


def test_show_export_import_round_trip(ctx, info, tuned_db, tmp_path):
    knl = stats.kernel("var", ctx, np.float32)
    cfg = {**GOOD, "layout": "cols", "strip": 16, "groups_per_cu": 2}
    _store_best(tuned_db, info, knl.fingerprint, "cols", "2^16x2^8", cfg)
    r = runner.invoke(app, ["show", "--json", "--db", tuned_db])
    assert r.exit_code == 0, r.output
    assert [(x["family"], x["config"]) for x in json.loads(r.output)] == [("expr_axis", cfg)]
    assert get("expr_axis").parse_config(cfg).short() == "cols wg=8 lanes=1 items=2 " \
        "strip=16 g/cu=2"  # what `cltune show` prints
    out = tmp_path / "export.json"
    assert runner.invoke(app, ["export", "-o", str(out), "--db", tuned_db]).exit_code == 0
    doc = json.loads(out.read_text())
    assert [(x["family"], x["variant"], x["config"]) for x in doc["results"]] == [
        ("expr_axis", variant(knl.fingerprint, "cols"), cfg)]
    other = f"sqlite:///{tmp_path / 'other.db'}"
    r = runner.invoke(app, ["import", str(out), "--db", other])
    assert r.exit_code == 0 and "1 new result" in r.output, r.output
    s = Store.open(other, readonly=True)
    try:
        assert [(b.family, b.size_class, b.config) for b in s.bests(None)] == [
            ("expr_axis", "2^16x2^8", cfg)]
    finally:
        s.close()
    # one hostile field rejects the whole file
    bad = json.loads(out.read_text())
    bad["results"][0]["config"]["wg"] = "8 -DX=1"
    out.write_text(json.dumps(bad))
    r = runner.invoke(app, ["import", str(out), "--db", other])
    assert r.exit_code != 0 and "config" in r.output and "Traceback" not in r.output
    bad["results"][0]["config"]["wg"] = 8
    bad["results"][0]["variant"] = knl.fingerprint + "/diagonal"
    out.write_text(json.dumps(bad))
    assert runner.invoke(app, ["import", str(out), "--db", other]).exit_code != 0
    # verify re-runs the families it can from the database alone; this one needs the kernel
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", tuned_db])
    assert r.exit_code == 0, r.output


def test_family_descriptor_checks_variants_and_classes():
    fp = "0123456789abcdef01234567"
    assert EXPR_AXIS.check_variant(f"{fp}/rows") == EXPR_AXIS.check_variant(f"{fp}/cols") == ""
    for v in (fp, f"{fp}/segs", f"{fp[:-1]}/rows", f"{fp}/rows/x", "sum/float32/rows"):
        assert EXPR_AXIS.check_variant(v), v
    assert EXPR_AXIS.check_size_class("2^20x2^4") == ""
    assert EXPR_AXIS.check_size_class("2^20") and EXPR_AXIS.check_size_class("2^99x2^1")


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_the_heuristic_is_a_point_of_every_space(info, kind):
    """The builtin config competes in every run: it must be feasible in the full space."""
    dev = info if kind == "cpu" and info.type == "cpu" else SimpleNamespace(
        type=kind, max_wg=1024 if kind == "gpu" else 8192, warp_size=32 if kind == "gpu" else 0,
        local_mem=49152 if kind == "gpu" else 262144, compute_units=132)
    for itemsize in (4, 8, 16, 32):
        for layout in ("rows", "cols"):
            space = make_space(dev, layout, itemsize)
            for a in range(0, 25, 3):
                for b in range(0 if layout == "rows" else 1, 25, 3):
                    view = (1 << a, 1 << b, 1) if layout == "rows" else (1, 1 << a, 1 << b)
                    cfg = choose(dev, *view, acc_size=itemsize)
                    assert space.check(cfg) == "", (kind, itemsize, view, cfg)


def test_awkward_views_and_close():
    for view in ((1 << 10, 16, 1), (16, 1 << 10, 1), (1, 1 << 10, 16), (1, 4, 2), (1, 16, 1)):
        aw = awkward(view)
        n = view[0] * view[1] * view[2]
        if aw is not None:
            assert aw[0] * aw[1] * aw[2] <= n and aw != view
            assert (aw[2] == 1) == (view[2] == 1)
    assert awkward((1, 1 << 10, 16)) == (2, 430, 19)
    f = np.dtype(np.float32)
    assert close(np.float32([1, 2, np.nan]), np.float32([1, 2, np.nan]), f, 1e-6) == ""
    assert "output 2" in close(np.float32([1, 2, 3]), np.float32([1, 2, np.nan]), f, 1e-6)
    assert "output 1" in close(np.float32([1, np.nan]), np.float32([1, 2]), f, 1e-6)
    assert "output 0" in close(np.float32([1.01, 2]), np.float32([1, 2]), f, 1e-3)
    assert close(np.float32([1.0001, 2]), np.float32([1, 2]), f, 1e-3) == ""
    assert "output 1" in close(np.int64([1, 2]), np.int64([1, 3]), np.dtype(np.int64), 1)
    assert "output 0" in close(np.float32([np.inf]), np.float32([-np.inf]), f, 1)


def test_every_config_is_checked_against_the_heuristic_and_the_reference(ctx, device):
    """evaluate: infeasible points stop before compiling; outputs that differ from the
    heuristic's or from the reference's samples stop at `validate`, never timed."""
    info, dev = device
    knl = stats.kernel("var", ctx, np.float32)
    t = ExprAxisTarget(ctx, dev, info, variant(knl.fingerprint, "rows"), kernel=knl)
    bench = t.bench((8, 6))
    assert [c.view for c in bench.checks] == [(256, 64, 1), (243, 67, 1)]
    cfg = t.builtin_for((8, 6))
    assert t.evaluate(cfg, bench).ok
    seeds = [AxisExprConfig("rows", **p) for p in t.seeds((), (8, 6), None)]
    assert seeds[0] == cfg and 3 <= len(seeds) == len(set(seeds)) <= 8  # and its neighbours
    assert all(t.space.check(c) == "" for c in seeds)
    out = t.evaluate(AxisExprConfig("cols", 8, 1, 1, 4), bench)
    assert out.step == "check" and not out.compiled
    chk = bench.checks[1]
    good = chk.expected.copy()
    chk.expected[-1] += 1  # the last output of the awkward view (a tail)
    out = t.evaluate(cfg, bench)
    assert out.step == "validate" and "heuristic" in out.reason and out.timing is None
    chk.expected[:] = good
    chk.refs[0] = chk.refs[0] * 2
    out = t.evaluate(cfg, bench)
    assert out.step == "validate" and "reference" in out.reason
    chk.refs[0] = chk.refs[0] / 2
    assert t.evaluate(cfg, bench).ok


def test_a_custom_kernel_along_an_axis(ctx, queue, db_url, storage_url):
    """Without a reference the heuristic's outputs are the expectation; a reference that the
    heuristic disagrees with stops tuning before anything is stored."""
    l2 = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]*x[i]",
                                "__global const float *x", db=db_url)
    h = np.random.default_rng(8).random((256, 48), dtype=np.float32)
    x = cla.to_device(queue, h)
    res = l2.tune(x, axis=1, trials=3, timeout=60, storage=storage_url)
    assert res[0].size_class == "2^8x2^6" and res[0].config is not None
    red = axis_reducer(ctx, queue.device, l2.spec, db_url)
    assert red.pick(256, 48, 1).level == "exact"
    out = cla.empty(queue, 256, np.float32)
    red.enqueue(queue, [x.base_data, x.offset], 256, 48, 1, out.base_data, 0)
    np.testing.assert_allclose(out.get(), (h.astype(np.float64) ** 2).sum(1), rtol=1e-5)
    wrong = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]", "__global const float *x",
                                   db=db_url)
    wrong.reference = lambda hs, lo, hi: np.float32(hs[0][lo:hi].sum() + 1)
    with pytest.raises(ValueError, match="disagrees with the kernel's reference"):
        wrong.tune(x, axis=1, trials=2, timeout=60, storage=storage_url)


def test_cltune_tune_op_tunes_a_statistic_whole_and_along_an_axis(ctx, queue, info, tuned_db,
                                                                   storage_url):
    """`cltune tune --op var` tunes the statistic's kernel (family `expr`) at --sizes, and
    `--op argmax --axis 1 --shapes` along rows (family `expr_axis`); both then serve; a dtype
    the statistic does not take and --segments are one-line errors."""
    dev = str(info.index)
    r = runner.invoke(app, ["tune", "--device", dev, "--op", "var", "--sizes", "2^12",
                            "--trials", "3", "--db", tuned_db, "--storage", storage_url])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())  # the table's title wraps where the device's name is long
    assert "var/float32 (cltune.stats.api)" in flat and "2^12" in r.output
    r = runner.invoke(app, ["tune", "--device", dev, "--op", "argmax", "--axis", "1",
                            "--shapes", "4096x16", "--trials", "3", "--db", tuned_db,
                            "--storage", storage_url])
    assert r.exit_code == 0, r.output
    knl = stats.kernel("var", ctx, np.float32)
    knl.reload()
    assert knl.explain(4096).level == "exact"
    assert "exact" in str(stats.explain("var", queue, np.float32, (4096,), None))
    for d in ctx.devices:
        axis_reducer(ctx, d, stats.kernel("argmax", ctx, np.float32).spec, None).reload()
    ex = stats.explain("argmax", queue, np.float32, (4096, 16), 1)
    assert (ex.level, ex.size_class) == ("exact", "2^12x2^4"), ex
    h = np.random.default_rng(3).standard_normal((4096, 16)).astype(np.float32)
    _check("argmax", cla.to_device(queue, h), h, 1)
    for args, msg in ((["--op", "var", "--dtype", "float16"], "not supported"),
                      (["--op", "var", "--segments"], "tuned whole")):
        r = runner.invoke(app, ["tune", "--device", dev, *args, "--db", tuned_db])
        assert r.exit_code != 0 and msg in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("op,layout", [("argmax", "rows"), ("var", "cols"), ("sum", "rows")])
def test_the_space_offers_only_work_groups_its_heaviest_kernels_take(ctx, device, op, layout):
    """The tuner's space is capped by a probe build of its heaviest config at the largest
    offered work-group (the H200 takes 1024 work-items, a float32 sum's cascade kernels 256):
    the heaviest offered config at the largest offered size builds."""
    from cltune.families.expr_axis.kernel import build
    from cltune.families.expr_axis.target import MAX_ACC_BYTES, capped_space

    info, dev = device
    knl = (cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]", "__global const float *x")
           if op == "sum" else stats_kernel(op, ctx, np.float32))
    sp = capped_space(ctx, dev, info, knl.spec, layout)
    full = make_space(info, layout, knl.spec.dtype_out.itemsize)
    assert set(sp.values["wg"]) <= set(full.values["wg"]) and sp.values["wg"]
    top = max(sp.values["wg"])
    heavy = max((s * i, s, i) for s in sp.values["strip"] for i in sp.values["items"]
                 if s <= 16 and s * i * sp.itemsize <= MAX_ACC_BYTES)
    for lanes in (1, min(top, 32)):
        cfg = AxisExprConfig(layout, wg=top, lanes=lanes, items=heavy[2], strip=heavy[1],
                             groups_per_cu=sp.values["groups_per_cu"][0])
        assert not sp.check(cfg)
        assert build(ctx, dev, info, knl.spec, cfg).config == cfg
    wide = max(sp.values["strip"])
    if wide > 16:  # streamed strips (CPUs, no cascade): a lane each, at the largest group
        cfg = AxisExprConfig(layout, wg=top, lanes=1, items=max(sp.values["items"]), strip=wide)
        assert not sp.check(cfg)
        assert build(ctx, dev, info, knl.spec, cfg).config == cfg


def test_streamed_strips_a_group_cannot_take_leave_the_space(ctx, device, monkeypatch):
    """Intel's CPU runtime reports CL_KERNEL_WORK_GROUP_SIZE 1 for var's streamed strip of
    1024 (its 16-lane packing counts the private accumulators 16 times): the capped space drops
    the strips whose probe is below the largest group left, the widest first, says why, and
    keeps the narrower ones (the probe stands in for that runtime here)."""
    from dataclasses import replace as dc_replace

    from cltune.families.expr_axis import target

    info, dev = device
    cpu = dc_replace(info, type="cpu")
    knl = stats_kernel("mean", ctx, np.float32)
    full = target.make_space(cpu, "cols", knl.spec.dtype_out.itemsize, True,
                             target.restarts(knl.spec))
    wide = [s for s in full.values["strip"] if s > 16]
    if len(wide) < 2:
        pytest.skip("fewer than two streamed strips in this space")
    top = max(full.values["wg"])
    probed = []

    def probe(ctx_, dev_, info_, spec, cfg):
        probed.append(cfg.strip)
        return 1 if cfg.strip == wide[-1] else 8192

    monkeypatch.setattr(target, "kernel_wg_limit", probe)
    sp = target.capped_space(ctx, dev, cpu, knl.spec, "cols")
    assert wide[-1] not in sp.values["strip"] and wide[-2] in sp.values["strip"]
    assert "CL_KERNEL_WORK_GROUP_SIZE is 1" in sp.excluded[f"strip={wide[-1]}"]
    assert max(sp.values["wg"]) == top  # the other configs keep their groups
    assert probed[-2:] == [wide[-1], wide[-2]]  # widest first, stops at one that fits
