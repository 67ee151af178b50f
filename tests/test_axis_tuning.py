"""The axis family through the tuner, the database, the lookup chain, export/import and the
CLI: tuned shape classes are stored per variant and served to the nearest shape."""

from __future__ import annotations

import json

import numpy as np
import pyopencl.array as cla
import pytest
from typer.testing import CliRunner

import cltune
from cltune.cli.app import _axis_alone, app
from cltune.families.axis.api import explain_axis
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.segments import explain_segments
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store
from cltune.tuning_db.rows import Measurement

runner = CliRunner()
pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")
#: small spaces: these tests check the plumbing, not the search


def restrict_rows(info):
    """Two work-group sizes the device's space offers (from 32 on GPUs, axis/target.py)."""
    w = 8 if info.type == "cpu" else 32
    return {"wg": (w, 2 * w), "lanes": (1, 4), "vec": (1, 4), "items": (1,),
            "groups_per_cu": (2, 8)}


def test_tune_stores_classes_and_the_runtime_serves_the_nearest(ctx, queue, device, db_url,
                                                                storage_url):
    info, dev = device
    store = Store.open(db_url)
    try:
        opts = TuneOptions(family="axis", variant="sum/float32/rows", buckets=((8, 6), (4, 12)),
                           trials=5, timeout_s=120, seed=1, restrict=restrict_rows(info))
        res = Tuner(ctx, dev, info, store, storage_url, opts).run()
    finally:
        store.close()
    assert [r.size_class for r in res] == ["2^8x2^6", "2^4x2^12"]
    assert all(isinstance(r.config, AxisConfig) and r.gbps for r in res)
    assert all(r.vs_builtin is None or r.vs_builtin >= 0.9 for r in res)
    r = cltune.get_reducer(queue, "sum", np.float32, db=db_url)
    # nearest to 2^8 x 2^6 and 2^4 x 2^12 (row lengths that keep any vector load aligned:
    # GPUs serve a tuned class only within 2^1 and where its loads stay aligned)
    e = explain_axis(r, (300, 48), 1)
    assert e.level == "exact" and e.size_class == "2^8x2^6" and e.config == res[0].config
    assert explain_axis(r, (16, 4800), 1).size_class == "2^4x2^12"
    assert explain_axis(r, (300, 48), 0).level == "builtin"  # cols never tuned
    x = np.random.default_rng(0).random((300, 48), dtype=np.float32)
    got = r(cla.to_device(queue, x), axis=1).get()
    assert np.allclose(got, x.sum(axis=1), rtol=1e-5)


def test_cli_tunes_both_axes_and_segments_then_show_and_export(info, db_url, storage_url,
                                                               tmp_path):
    args = ["tune", "--device", str(info.index), "--axis", "both", "--shapes", "64x32",
            "--trials", "3", "--timeout", "60", "--db", db_url, "--storage", storage_url]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "sum/float32/rows" in r.output and "sum/float32/cols" in r.output
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--segments", "--shapes",
                            "256x8", "--trials", "3", "--timeout", "60", "--db", db_url,
                            "--storage", storage_url])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", "--json", "--db", db_url])
    rows = json.loads(r.output)
    assert {(x["family"], x["variant"], x["size_class"]) for x in rows} >= {
        ("axis", "sum/float32/rows", "2^6x2^5"), ("axis", "sum/float32/cols", "2^6x2^5"),
        ("axis", "sum/float32/segs", "2^8x2^3")}
    r = runner.invoke(app, ["verify", "--device", str(info.index), "--db", db_url])
    assert r.exit_code == 0, r.output
    for v in ("sum/float32/rows", "sum/float32/cols", "sum/float32/segs"):
        assert v in r.output  # re-validated and re-timed like the 1-D results
    out = tmp_path / "export.json"
    assert runner.invoke(app, ["export", "-o", str(out), "--db", db_url]).exit_code == 0
    other = f"sqlite:///{tmp_path / 'other.db'}"
    r = runner.invoke(app, ["import", str(out), "--db", other])
    assert r.exit_code == 0, r.output
    s = Store.open(other, readonly=True)
    try:
        assert {b.variant for b in s.bests(None) if b.family == "axis"} == {
            "sum/float32/rows", "sum/float32/cols", "sum/float32/segs"}
    finally:
        s.close()


def test_rows_of_two_tune(info, db_url, storage_url):
    """Classes narrower than the widest vectors: vectors are narrowed to what the space
    offers (a bug once left 2^24x2 with no config validated on CPUs)."""
    r = runner.invoke(app, ["tune", "--device", str(info.index), "--axis", "both", "--shapes",
                            "4096x2", "--trials", "4", "--timeout", "60", "--db", db_url,
                            "--storage", storage_url])
    assert r.exit_code == 0 and "no config validated" not in r.output, r.output


@pytest.mark.parametrize("args,msg", [
    (["--axis", "2"], "--axis takes 0, 1 or both"),
    (["--axis", "1", "--shapes", "100x3"], "power of two"),
    (["--axis", "1", "--shapes", "banana"], "not a shape"),
    (["--shapes", "64x64"], "--shapes goes with --axis"),
    (["--segments", "--op", "dot"], "dot"),
])
def test_bad_axis_options_are_one_line(args, msg, db_url, storage_url):
    r = runner.invoke(app, ["tune", *args, "--db", db_url, "--storage", storage_url])
    assert r.exit_code != 0 and msg in r.output and "Traceback" not in r.output, r.output


def test_axis_alone_means_both():
    argv = ["cltune", "tune", "--axis", "--device", "0"]
    _axis_alone(argv)
    assert argv == ["cltune", "tune", "--axis", "both", "--device", "0"]
    argv = ["cltune", "tune", "--axis"]
    _axis_alone(argv)
    assert argv[-1] == "both"
    argv = ["cltune", "tune", "--axis", "1"]
    _axis_alone(argv)
    assert argv == ["cltune", "tune", "--axis", "1"]


@pytest.mark.parametrize("config", [
    {"wg": 8, "lanes": 1, "cols": 0, "vec": 4, "items": 1, "groups_per_cu": 1, "warp": 0,
     "onepass": 0, "evil": "-DX=1"},
    {"wg": "8 -DCLT_OP=9", "lanes": 1, "cols": 0, "vec": 4, "items": 1, "groups_per_cu": 1,
     "warp": 0, "onepass": 0},
    {"wg": 8, "lanes": 3, "cols": 0, "vec": 4, "items": 1, "groups_per_cu": 1, "warp": 0,
     "onepass": 0},
])
def test_a_hostile_stored_config_never_reaches_the_compiler(queue, info, db_url, config):
    """Rows written behind the Store's back with configs that do not validate: the runtime
    ignores them (builtin level) and still answers right."""
    s = Store.open(db_url)
    try:
        dev = s.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                              info.name)
        m = Measurement("axis", "sum/float32/segs", "2^4x2^2", config, "k" * 16, "ok", 64, "t",
                        "0" * 16, "", 1e-5, 1.0, None)
        s.set_best(dev, s.record(dev, m))
    finally:
        s.close()
    r = cltune.get_reducer(queue, "sum", np.float32, db=db_url)
    assert explain_segments(r, 16, 64).level == "builtin"
    x = np.arange(64, dtype=np.float32)
    got = r.segments(cla.to_device(queue, x), np.array([0, 10, 64], np.int32)).get()
    assert got.tolist() == [45.0, float(x[10:].sum())]
