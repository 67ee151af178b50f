"""The tuning database: round trip, schema versions and migration, errors that name the fix."""

import os
import sqlite3

import pytest
from sqlalchemy import create_engine, inspect, text
from support.records import reduce_measurement

from cltune.tuning_db import DatabaseError, SchemaError, Store
from cltune.tuning_db.migrations import LATEST, V1_DDL

PARTS = {"vendor": "acme", "type": "gpu", "model": "Rocket 9", "compute_units": 8,
         "local_mem": 65536, "max_wg": 1024, "platform": "Acme CL",
         "platform_version": "OpenCL 3.0", "driver": "1.0", "opencl_c": "OpenCL C 1.2"}
CFG = {"strategy": "serial", "wg": 8, "tile": 0, "items": 4, "vec": 8, "groups_per_cu": 2,
       "passes": 2, "acc": "native"}


def add(store, fp="a" * 16, hw="b" * 16, bucket=20, median=1e-3, status="ok", cfg=CFG, key="k1"):
    dev = store.upsert_device(PARTS, fp, hw, "Rocket 9")
    rid = store.record(dev, reduce_measurement("sum", "float32", bucket, cfg, key, status=status,
                                               median_s=median, gbps=1.0, n_measured=1 << bucket,
                                               cltune_version="t", source_hash="c" * 16,
                                               reason="" if status == "ok" else "wrong sum"))
    return dev, rid


def test_round_trip(db_url):
    s = Store.open(db_url)
    dev, rid = add(s)
    s.set_best(dev, rid)
    rows = s.bests([dev])
    assert len(rows) == 1 and rows[0].config == CFG and rows[0].size_class == "2^20"
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
    assert s.results(dev, "reduce", "sum/float32", "2^20")[0].median_s == 1e-3
    assert s.counts()["results"] == 1


def test_failed_result_can_never_become_best(db_url):
    s = Store.open(db_url)
    dev, rid = add(s, status="failed", median=None, key="bad")
    with pytest.raises(DatabaseError, match="validated"):
        s.set_best(dev, rid)


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
        assert c.execute(text("SELECT id, family, variant, size_class FROM cltune_results")
                         ).one() == (1, "reduce", "sum/float32", "2^20")
    s.close()
    # the migrated schema equals a fresh one, column for column
    fresh = Store.open(f"sqlite:///{tmp_path / 'fresh.db'}")
    with fresh.engine.connect() as a, create_engine(url).connect() as b:
        for table in ("cltune_devices", "cltune_results", "cltune_best", "cltune_vendor_tally"):
            assert ({c["name"] for c in inspect(a).get_columns(table)}
                    == {c["name"] for c in inspect(b).get_columns(table)})


def test_newer_schema_is_refused_with_the_fix(db_url):
    s = Store.open(db_url)
    with s.engine.begin() as c:
        c.execute(text("UPDATE cltune_schema_version SET version = 99"))
    s.close()
    for ro in (True, False):
        with pytest.raises(SchemaError, match="upgrade cltune"):
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


def _refuse_reads(monkeypatch, message: str, times: int) -> list[int]:
    """Store.open's read check fails `times` times with SQLite's `message` (what a reader meets
    while another connection checkpoints or recovers the WAL, or in a read-only directory)."""
    import sqlalchemy.exc

    import cltune.tuning_db.store as store_mod

    calls = [0]
    real = store_mod.check_readable

    def check(conn):  # noqa: ANN001
        calls[0] += 1
        if calls[0] <= times:
            raise sqlalchemy.exc.OperationalError("SELECT", {}, sqlite3.OperationalError(message))
        return real(conn)

    monkeypatch.setattr(store_mod, "check_readable", check)
    return calls


def _with_unflushed_wal(db_url):
    """A database whose newest best lives only in its write-ahead log: a second connection
    stays open, so the writer's close does not checkpoint. Returns that connection."""
    s = Store.open(db_url)
    dev, rid = add(s, median=2e-3)
    s.set_best(dev, rid)
    keep = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    keep.execute("SELECT count(*) FROM cltune_results").fetchone()
    dev, rid = add(s, bucket=12, median=1e-3, key="k2")
    s.set_best(dev, rid)
    s.close()
    return keep


