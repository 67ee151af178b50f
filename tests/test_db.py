"""The tuning database: round trip, schema versions and migration, errors that name the fix."""

import sqlite3

import pytest
from cltune.tuning_db import DatabaseError, SchemaError, Store
from cltune.tuning_db.migrations import LATEST, V1_DDL
from sqlalchemy import create_engine, inspect, text

PARTS = {"vendor": "acme", "type": "gpu", "model": "Rocket 9", "compute_units": 8,
         "local_mem": 65536, "max_wg": 1024, "platform": "Acme CL",
         "platform_version": "OpenCL 3.0", "driver": "1.0", "opencl_c": "OpenCL C 1.2"}
CFG = {"strategy": "serial", "wg": 8, "tile": 0, "items": 4, "vec": 8, "groups_per_cu": 2,
       "passes": 2, "acc": "native"}


def add(store, fp="a" * 16, hw="b" * 16, bucket=20, median=1e-3, status="ok", cfg=CFG, key="k1"):
    dev = store.upsert_device(PARTS, fp, hw, "Rocket 9")
    rid = store.record(dev, "sum", "float32", bucket, cfg, key, status=status, median_s=median,
                       gbps=1.0, n_measured=1 << bucket, cltune_version="t",
                       source_hash="c" * 16, reason="" if status == "ok" else "wrong sum")
    return dev, rid


def test_round_trip(db_url):
    s = Store.open(db_url)
    dev, rid = add(s)
    s.set_best(dev, "sum", "float32", 20, rid)
    rows = s.bests([dev])
    assert len(rows) == 1 and rows[0].config == CFG and rows[0].bucket == 20
    assert s.counts() == {"devices": 1, "results": 1, "failed": 0, "bests": 1}
    s.close()
    ro = Store.open(db_url, readonly=True)
    assert ro.bests(ro.device_ids())[0].median_s == 1e-3
    ro.close()


def test_same_key_is_recorded_once_and_keeps_the_better(db_url):
    s = Store.open(db_url)
    dev, r1 = add(s, median=1e-3)
    _, r2 = add(s, median=2e-3)  # slower: kept the old
    _, r3 = add(s, status="failed", median=None)  # failure of a validated config: kept
    assert r1 == r2 == r3
    assert s.results(dev, "sum", "float32", 20)[0].median_s == 1e-3
    assert s.counts()["results"] == 1


def test_failed_result_can_never_become_best(db_url):
    s = Store.open(db_url)
    dev, rid = add(s, status="failed", median=None, key="bad")
    with pytest.raises(DatabaseError, match="validated"):
        s.set_best(dev, "sum", "float32", 20, rid)


def test_migrates_a_v1_database(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    for stmt in V1_DDL:
        con.execute(stmt)
    con.execute("INSERT INTO cltune_schema_version VALUES (1, 1)")
    con.execute("INSERT INTO cltune_devices (id, fingerprint, hardware_key, vendor, type, model,"
                " name, compute_units, local_mem, max_wg, platform, platform_version, driver,"
                " opencl_c) VALUES (1, 'aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'acme', 'gpu',"
                " 'Rocket 9', 'Rocket 9', 8, 65536, 1024, 'Acme CL', '3.0', '1.0', '1.2')")
    con.execute("INSERT INTO cltune_results (id, device_id, op, dtype, bucket, config_key,"
                " config_json, status, n_measured, cltune_version, source_hash, median_s)"
                " VALUES (1, 1, 'sum', 'float32', 20, 'k', '{}', 'ok', 1, 'v', 'cccccccccccccccc',"
                " 0.5)")
    con.commit()
    con.close()
    url = f"sqlite:///{path}"
    with pytest.raises(SchemaError, match="cltune migrate"):
        Store.open(url, readonly=True)
    s = Store.open(url)  # migrates
    with s.engine.connect() as c:
        assert c.execute(text("SELECT version FROM cltune_schema_version")).scalar() == LATEST
        cols = {col["name"] for col in inspect(c).get_columns("cltune_results")}
        assert {"verified_at", "stale"} <= cols
        assert c.execute(text("SELECT median_s, stale FROM cltune_results")).one() == (0.5, 0)
    s.close()
    # the migrated schema equals a fresh one, column for column
    fresh = Store.open(f"sqlite:///{tmp_path / 'fresh.db'}")
    with fresh.engine.connect() as a, create_engine(url).connect() as b:
        for table in ("cltune_devices", "cltune_results", "cltune_best"):
            assert ({c["name"] for c in inspect(a).get_columns(table)}
                    == {c["name"] for c in inspect(b).get_columns(table)})


def test_newer_schema_is_refused_with_the_fix(db_url):
    s = Store.open(db_url)
    with s.engine.begin() as c:
        c.execute(text("UPDATE cltune_schema_version SET version = 99"))
    s.close()
    for ro in (True, False):
        with pytest.raises(SchemaError, match="pip install -U cltune"):
            Store.open(db_url, readonly=ro)


def test_corrupt_and_missing_files(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseError):
        Store.open(f"sqlite:///{bad}", readonly=True)
    with pytest.raises(DatabaseError):
        Store.open(f"sqlite:///{bad}")
    assert bad.read_bytes() == b"this is not sqlite" * 100  # never overwritten
    with pytest.raises(DatabaseError, match="does not exist"):
        Store.open(f"sqlite:///{tmp_path / 'missing.db'}", readonly=True)
    with pytest.raises(DatabaseError, match="not a database URL|cannot"):
        Store.open("nosuchdriver+x://")


def test_wal_and_busy_timeout(db_url):
    s = Store.open(db_url)
    with s.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10000
