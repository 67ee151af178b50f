"""Schema v3 -> v4 (results keyed by kernel family, variant and size class): a v3 database
with data, as v3 cltune left it, migrates and then answers every lookup as it did."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text
from support.old_schema import add_device, v2_schema

from cltune.families.reduce.config import Config
from cltune.tuning_db import SchemaError, Store
from cltune.tuning_db.lookup import DeviceKey, lookup
from cltune.tuning_db.migrations import LATEST, MIGRATIONS

CFGS = {name: Config("serial", 8, 0, items, 4, 2, 2, "native")
        for name, items in (("A", 1), ("B", 2), ("C", 4), ("D", 8))}
#: (device id, fingerprint, hardware key, model, vendor, driver)
DEVICES = [(1, "1" * 16, "a" * 16, "Rocket 9", "acme", "1.0"),
           (2, "2" * 16, "a" * 16, "Rocket 9", "acme", "2.0"),   # same hardware, newer driver
           (3, "3" * 16, "b" * 16, "Rocket 7", "acme", "1.0"),
           (4, "4" * 16, "c" * 16, "Rocket 7", "acme", "1.0")]   # same model, other limits
#: (result id, device, op, dtype, bucket, config, status); a best for every ok one
RESULTS = [(1, 1, "sum", "float32", 20, "A", "ok"), (2, 1, "sum", "float32", 24, "B", "ok"),
           (3, 1, "max", "int32", 12, "C", "ok"), (4, 3, "sum", "float32", 20, "C", "ok"),
           (5, 4, "sum", "float32", 16, "D", "ok"), (6, 2, "sum", "float32", 20, "D", "failed")]
#: what v3 cltune answered: (device, variant) -> (level, {size class: config})
ANSWERS = {
    (1, "sum/float32"): ("exact", {"2^20": "A", "2^24": "B"}),
    (1, "max/int32"): ("exact", {"2^12": "C"}),
    (2, "sum/float32"): ("driver-changed", {"2^20": "A", "2^24": "B"}),
    (4, "sum/float32"): ("exact", {"2^16": "D"}),
    (3, "max/int32"): ("vendor-default", {"2^12": "C"}),
    (5, "sum/float32"): ("same-device", {"2^16": "D"}),  # a new setup of Rocket 7
    (6, "sum/float32"): ("vendor-default", {"2^20": "A"}),  # a new model: A, C, D tie; A first
}


def v3_database(url: str) -> str:
    """v1 DDL + the v2 and v3 migrations (frozen, as released), filled as v3 cltune wrote."""
    eng = create_engine(url)
    with eng.begin() as c:
        v2_schema(c)
        for did, fp, hw, model, vendor, driver in DEVICES:
            add_device(c, did, fp, hw, vendor, model=model, driver=driver)
        for rid, dev, op, dtype, bucket, cfg, status in RESULTS:
            c.execute(text(
                "INSERT INTO cltune_results (id, device_id, op, dtype, bucket, config_key,"
                " config_json, status, n_measured, cltune_version, source_hash, median_s,"
                " stale) VALUES (:r, :d, :o, :t, :b, :k, :j, :s, 1, 'v', 'cccccccccccccccc',"
                " :m, 0)"),
                {"r": rid, "d": dev, "o": op, "t": dtype, "b": bucket, "k": CFGS[cfg].key(),
                 "j": json.dumps(CFGS[cfg].to_dict(), sort_keys=True), "s": status,
                 "m": 1e-4 * rid if status == "ok" else None})
            if status == "ok":
                c.execute(text("INSERT INTO cltune_best (id, device_id, op, dtype, bucket,"
                               " result_id) VALUES (:r, :d, :o, :t, :b, :r)"),
                          {"r": rid, "d": dev, "o": op, "t": dtype, "b": bucket})
        MIGRATIONS[3](c)
        c.execute(text("UPDATE cltune_schema_version SET version = 3"))
    eng.dispose()
    return url


def _key(i: int) -> DeviceKey:
    if i <= len(DEVICES):
        _, fp, hw, model, vendor, driver = DEVICES[i - 1]
        return DeviceKey(fp, hw, model, vendor, "gpu", driver)
    if i == 5:
        return DeviceKey("5" * 16, "d" * 16, "Rocket 7", "acme", "gpu", "1.0")
    return DeviceKey("6" * 16, "e" * 16, "Rocket 1", "acme", "gpu", "1.0")


def check_v3_migration(url: str) -> None:
    v3_database(url)
    with pytest.raises(SchemaError, match="v3 is older"):
        Store.open(url, readonly=True)
    Store.open(url).close()  # migrates
    s = Store.open(url, readonly=True)
    try:
        with s.engine.connect() as c:
            assert c.execute(text("SELECT version FROM cltune_schema_version")).scalar() == LATEST
            got = c.execute(text("SELECT id, device_id, family, variant, size_class, status"
                                 " FROM cltune_results ORDER BY id")).all()
        assert got == [(rid, dev, "reduce", f"{op}/{dt}", f"2^{b}", st)
                       for rid, dev, op, dt, b, _, st in RESULTS]
        for (dev, variant), (level, want) in ANSWERS.items():
            a = lookup(s, _key(dev), "reduce", variant)
            byname = {n: c.to_dict() for n, c in CFGS.items()}
            assert a.level == level, (dev, variant, a)
            assert {r.size_class: r.config for r in a.rows} == {
                k: byname[v] for k, v in want.items()}, (dev, variant, a.rows)
    finally:
        s.close()
    s = Store.open(url)  # and it is written as before: ids continue after the copied ones
    from cltune.tuning_db.rows import Measurement

    rid = s.record(1, Measurement("reduce", "sum/float32", "2^28", CFGS["A"].to_dict(),
                                  CFGS["A"].key(), "ok", 1 << 28, "t", "c" * 16,
                                  median_s=1.0, gbps=1.0))
    assert rid == max(r[0] for r in RESULTS) + 1
    s.set_best(1, rid)
    s.close()


def test_v3_database_migrates_and_answers_the_same_lookups(tmp_path):
    check_v3_migration(f"sqlite:///{tmp_path / 'v3.db'}")