def test_a_locked_read_is_retried_and_sees_the_write_ahead_log(db_url, monkeypatch):
    """A read-only open that SQLite refuses for a moment (locked) is retried, and reads what the
    WAL holds: never an `immutable` read that would skip the newest results."""
    keep = _with_unflushed_wal(db_url)
    try:
        wal = db_url.removeprefix("sqlite:///") + "-wal"
        assert os.path.getsize(wal) > 0
        calls = _refuse_reads(monkeypatch, "database is locked", 2)
        ro = Store.open(db_url, readonly=True)
        try:
            assert sorted(r.size_class for r in ro.bests(ro.device_ids())) == ["2^12", "2^20"]
        finally:
            ro.close()
        assert calls[0] >= 3
    finally:
        keep.close()


def test_an_unreadable_file_with_a_full_write_ahead_log_is_an_error_not_stale_data(
        db_url, monkeypatch):
    """Where SQLite cannot read normally (as in a read-only directory) and the WAL holds rows,
    opening is a clear error (callers warn and use the levels without a database), never an
    immutable read of the file without its newest rows; with no WAL data it reads the file."""
    keep = _with_unflushed_wal(db_url)
    try:
        _refuse_reads(monkeypatch, "unable to open database file", 1)
        with pytest.raises(DatabaseError, match="write-ahead log"):
            Store.open(db_url, readonly=True)
    finally:
        keep.close()  # the last connection: SQLite checkpoints and removes the WAL
    _refuse_reads(monkeypatch, "unable to open database file", 1)
    ro = Store.open(db_url, readonly=True)
    try:
        assert sorted(r.size_class for r in ro.bests(ro.device_ids())) == ["2^12", "2^20"]
    finally:
        ro.close()


# ------------------------------------------------------------------ the vendor tally (v3)
VENDORS = (("acme", "gpu"), ("acme", "cpu"), ("zeta", "gpu"))
CFGS = [{**CFG, "items": i} for i in (1, 2, 4, 8)]


def dev_dict(i: int) -> dict:
    """Device i, as an export record's device (and upsert_device's parts)."""
    vendor, typ = VENDORS[i % len(VENDORS)]
    return {**PARTS, "vendor": vendor, "type": typ, "model": f"{vendor} {typ} {i}",
            "name": f"{vendor} {typ} {i}", "fingerprint": f"{i:016x}",
            "hardware_key": f"{i + 1000:016x}"}


def put_device(store, i: int) -> int:
    d = dev_dict(i)
    return store.upsert_device({k: d[k] for k in PARTS}, d["fingerprint"], d["hardware_key"],
                               d["name"])


def python_tally(store) -> dict:
    """The tally by its definition, counted in Python from the ORM rows (independent of the
    SQL that the migration and tally.recompute use)."""
    from collections import Counter

    from sqlalchemy import select

    from cltune.tuning_db.models import Best, Device, Result

    nb, nf = Counter(), Counter()
    with store.session() as s:
        for _b, r, d in s.execute(select(Best, Result, Device)
                                 .join(Result, Result.id == Best.result_id)
                                 .join(Device, Device.id == Best.device_id)):
            if r.status == "ok":
                nb[(d.vendor, d.type, r.family, r.variant, r.config_json)] += 1
        for r, d in s.execute(select(Result, Device).join(Device, Device.id == Result.device_id)):
            if r.status == "failed":
                nf[(d.vendor, d.type, r.family, r.variant, r.config_json)] += 1
    return {k: (nb[k], nf[k]) for k in set(nb) | set(nf)}


def assert_tally_exact(store) -> None:
    """The stored tally equals a recomputation from scratch (SQL and Python), no count < 0."""
    from cltune.tuning_db import tally

    with store.engine.connect() as c:
        stored = tally.stored(c)
        assert stored == tally.recompute(c)
        assert c.execute(text("SELECT count(*) FROM cltune_vendor_tally"
                              " WHERE n_best < 0 OR n_failed < 0")).scalar() == 0
    assert stored == python_tally(store)


