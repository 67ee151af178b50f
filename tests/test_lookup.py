"""The fallback chain: every level answers, says so, and get_reducer serves it."""

import json
import warnings

import numpy as np
import pyopencl.array as cla
import pytest
from support.records import reduce_measurement
from test_db import assert_tally_exact
from typer.testing import CliRunner

from cltune import get_reducer
from cltune.cli.app import app
from cltune.core.serving import CltuneWarning
from cltune.families.reduce.config import Config
from cltune.tuning_db import Store
from cltune.tuning_db.lookup import DeviceKey, load_shipped, lookup

CFG = Config("local_tree", 8, 16, 2, 4, 2, 2, "native")


def key(info, **kw):
    base = dict(fingerprint=info.fingerprint, hardware_key=info.hardware_key, model=info.model,
                vendor=info.vendor, type=info.type, driver=info.driver)
    return DeviceKey(**{**base, **kw})


def store_for(url, info, *, fingerprint=None, hardware_key=None, model=None, driver=None,
              cfg=CFG, bucket=20):
    s = Store.open(url)
    parts = info.fingerprint_parts()
    if model:
        parts["model"] = model
    if driver:
        parts["driver"] = driver
    dev = s.upsert_device(parts, fingerprint or info.fingerprint,
                          hardware_key or info.hardware_key, info.name)
    rid = s.record(dev, reduce_measurement("sum", "float32", bucket, cfg.to_dict(), cfg.key(),
                                           status="ok", median_s=1e-4, gbps=10.0,
                                           n_measured=1 << bucket, cltune_version="t",
                                           source_hash="0" * 16))
    s.set_best(dev, rid)
    return s


def test_exact(tmp_path, info):
    s = store_for(f"sqlite:///{tmp_path / 'a.db'}", info)
    a = lookup(s, key(info), "reduce", "sum/float32")
    assert a.level == "exact" and a.rows[0].config == CFG.to_dict()


def test_driver_changed_says_what_changed(tmp_path, info):
    s = store_for(f"sqlite:///{tmp_path / 'a.db'}", info, fingerprint="f" * 16,
                  driver="0.9-old")
    a = lookup(s, key(info), "reduce", "sum/float32")
    assert a.level == "driver-changed"
    assert "0.9-old" in a.why and "cltune verify" in a.why


def test_driver_changed_serves_the_newest_setup_that_has_the_op(tmp_path, info):
    """Several older drivers of the same hardware: the newest one holding sum/float32 bests
    answers, with its own rows only (one device, every bucket of it)."""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    other = Config("serial", 8, 0, 4, 4, 2, 2, "native")
    store_for(url, info, fingerprint="a" * 16, driver="0.7", bucket=20).close()
    store_for(url, info, fingerprint="b" * 16, driver="0.8", cfg=other, bucket=20).close()
    store_for(url, info, fingerprint="b" * 16, driver="0.8", cfg=other, bucket=24).close()
    s = Store.open(url)
    newest = s.upsert_device({**info.fingerprint_parts(), "driver": "0.9"}, "c" * 16,
                             info.hardware_key, info.name)  # no sum bests: skipped
    rid = s.record(newest, reduce_measurement("max", "float32", 20, CFG.to_dict(), CFG.key(),
                                              status="ok", median_s=1e-4, gbps=10.0,
                                              n_measured=1 << 20, cltune_version="t",
                                              source_hash="0" * 16))
    s.set_best(newest, rid)
    a = lookup(s, key(info), "reduce", "sum/float32")
    assert a.level == "driver-changed" and "0.8" in a.why
    assert sorted(r.size_class for r in a.rows) == ["2^20", "2^24"]
    assert {r.fingerprint for r in a.rows} == {"b" * 16}
    assert all(r.config == other.to_dict() for r in a.rows)
    assert lookup(s, key(info), "reduce", "max/float32").rows[0].fingerprint == "c" * 16


def test_same_device_other_limits(tmp_path, info):
    s = store_for(f"sqlite:///{tmp_path / 'a.db'}", info, fingerprint="f" * 16,
                  hardware_key="e" * 16)
    assert lookup(s, key(info), "reduce", "sum/float32").level == "same-device"


def test_shipped_results_for_the_h200():
    k = DeviceKey("0" * 16, "1" * 16, "NVIDIA H200", "nvidia", "gpu", "999.0")
    a = load_shipped("reduce", "sum/float32", k)
    assert a is not None and a.level == "shipped" and len(a.rows) >= 4
    assert lookup(None, k, "reduce", "sum/float32").level == "shipped"
    for r in a.rows:
        Config.from_mapping(r.config)


def test_vendor_default_skips_configs_that_failed(tmp_path, info):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    s = store_for(url, info, fingerprint="f" * 16, hardware_key="e" * 16, model="Other CPU")
    other = Config("serial", 8, 0, 1, 1, 1, 2, "native")
    store_for(url, info, fingerprint="d" * 16, hardware_key="c" * 16, model="Third CPU",
              cfg=other)
    k = key(info, fingerprint="9" * 16, hardware_key="8" * 16, model="Unseen CPU")
    a = lookup(s, k, "reduce", "sum/float32")
    assert a.level == "vendor-default"
    dev = s.device_ids(fingerprint="f" * 16)[0]
    bad = a.rows[0].config
    s.record(dev, reduce_measurement("sum", "float32", 20, bad,
                                     Config.from_mapping(bad).key() + "x", status="failed",
                                     reason="wrong sum", n_measured=1, cltune_version="t",
                                     source_hash="0" * 16))
    a2 = lookup(s, k, "reduce", "sum/float32")
    assert a2.level == "vendor-default" and a2.rows[0].config != bad