def random_ops(store, rng, n: int, devices: range) -> list[str]:
    """n random writes of every kind that changes the tally: record ok / failed (also forced
    over an ok best, as `cltune verify` does), set_best (new and replacing), merge of export
    records, mark_verified. Returns the DatabaseErrors it expected (a result that another
    process marked failed between choosing it and set_best)."""
    from cltune.tuning_db.exchange import parse_export

    expected = []
    ids = {i: put_device(store, i) for i in devices}
    for _ in range(n):
        i = rng.choice(list(devices))
        dev, op, bucket = ids[i], rng.choice(("sum", "max")), rng.choice((10, 20))
        cfg = rng.choice(CFGS)
        ck = f"k{cfg['items']}"
        x = rng.random()
        if x < 0.35:
            store.record(dev, reduce_measurement(op, "float32", bucket, cfg, ck, status="ok",
                                                 median_s=rng.uniform(1e-5, 1e-3), gbps=1.0,
                                                 n_measured=1, cltune_version="t",
                                                 source_hash=rng.choice(("c" * 16, "d" * 16))),
                         force=rng.random() < 0.3)
        elif x < 0.55:
            store.record(dev, reduce_measurement(op, "float32", bucket, cfg, ck, status="failed",
                                                 reason="cltune verify: wrong sum", n_measured=1,
                                                 cltune_version="t",
                                                 source_hash="c" * 16), force=rng.random() < 0.7)
        elif x < 0.85:
            oks = store.results(dev, "reduce", f"{op}/float32", f"2^{bucket}")
            if oks:
                try:
                    store.set_best(dev, rng.choice(oks).id)
                except DatabaseError as e:
                    assert "validated" in str(e)
                    expected.append(str(e))
        elif x < 0.95:
            rec = {"device": dev_dict(rng.choice(list(devices)) if rng.random() < 0.8
                                      else 500 + rng.randrange(3)),
                   "op": op, "dtype": "float32", "bucket": bucket, "config": cfg,
                   "median_s": rng.uniform(1e-5, 1e-3), "gbps": 1.0, "max_rel_error": None,
                   "n_measured": 1, "cltune_version": "t", "source_hash": "c" * 16}
            store.merge(parse_export({"format": "cltune-results", "version": 1,
                                       "results": [rec, {**rec, "median_s": 2e-3}]}))
        else:
            oks = store.results(dev, "reduce", f"{op}/float32", f"2^{bucket}")
            if oks:
                store.mark_verified(rng.choice(oks).id)
    return expected


def v2_database(url: str) -> str:
    """A schema v2 database as v2 cltune left it (v1 DDL + the v2 migration), with data:
    two vendors, a config that is best on devices of both and failed on one, a best whose
    result failed after it was chosen (it does not count), and a failure of another config."""
    from support.old_schema import add_device, v2_schema

    eng = create_engine(url)
    with eng.begin() as c:
        v2_schema(c)
        for i, (vendor, typ) in enumerate([("acme", "gpu"), ("acme", "gpu"), ("zeta", "gpu")]):
            add_device(c, i + 1, f"{i:016x}", f"{i:016x}", vendor, typ)
        rows = [  # id, device, bucket, config json, status
            (1, 1, 10, "A", "ok"), (2, 1, 20, "A", "ok"), (3, 2, 10, "A", "ok"),
            (4, 2, 20, "B", "failed"), (5, 3, 10, "A", "ok"), (6, 3, 20, "B", "ok"),
            (7, 2, 12, "C", "failed"), (8, 1, 12, "B", "ok")]
        for rid, dev, bucket, cj, status in rows:
            c.execute(text(
                "INSERT INTO cltune_results (id, device_id, op, dtype, bucket, config_key,"
                " config_json, status, n_measured, cltune_version, source_hash, median_s,"
                " stale) VALUES (:r, :d, 'sum', 'float32', :b, :k, :j, :s, 1, 'v',"
                " 'cccccccccccccccc', 0.5, 0)"),
                {"r": rid, "d": dev, "b": bucket, "k": cj.lower() * 16, "j": f'{{"c": "{cj}"}}',
                 "s": status})
        for bid, (dev, bucket, rid) in enumerate([(1, 10, 1), (1, 20, 2), (2, 10, 3),
                                                  (2, 20, 4), (3, 10, 5), (3, 20, 6)]):
            c.execute(text("INSERT INTO cltune_best (id, device_id, op, dtype, bucket,"
                           " result_id) VALUES (:i, :d, 'sum', 'float32', :b, :r)"),
                      {"i": bid + 1, "d": dev, "b": bucket, "r": rid})
    eng.dispose()
    return url


def test_migrates_a_v2_database_with_data_and_backfills_the_tally(tmp_path):
    check_v2_migration(v2_database(f"sqlite:///{tmp_path / 'v2.db'}"))


def check_v2_migration(url: str, *, write_after: bool = True) -> None:
    """Migrate the database of v2_database and check rows, tally and lookup (shared with
    test_postgres.py, where V1_DDL's `id INTEGER PRIMARY KEY` does not number new rows, so
    nothing is written after the migration)."""
    with pytest.raises(SchemaError, match="v2 is older"):
        Store.open(url, readonly=True)
    s = Store.open(url)  # migrates v2 -> v3 -> v4
    a, b, c = ('{"c": "A"}', '{"c": "B"}', '{"c": "C"}')
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM cltune_schema_version")).scalar() == LATEST
        assert conn.execute(text("SELECT count(*) FROM cltune_results")).scalar() == 8
        assert conn.execute(text("SELECT count(*) FROM cltune_best")).scalar() == 6
        from cltune.tuning_db import tally

        assert tally.stored(conn) == {
            ("acme", "gpu", "reduce", "sum/float32", a): (3, 0),
            ("acme", "gpu", "reduce", "sum/float32", b): (0, 1),  # its best's result failed
            ("acme", "gpu", "reduce", "sum/float32", c): (0, 1),
            ("zeta", "gpu", "reduce", "sum/float32", a): (1, 0),
            ("zeta", "gpu", "reduce", "sum/float32", b): (1, 0)}
        # every row kept with its id, keyed as the tuner keys it now
        assert conn.execute(text("SELECT id, family, variant, size_class FROM cltune_best"
                                 " ORDER BY id")).all() == [
            (i + 1, "reduce", "sum/float32", f"2^{b}") for i, b in enumerate((10, 20) * 3)]
    assert_tally_exact(s)
    assert s.counts() == {"devices": 3, "results": 8, "failed": 2, "bests": 6}
    if write_after:  # and it is kept from now on
        s.set_best(1, 8)  # B becomes a best on acme too
        assert_tally_exact(s)
    s.close()
    ro = Store.open(url, readonly=True)  # a migrated database is read normally
    from cltune.tuning_db.lookup import DeviceKey, vendor_default

    k = DeviceKey("f" * 16, "e" * 16, "unseen", "zeta", "gpu", "1")
    # tie: A < B
    assert vendor_default(ro, k, "reduce", "sum/float32").rows[0].config == {"c": "A"}
    ro.close()