def test_vendor_default_is_read_from_the_tally(tmp_path, info):
    """The most frequent best that never failed, from one query on the vendor tally (no
    GROUP BY over the bests); a failure recorded later (as `cltune verify` records it) moves
    the answer to the next config, and a passing re-measurement moves it back."""
    from sqlalchemy import event

    url = f"sqlite:///{tmp_path / 'a.db'}"
    other = Config("serial", 8, 0, 1, 1, 1, 2, "native")
    for i, cfg in enumerate((CFG, CFG, CFG, other, other)):
        store_for(url, info, fingerprint=f"{i:016x}", hardware_key=f"{i:016x}",
                  model=f"Model {i}", cfg=cfg, bucket=20 + i % 2).close()
    s = Store.open(url)
    sql: list[str] = []
    event.listen(s.engine, "before_cursor_execute",
                 lambda c, cur, stmt, params, ctx, many: sql.append(stmt))
    k = key(info, fingerprint="9" * 16, hardware_key="8" * 16, model="Unseen CPU")
    a = lookup(s, k, "reduce", "sum/float32")
    assert a.level == "vendor-default" and a.rows[0].config == CFG.to_dict()
    assert a.why == f"most frequent best on {info.vendor} {info.type} devices"
    assert a.rows[0].fingerprint == f"{2:016x}"  # the most recently added device using it
    assert any("cltune_vendor_tally" in q for q in sql)
    assert not any("GROUP BY" in q.upper() for q in sql)
    dev = s.device_ids(fingerprint=f"{0:016x}")[0]

    def rec(status):
        s.record(dev, reduce_measurement("sum", "float32", 20, CFG.to_dict(), CFG.key(),
                                         status=status,
                                         reason="cltune verify: wrong sum"
                                         if status == "failed" else "",
                                         median_s=1e-4 if status == "ok" else None, n_measured=1,
                                         cltune_version="t", source_hash="0" * 16), force=True)

    rec("failed")
    assert lookup(s, k, "reduce", "sum/float32").rows[0].config == other.to_dict()
    rec("ok")
    assert lookup(s, k, "reduce", "sum/float32").rows[0].config == CFG.to_dict()
    assert_tally_exact(s)


def test_builtin_when_nothing_is_known(tmp_path, info):
    s = Store.open(f"sqlite:///{tmp_path / 'a.db'}")
    unseen = key(info, model="Unseen Model 9000", vendor="unseen-vendor")
    assert lookup(s, unseen, "reduce", "sum/float32").level == "builtin"


def test_reducer_explains_driver_changed_and_verify_fixes_it(tmp_path, info, queue):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    store_for(url, info, fingerprint="f" * 16, driver="0.9-old").close()
    r = get_reducer(queue, db=url)
    e = r.explain(2**20)
    assert e.level == "driver-changed" and "0.9-old" in str(e)
    x = cla.to_device(queue, np.ones(2**20 + 1, np.float32))
    assert r(x).get() == 2**20 + 1
    res = CliRunner().invoke(app, ["verify", "--device", str(info.index), "--db", url])
    assert res.exit_code == 0, res.output
    assert lookup(Store.open(url), key(info), "reduce", "sum/float32").level == "exact"
    assert_tally_exact(Store.open(url))  # verify's writes kept the vendor tally
    res = CliRunner().invoke(app, ["show", "--device", str(info.index), "--db", url, "--json"])
    assert json.loads(res.stdout)["answers"][0]["level"] == "exact"


def test_verify_replaces_a_config_that_fails(tmp_path, info):
    """A stored config that no longer passes (here: tampered to an invalid value) is reported,
    never served, and the next best that validates replaces it."""
    from sqlalchemy import text

    url = f"sqlite:///{tmp_path / 'a.db'}"
    s = store_for(url, info)
    with s.engine.begin() as c:
        c.execute(text("UPDATE cltune_results SET config_json = :j"),
                  {"j": json.dumps({**CFG.to_dict(), "wg": 48})})
    dev = s.device_ids(fingerprint=info.fingerprint)[0]
    second = Config("local_tree", 8, 8, 3, 2, 2, 2, "native")
    s.record(dev, reduce_measurement("sum", "float32", 20, second.to_dict(), second.key(),
                                     status="ok", median_s=2e-4, gbps=5.0, n_measured=1 << 20,
                                     cltune_version="t", source_hash="0" * 16))
    s.close()
    res = CliRunner().invoke(app, ["verify", "--device", str(info.index), "--db", url])
    assert res.exit_code == 0, res.output
    assert "invalid" in res.output
    best = lookup(Store.open(url), key(info), "reduce", "sum/float32").rows[0]
    assert best.config == second.to_dict()
    with warnings.catch_warnings():
        # the runtime must not warn; a compiler's chatter (pyopencl.CompilerWarning, e.g. from
        # Intel's runtime) is not ours, and as an error it trips pyopencl's cache code
        warnings.simplefilter("error", CltuneWarning)
        assert get_reducer(info.cl_device(), db=url).explain(2**20).config == second


@pytest.mark.parametrize("level", ["exact", "builtin"])
def test_show_device_names_the_level(tmp_path, info, level):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    if level == "exact":
        store_for(url, info).close()
    else:
        Store.open(url).close()
        if load_shipped("reduce", "sum/float32", key(info)):  # e.g. on the H200: shipped results
            level = "shipped"
    res = CliRunner().invoke(app, ["show", "--device", str(info.index), "--db", url])
    assert res.exit_code == 0 and f"level {level}" in res.output, res.output