def test_migrated_schema_equals_a_fresh_one_indexes_included(tmp_path):
    url = v2_database(f"sqlite:///{tmp_path / 'v2.db'}")
    Store.open(url).close()
    fresh = Store.open(f"sqlite:///{tmp_path / 'fresh.db'}")
    with fresh.engine.connect() as a, create_engine(url).connect() as b:
        assert set(inspect(a).get_table_names()) == set(inspect(b).get_table_names())
        for table in inspect(a).get_table_names():
            # the migrations' frozen DDL differs from the models in details SQLite ignores
            # (nullable id, TIMESTAMP for DATETIME); the tally table is compared in full
            full = table == "cltune_vendor_tally"
            assert ([(c["name"], str(c["type"]), c["nullable"]) if full else c["name"]
                     for c in inspect(a).get_columns(table)]
                    == [(c["name"], str(c["type"]), c["nullable"]) if full else c["name"]
                        for c in inspect(b).get_columns(table)]), table
            assert (sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                           for i in inspect(a).get_indexes(table))
                    == sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                              for i in inspect(b).get_indexes(table))), table
            assert (inspect(a).get_pk_constraint(table)["constrained_columns"]
                    == inspect(b).get_pk_constraint(table)["constrained_columns"]), table
        top = [r[-1] for r in b.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT config_json FROM cltune_vendor_tally WHERE vendor = 'a'"
            " AND type = 'gpu' AND family = 'reduce' AND variant = 'sum/float32' AND n_failed = 0"
            " AND n_best > 0 ORDER BY n_best DESC, config_json LIMIT 4")]
        assert top == ["SEARCH cltune_vendor_tally USING COVERING INDEX "
                       "ix_cltune_vendor_tally_top (vendor=? AND type=? AND family=? AND "
                       "variant=? AND n_failed=? AND n_best>?)"], top  # no table scan, no sort


def test_tally_follows_bests_failures_and_verify(db_url):
    """set_best new and replacing, a best's result failing (as `cltune verify` records it) and
    passing again, a failure of another config: the counts after each step."""
    from cltune.tuning_db import tally

    s = Store.open(db_url)
    d0, d3 = put_device(s, 0), put_device(s, 3)  # both acme gpu

    def rec(dev, cfg, status="ok", bucket=20, force=False):
        return s.record(dev, reduce_measurement("sum", "float32", bucket, cfg, f"k{cfg['items']}",
                                                status=status,
                                                median_s=1e-4 if status == "ok" else None,
                                                n_measured=1, cltune_version="t",
                                                source_hash="c" * 16), force=force)

    def counts():
        with s.engine.connect() as c:
            got = tally.stored(c)
        return {json_items(k[4]): v for k, v in got.items()}

    def json_items(cj):
        import json

        return json.loads(cj)["items"]

    a, b = CFGS[0], CFGS[1]
    ra, rb = rec(d0, a), rec(d0, b)
    assert counts() == {}
    s.set_best(d0, ra)
    s.set_best(d3, rec(d3, a))
    assert counts() == {1: (2, 0)}
    s.set_best(d0, ra)  # the same best again: no change
    assert counts() == {1: (2, 0)}
    s.set_best(d0, rb)  # replaced
    assert counts() == {1: (1, 0), 2: (1, 0)}
    rec(d0, b, "failed")  # a failure never replaces a validated result of the same source
    assert counts() == {1: (1, 0), 2: (1, 0)}
    rec(d0, b, "failed", force=True)  # cltune verify: the best's config no longer passes
    assert counts() == {1: (1, 0), 2: (0, 1)}
    rec(d0, b, force=True)  # re-measured and passes again: the best counts again
    assert counts() == {1: (1, 0), 2: (1, 0)}
    rec(d3, b, "failed", bucket=10)  # failed elsewhere: never a vendor default again
    assert counts() == {1: (1, 0), 2: (1, 1)}
    with pytest.raises(DatabaseError, match="validated"):
        s.set_best(d3, s.results(d3, "reduce", "sum/float32", "2^10", None)[0].id)
    assert counts() == {1: (1, 0), 2: (1, 1)}
    assert_tally_exact(s)


@pytest.mark.parametrize("seed", range(6))
def test_tally_equals_a_recomputation_after_random_writes(db_url, seed):
    import random

    s = Store.open(db_url)
    rng = random.Random(seed)
    for _ in range(8):
        random_ops(s, rng, 25, range(6))
        assert_tally_exact(s)
    s.close()


def test_migrate_rebuild_tally_repairs_a_drifted_tally(db_url):
    """A tally written past (e.g. by an older cltune during the migration) is recounted by
    `cltune migrate --rebuild-tally`, through the CLI, in one transaction."""
    import random

    from typer.testing import CliRunner

    from cltune.cli.app import app

    s = Store.open(db_url)
    random_ops(s, random.Random(7), 60, range(5))
    with s.engine.begin() as c:  # drift: a lost update, a stray row, a deleted row
        c.execute(text("UPDATE cltune_vendor_tally SET n_best = n_best + 3 WHERE rowid IN "
                       "(SELECT rowid FROM cltune_vendor_tally LIMIT 1)"))
        c.execute(text("INSERT INTO cltune_vendor_tally VALUES ('ghost', 'gpu', 'reduce', "
                       "'sum/float32', '{}', 5, 0)"))
        c.execute(text("DELETE FROM cltune_vendor_tally WHERE rowid IN (SELECT max(rowid) "
                       "FROM cltune_vendor_tally WHERE vendor != 'ghost')"))
    with pytest.raises(AssertionError):
        assert_tally_exact(s)
    res = CliRunner().invoke(app, ["migrate", "--db", db_url, "--rebuild-tally"])
    assert res.exit_code == 0, res.output
    assert "vendor tally rebuilt" in res.output and " 3 differed" in res.output, res.output
    assert_tally_exact(s)
    assert s.rebuild_tally()[1] == 0  # nothing left to repair
    s.close()


def _writer(url: str, seed: int, n: int, out) -> None:  # noqa: ANN001
    import random

    try:
        s = Store.open(url)
        random_ops(s, random.Random(seed), n, range(4))
        s.close()
        out.put("")
    except BaseException as e:  # noqa: BLE001
        out.put(f"{type(e).__name__}: {e}")


def concurrent_writers(url: str, procs: int = 3, n: int = 80) -> None:
    """`procs` processes run random_ops on the same devices and keys at once; then the tally
    equals a recomputation (shared with test_postgres.py)."""
    import multiprocessing as mp

    s = Store.open(url)
    for i in range(4):  # the devices exist first (their first insert races: not this test)
        put_device(s, i)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    ps = [ctx.Process(target=_writer, args=(url, seed, n, out)) for seed in range(procs)]
    for p in ps:
        p.start()
    errors = [e for e in (out.get(timeout=300) for _ in ps) if e]
    for p in ps:
        p.join(60)
    assert not errors, errors[:3]
    assert_tally_exact(s)
    s.close()


@pytest.mark.multiprocess
def test_tally_stays_exact_under_concurrent_writers(db_url):
    concurrent_writers(db_url)


def test_optuna_studies_go_beside_the_results_database(monkeypatch, tmp_path):
    """`--storage` unset: $CLTUNE_STORAGE, else studies.db beside a SQLite results database
    (the one named, else $CLTUNE_DB's), else the user data dir: the CLI and `knl.tune(db=)`
    agree (the CLI used to put a study beside the default database even with `--db`)."""
    from cltune.tuning_db import default_storage_url
    from cltune.tuning_db.paths import default_dir

    monkeypatch.delenv("CLTUNE_STORAGE", raising=False)
    monkeypatch.delenv("CLTUNE_DB", raising=False)
    assert default_storage_url(str(tmp_path / "a" / "r.db")) == \
        f"sqlite:///{tmp_path / 'a' / 'studies.db'}"
    assert default_storage_url(f"sqlite:///{tmp_path / 'b.db'}") == \
        f"sqlite:///{tmp_path / 'studies.db'}"
    home = f"sqlite:///{default_dir() / 'studies.db'}"
    assert default_storage_url() == home
    assert default_storage_url("postgresql+psycopg://u@h/results") == home
    monkeypatch.setenv("CLTUNE_DB", str(tmp_path / "env" / "t.db"))
    assert default_storage_url() == f"sqlite:///{tmp_path / 'env' / 'studies.db'}"
    monkeypatch.setenv("CLTUNE_STORAGE", "sqlite:////elsewhere/s.db")
    assert default_storage_url(str(tmp_path / "r.db")) == "sqlite:////elsewhere/s.db"
