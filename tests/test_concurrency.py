"""The tuning database under concurrency, crashes, read-only and corrupt files (SQLite).

- four `cltune tune` processes at once on ONE results database and ONE Optuna storage: two tune
  their own op/dtype, two share one study (`--study shared --resume`); all exit 0, every
  evaluated config is one row, one best per key, no "database is locked";
- Store-level hammering: processes record the same keys and set the same bests concurrently;
- deterministic interleavings: a writer that already holds the write lock (BEGIN IMMEDIATE) with
  the same key inserted; the library call waits for it and then updates that row;
- `kill -9` of `cltune tune` at several points (startup, first trials, later trials, while the
  finalists are re-measured): both files pass `PRAGMA integrity_check`, `--resume` completes
  and no finished trial nor stored result is lost;
- read-only and corrupt databases at run time (`get_reducer`) and in the CLI.

Sizes are tiny (2^10, 2^12) and trials few: the point is the database, not the kernels.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import optuna
import pyopencl.array as cla
import pytest
from sqlalchemy import create_engine
from support.records import reduce_measurement
from support.require import need
from support.tuned import store_bests
from support.writes import random_record_writes

from cltune import get_reducer
from cltune.core.serving import CltuneWarning
from cltune.families.reduce.config import Config
from cltune.tuning_db import Store
from cltune.tuning_db.answer import device_key
from cltune.tuning_db.shipped import lookup_without_db

DONE = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
PARTS = {"vendor": "acme", "type": "gpu", "model": "Rocket 9", "compute_units": 8,
         "local_mem": 65536, "max_wg": 1024, "platform": "Acme CL",
         "platform_version": "OpenCL 3.0", "driver": "1.0", "opencl_c": "OpenCL C 1.2"}
SRC = "c" * 16
HAMMER_CFG = {"strategy": "serial", "wg": 8, "tile": 0, "vec": 1, "groups_per_cu": 1,
              "passes": 2, "acc": "native"}
NOW = "2026-01-01 00:00:00.000000"


# ---------------------------------------------------------------------------------- helpers
def cltune(*args: str) -> list[str]:
    return [sys.executable, "-m", "cltune", *args]


def integrity(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def query(path: Path, sql: str, *args: object) -> list[tuple]:
    """A short read through a separate read-only connection (the way an observer would)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def result_rows(path: Path) -> dict[tuple, tuple]:
    """(fingerprint, family, variant, size class, config_key) -> (status, median_s) of
    cltune_results."""
    rows = query(path, "SELECT d.fingerprint, r.family, r.variant, r.size_class, r.config_key,"
                       " r.status, r.median_s FROM cltune_results r JOIN cltune_devices d"
                       " ON d.id = r.device_id")
    out = {r[:5]: r[5:] for r in rows}
    assert len(out) == len(rows), "a results key is stored twice"
    return out


def assert_no_duplicates(path: Path) -> None:
    key = "device_id || '|' || family || '|' || variant || '|' || size_class"
    (n, distinct), = query(path, f"SELECT count(*), count(DISTINCT {key} || '|' || config_key)"
                                 " FROM cltune_results")
    assert n == distinct, f"{n - distinct} duplicate result rows"
    (n, distinct), = query(path, f"SELECT count(*), count(DISTINCT {key}) FROM cltune_best")
    assert n == distinct, f"{n - distinct} duplicate bests"
    bad = query(path, "SELECT b.id FROM cltune_best b JOIN cltune_results r ON r.id = b.result_id"
                      " WHERE r.status != 'ok' OR r.device_id != b.device_id"
                      " OR r.family != b.family OR r.variant != b.variant"
                      " OR r.size_class != b.size_class")
    assert not bad, f"bests pointing at the wrong or a failed result: {bad}"


def finished_trials(storage: str) -> dict[tuple[str, int], tuple]:
    """(study, number) -> (state, params, values) of every finished trial in the storage."""
    out = {}
    for s in optuna.get_all_study_summaries(storage):
        study = optuna.load_study(study_name=s.study_name, storage=storage)
        for t in study.get_trials(deepcopy=False, states=DONE):
            out[(s.study_name, t.number)] = (t.state, t.params, t.values)
    return out


def assert_trials_recorded(db: Path, storage: str) -> None:
    """Every COMPLETE trial's config is an ok row of the results database, under its key."""
    rows = result_rows(db)
    for s in optuna.get_all_study_summaries(storage):
        _, fp, spec, b = s.study_name.split(":")  # spec "op/dtype" and b "2^k": the keys
        study = optuna.load_study(study_name=s.study_name, storage=storage)
        for t in study.get_trials(deepcopy=False,
                                  states=(optuna.trial.TrialState.COMPLETE,)):
            k = Config.from_mapping(t.user_attrs["config"]).key()
            row = rows.get((fp, "reduce", spec, b, k))
            assert row is not None and row[0] == "ok", (s.study_name, t.number, row)


def assert_clean_output(outputs: list[str]) -> None:
    for o in outputs:
        assert "database is locked" not in o, o[-2000:]
        assert "Traceback" not in o, o[-2000:]


# ------------------------------------------------------------ 4 tune processes, one database
@pytest.mark.slow
@pytest.mark.multiprocess
def test_four_tune_processes_share_one_results_db_and_storage(tmp_path, info):
    """Realistic: same --db and --storage; two workers tune their own op/dtype, two share one
    study. The storages are fresh: the workers race to create both (cltune retries Optuna's
    table creation, see test_fresh_optuna_storage_created_by_two_workers_at_once)."""
    db, stp = tmp_path / "r.db", tmp_path / "s.db"
    st = f"sqlite:///{stp}"
    k = 6
    base = ["tune", "--device", str(info.index), "--sizes", "2^10,2^12", "--trials", str(k),
            "--db", str(db), "--storage", st, "--timeout", "240"]
    jobs = [["--op", "sum", "--dtype", "float32"],
            ["--op", "max", "--dtype", "float32"],
            ["--op", "sum", "--dtype", "int32", "--study", "shared", "--resume", "--seed", "1"],
            ["--op", "sum", "--dtype", "int32", "--study", "shared", "--resume", "--seed", "2"]]
    t0 = time.monotonic()
    procs = [subprocess.Popen(cltune(*base, *j), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for j in jobs]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    wall = time.monotonic() - t0
    for p, o in zip(procs, outs, strict=True):
        assert p.returncode == 0, o[-3000:]
    assert_clean_output(outs)
    assert integrity(db) == "ok" and integrity(stp) == "ok"
    assert_no_duplicates(db)
    bests = query(db, "SELECT variant, size_class FROM cltune_best")
    assert Counter(bests) == Counter({(v, f"2^{b}"): 1 for v in ("sum/float32", "max/float32",
                                                                 "sum/int32") for b in (10, 12)})
    assert_trials_recorded(db, st)
    done = {s.study_name: len(optuna.load_study(study_name=s.study_name, storage=st)
                              .get_trials(deepcopy=False, states=DONE))
            for s in optuna.get_all_study_summaries(st)}
    assert len(done) == 6, done
    for name, n in done.items():
        # own studies: exactly k; the shared one: k, or k+1 when both workers were inside a
        # trial when the cap was reached (MaxTrialsCallback semantics)
        assert (k <= n <= k + 1) if name.startswith("shared:") else n == k, (name, n)
    rows = query(db, "SELECT count(*) FROM cltune_results")[0][0]
    print(f"\n4 processes x {k} trials x 2 buckets: {wall:.1f} s, {rows} result rows, "
          f"{len(bests)} bests, trials per study {sorted(done.values())}, 0 duplicates")


def test_fresh_optuna_storage_created_by_two_workers_at_once(tmp_path):
    """Deterministic: one worker is inside the transaction that creates Optuna's tables (it
    holds the write lock); a second worker opens the same fresh storage meanwhile."""
    from optuna.storages._rdb import models

    from cltune.tuning.tuner import open_storage

    url = f"sqlite:///{tmp_path / 's.db'}"
    eng = create_engine(url, connect_args={"isolation_level": None})
    first = eng.connect()
    first.exec_driver_sql("BEGIN IMMEDIATE")
    models.BaseModel.metadata.create_all(first)  # worker 1, mid-creation
    err: list[BaseException] = []

    def second() -> None:
        try:
            open_storage(url).engine.dispose()
        except BaseException as e:  # noqa: BLE001
            err.append(e)

    t = threading.Thread(target=second)
    t.start()
    time.sleep(1.0)  # worker 2 has seen no tables and waits for the write lock
    first.exec_driver_sql("COMMIT")
    first.close()
    t.join(120)
    eng.dispose()
    assert not err, f"{type(err[0]).__name__}: {str(err[0]).splitlines()[0]}"


_ASKER = r"""
import json, sys
import pyopencl as cl
from cltune.device.select import select
from cltune.families.reduce.target import suggest
from cltune.tuning.tuner import Tuner, TuneOptions
from cltune.tuning_db import Store
info, dev = select(sys.argv[1])
store = Store.open(sys.argv[2])
w = Tuner(cl.Context([dev]), dev, info, store, sys.argv[3],
          TuneOptions(buckets=(10,), trials=8, resume=True, study_prefix="shared"))
study = w.study(w.study_name(10))
keys = []
for _ in range(4):
    t = study.ask()
    keys.append(suggest(t, w.space).key())
    study.tell(t, 1.0)
print(json.dumps(keys))
"""


@pytest.mark.multiprocess
def test_workers_of_one_study_with_default_options_explore_different_configs(tmp_path, info):
    """Two worker processes of one study, default options, each asks for 4 configs."""
    args = [str(info.index), f"sqlite:///{tmp_path / 'r.db'}", f"sqlite:///{tmp_path / 's.db'}"]
    Store.open(args[1]).close()
    optuna.storages.RDBStorage(args[2]).engine.dispose()
    ps = [subprocess.Popen([sys.executable, "-c", _ASKER, *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for _ in range(2)]
    keys = []
    for p in ps:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
        keys += json.loads(out.strip().splitlines()[-1])
    assert len(set(keys)) >= 6, f"only {len(set(keys))} distinct configs in {len(keys)} trials"


# ------------------------------------------------------------ Store-level hammering
def _hammer(url: str, barrier, seed: int, n: int, keys: int, out) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    log, errors = [], []
    try:
        barrier.wait()
        s = Store.open(url)  # every process creates/migrates at the same moment
        dev = s.upsert_device(PARTS, "a" * 16, "b" * 16, "Rocket 9")
        log = random_record_writes(s, dev, rng, n, keys, HAMMER_CFG, SRC)
        s.close()
    except BaseException as e:  # noqa: BLE001
        errors.append(f"{type(e).__name__}: {e}")
    out.put((log, errors))


def hammer(url: str, procs: int = 4, n: int = 150, keys: int = 12) -> tuple[list, list]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_hammer, args=(url, barrier, i, n, keys, out))
          for i in range(procs)]
    for p in ps:
        p.start()
    got = [out.get(timeout=300) for _ in ps]
    for p in ps:
        p.join(60)
    return [x for log, _ in got for x in log], [e for _, errs in got for e in errs]


def check_hammered(store: Store, log: list, procs: int, n: int) -> None:
    """One row per key; per key the fastest validated median survives; bests valid."""
    from sqlalchemy import select

    from cltune.tuning_db.models import Best, Device, Result

    assert len(log) == procs * n
    with store.session() as s:
        assert s.scalar(select(Device.id).where(Device.fingerprint == "a" * 16)) is not None
        assert len(s.scalars(select(Device.id)).all()) == 1, "device inserted twice"
        rows = [(int(sc.removeprefix("2^")), *rest) for sc, *rest in s.execute(
            select(Result.size_class, Result.config_key, Result.status, Result.median_s))]
        best = s.execute(select(Best.size_class, Result.status, Result.size_class)
                         .join(Result, Result.id == Best.result_id)).all()
    keys = {(b, k) for b, k, _ in log}
    assert len(rows) == len({(b, k) for b, k, _, _ in rows}) == len(keys)
    for b, k, status, med in rows:
        oks = [m for bb, kk, m in log if (bb, kk) == (b, k) and m is not None]
        if oks:
            assert status == "ok" and med == pytest.approx(min(oks), rel=1e-12), (b, k)
        else:
            assert status == "failed", (b, k)
    assert sorted(b for b, _, _ in best) == ["2^10", "2^20"]
    assert all(st == "ok" and b == rb for b, st, rb in best)


@pytest.mark.multiprocess
def test_store_hammered_by_processes_keeps_one_row_per_key(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    procs, n = 4, 150
    t0 = time.monotonic()
    log, errors = hammer(url, procs, n)
    wall = time.monotonic() - t0
    assert not errors, errors[:3]
    s = Store.open(url)
    try:
        check_hammered(s, log, procs, n)
    finally:
        s.close()
    assert integrity(tmp_path / "h.db") == "ok"
    print(f"\nSQLite hammer: {procs} processes x {n} record()/set_best() on 24 keys: "
          f"{wall:.1f} s, 0 errors, 1 row per key")


# ------------------------------------------------------------ deterministic interleavings
def _holder(path: Path, sql: str, *args: object) -> sqlite3.Connection:
    """Another writer that took the write lock and inserted the same key, not yet committed."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.execute(sql, args)
    return con


@pytest.mark.parametrize("what", ["record", "record-update", "set_best", "upsert_device"])
def test_writer_waits_for_a_concurrent_insert_of_the_same_key(tmp_path, what):
    """SQLite: every write is `BEGIN IMMEDIATE`, so the read-then-write of record/set_best/
    upsert_device cannot interleave with another writer's insert or update of the same key:
    the call waits (busy timeout) and then sees that row (no duplicate, no lost update)."""
    path = tmp_path / "i.db"
    s = Store.open(f"sqlite:///{path}")
    dev = s.upsert_device(PARTS, "a" * 16, "b" * 16, "Rocket 9")
    cfg = {"strategy": "serial", "wg": 8, "tile": 0, "items": 1, "vec": 1, "groups_per_cu": 1,
           "passes": 2, "acc": "native"}
    rid = s.record(dev, reduce_measurement("sum", "float32", 10, cfg, "k0", status="ok",
                                           median_s=2e-4, gbps=1.0, n_measured=1024,
                                           cltune_version="t", source_hash=SRC))
    cols = ("device_id, family, variant, size_class, config_key, config_json, status, reason,"
            " median_s, n_measured, cltune_version, source_hash, stale, created_at, updated_at")
    if what == "record":
        other = _holder(path, f"INSERT INTO cltune_results ({cols}) VALUES"
                        " (?, 'reduce', 'sum/float32', '2^10', 'k1', '{}', 'ok', '', 5e-4, 1024,"
                        " 't', ?, 0, ?, ?)",
                        dev, SRC, NOW, NOW)
        call = lambda: s.record(dev, reduce_measurement("sum", "float32", 10, cfg, "k1",  # noqa: E731
                                                        status="ok", median_s=1e-4, gbps=1.0,
                                                        n_measured=1024, cltune_version="t",
                                                        source_hash=SRC))
    elif what == "record-update":  # the other writer stores a faster time for k0 first
        other = _holder(path, "UPDATE cltune_results SET median_s = 1e-5 WHERE id = ?", rid)
        call = lambda: s.record(dev, reduce_measurement("sum", "float32", 10, cfg, "k0",  # noqa: E731
                                                        status="ok", median_s=5e-5, gbps=1.0,
                                                        n_measured=1024, cltune_version="t",
                                                        source_hash=SRC))
    elif what == "set_best":
        other = _holder(path, "INSERT INTO cltune_best (device_id, family, variant, size_class,"
                        " result_id, updated_at) VALUES (?, 'reduce', 'sum/float32', '2^10', ?,"
                        " ?)", dev, rid, NOW)
        call = lambda: s.set_best(dev, rid)  # noqa: E731
    else:
        other = _holder(path, "INSERT INTO cltune_devices (fingerprint, hardware_key, vendor,"
                        " type, model, name, compute_units, local_mem, max_wg, platform,"
                        " platform_version, driver, opencl_c, created_at) VALUES ('f', 'h',"
                        " 'acme',"
                        " 'gpu', 'Rocket 9', 'Rocket 9', 8, 65536, 1024, 'Acme CL', '3.0', '2.0',"
                        " '1.2', ?)", NOW)
        call = lambda: s.upsert_device({**PARTS, "driver": "2.0"}, "f", "h",  # noqa: E731
                                       "Rocket 9")
    res: list = []
    t = threading.Thread(target=lambda: res.append(_try(call)))
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "the library call did not wait for the write lock"
    other.execute("COMMIT")
    other.close()
    t.join(60)
    assert res and not isinstance(res[0], BaseException), res
    table = {"record": "cltune_results", "record-update": "cltune_results",
             "set_best": "cltune_best", "upsert_device": "cltune_devices"}[what]
    n = {"record": 2, "record-update": 1, "set_best": 1, "upsert_device": 2}[what]
    assert query(path, f"SELECT count(*) FROM {table}")[0][0] == n
    if what == "record":  # the faster median of the waiting writer won, in the same row
        assert query(path, "SELECT median_s FROM cltune_results WHERE config_key = 'k1'") == [
            (1e-4,)]
    if what == "record-update":  # it read the other's 1e-5 after the lock: no lost update
        assert res[0] == rid
        assert query(path, "SELECT median_s FROM cltune_results") == [(1e-5,)]
    s.close()


def _try(f):  # noqa: ANN001, ANN202
    try:
        return f()
    except BaseException as e:  # noqa: BLE001
        return e


# ------------------------------------------------------------ kill -9 at several points
K = 6
# the timed kill points need a run longer than 2 s on a warm compiler cache (6 trials took
# < 2 s, so 2 x 16 trials and their finalists take several times that); more trials only
# lengthen the resume the test waits for (40 took ~28 s a point on a 2-core host)
K_TIMED = 16
# by time (startup, first trials) and by progress (a cold compiler cache makes the run several
# times longer than a warm one, so later points are defined by what the databases hold)
KILL_POINTS = ["t=0.5s", "t=2s", "2^12-half-done", "finalists-2^10", "finalists-2^12"]


def _done(stp: Path, bucket: int) -> int:
    try:
        return query(stp, "SELECT count(*) FROM trials t JOIN studies s ON s.study_id ="
                          " t.study_id WHERE s.study_name LIKE ? AND t.state IN"
                          " ('COMPLETE', 'PRUNED')", f"%:2^{bucket}")[0][0]
    except sqlite3.Error:
        return 0


def _bests(db: Path) -> int:
    try:
        return query(db, "SELECT count(*) FROM cltune_best")[0][0]
    except sqlite3.Error:
        return 0


@pytest.mark.multiprocess
@pytest.mark.parametrize("point", [pytest.param(p, marks=pytest.mark.slow)  # ~20 s each
                                   if p.startswith("t=") else p for p in KILL_POINTS])
def test_kill_9_then_resume_loses_nothing(tmp_path, info, point):
    k = K_TIMED if point.startswith("t=") else K  # a warm compiler cache runs K in < 2 s
    db, stp = tmp_path / "r.db", tmp_path / "s.db"
    st = f"sqlite:///{stp}"
    cmd = cltune("tune", "--device", str(info.index), "--sizes", "2^10,2^12", "--trials",
                 str(k), "--db", str(db), "--storage", st, "--seed", "5", "--timeout", "240")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 200:
        el = time.monotonic() - t0
        if point.startswith("t=") and el >= float(point[2:-1]):
            break
        if point == "2^12-half-done" and _done(stp, 12) >= k // 2:
            break
        if point == "finalists-2^10" and _done(stp, 10) >= k and _bests(db) == 0:
            break  # bucket 2^10 has all its trials; its finalists are being re-measured
        if point == "finalists-2^12" and _done(stp, 12) >= k and _bests(db) == 1:
            break
        time.sleep(0.02)
    assert p.poll() is None, "the tuner finished before the kill point; raise --trials"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    killed_at = time.monotonic() - t0
    for f in (db, stp):
        if f.exists():
            assert integrity(f) == "ok", f
    before_trials = finished_trials(st) if stp.exists() else {}
    before_rows = result_rows(db) if db.exists() else {}
    if point.startswith("finalists"):
        b = int(point[-2:])
        assert _done(stp, b) >= k and _bests(db) == (b - 10) // 2, "kill missed the re-measure"
    r = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_clean_output([r.stdout, r.stderr])
    assert integrity(db) == "ok" and integrity(stp) == "ok"
    after_trials = finished_trials(st)
    lost = {k: v for k, v in before_trials.items() if after_trials.get(k) != v}
    assert not lost, f"finished trials lost or changed: {lost}"
    per_study = Counter(name for name, _ in after_trials)
    assert sorted(per_study.values()) == [k, k], per_study  # resume ran only what was missing
    after_rows = result_rows(db)
    gone = {k: v for k, v in before_rows.items()
            if k not in after_rows or (v[0] == "ok" and after_rows[k][0] != "ok")}
    assert not gone, f"stored results lost: {gone}"
    assert_no_duplicates(db)
    assert sorted(b for b, in query(db, "SELECT size_class FROM cltune_best")) == [
        "2^10", "2^12"]
    assert_trials_recorded(db, st)
    print(f"\nkill -9 at {point} ({killed_at:.2f} s): {len(before_trials)} finished trials and "
          f"{len(before_rows)} result rows before, all kept; after resume "
          f"{len(after_trials)} trials, {len(after_rows)} rows, integrity ok")


# ------------------------------------------------------------ read-only and corrupt databases
def _tuned_db(path: Path, info) -> str:  # noqa: ANN001
    """A database with a best for this device (sum/float32, bucket 2^20), closed cleanly."""
    url = f"sqlite:///{path}"
    store_bests(url, info, {20: Config("serial", 8, 0, 2, 4, 2, 2, "native")})
    return url


_CHILD = r"""
import json, sys, warnings
import numpy as np, pyopencl as cl, pyopencl.array as cla
from cltune import get_reducer
from cltune.device.select import select
from cltune.core.serving import CltuneWarning
info, dev = select(sys.argv[1])
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    r = get_reducer(q, db=sys.argv[2])
    r2 = get_reducer(q, op="max", db=sys.argv[2])
    x = cla.to_device(q, np.arange(1, 4097, dtype=np.float32))
    total, top = float(r(x).get()), float(r2(x).get())
try:
    open(sys.argv[3] + "/probe", "w").close()
    writable = True
except OSError:
    writable = False
print(json.dumps({"level": r.level, "sum": total, "max": top, "writable": writable,
                  "warnings": [str(i.message) for i in w
                               if issubclass(i.category, CltuneWarning)]}))
"""


def _drop_dac() -> None:
    """In the child, before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the
    bounding set, so that even uid 0 is bound by file modes (root ignores chmod otherwise)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


@pytest.mark.multiprocess
@pytest.mark.parametrize("how", ["file-0444", "dir-0555"])
def test_get_reducer_with_a_read_only_db(tmp_path, info, how):
    """The runtime opens with SQLite's `mode=ro`; here the OS enforces it too. As root the
    child drops CAP_DAC_OVERRIDE first, else chmod would not stop it. Serves the stored
    results (a read-only file) or the builtin config with one warning (a read-only directory:
    SQLite cannot create the WAL index there), never fails, never writes."""
    d = tmp_path / "ro"
    d.mkdir()
    url = _tuned_db(d / "t.db", info)
    (d / "t.db").chmod(0o444)
    if how == "dir-0555":
        d.chmod(0o555)
    before = _digest(d)
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD, str(info.index), url, str(d)],
                           capture_output=True, text=True, timeout=180,
                           preexec_fn=_drop_dac if os.geteuid() == 0 else None)
    except (OSError, subprocess.SubprocessError) as e:
        need(False, f"cannot drop CAP_DAC_OVERRIDE for a read-only test as root: {e}")
    finally:
        d.chmod(0o755)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if how == "dir-0555":
        assert not got["writable"], "the directory was writable: the test proves nothing"
        assert _digest(d) == before, "the runtime wrote into a read-only directory"
    else:
        for f in ("t.db",):  # SQLite may add its -shm/-wal beside it; the database is untouched
            assert _digest(d)[f] == before[f]
    assert got["sum"] == 4096 * 4097 / 2 and got["max"] == 4096.0
    assert len(got["warnings"]) <= 1, got["warnings"]
    assert got["level"] in ("exact", "builtin")
    if how == "file-0444":
        assert got["level"] == "exact" and not got["warnings"], got
    if got["level"] == "builtin":
        assert len(got["warnings"]) == 1
    print(f"\nread-only ({how}): level {got['level']}, warnings {got['warnings']}")


def _corrupt(path: Path, how: str, info) -> str:  # noqa: ANN001
    if how == "garbage":
        path.write_bytes(os.urandom(16384))
    else:  # a real database whose data pages were overwritten: the header still reads fine
        _tuned_db(path, info)
        con = sqlite3.connect(path)
        pages = dict(con.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'"))
        con.close()
        rng = random.Random(7)
        with open(path, "r+b") as f:
            for t in ("cltune_devices", "cltune_results", "cltune_best"):
                f.seek((pages[t] - 1) * 4096)
                f.write(rng.randbytes(4096))
    return f"sqlite:///{path}"


@pytest.mark.parametrize("how", ["garbage", "damaged-pages"])
def test_get_reducer_on_a_corrupt_db_warns_once_and_uses_builtin(tmp_path, queue, info, how):
    url = _corrupt(tmp_path / f"{how}.db", how, info)
    before = (tmp_path / f"{how}.db").read_bytes()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = get_reducer(queue, db=url)
        x = cla.to_device(queue, np.arange(1, 1001, dtype=np.float32))
        assert r(x).get() == 500500.0
    msgs = [str(i.message) for i in w if issubclass(i.category, CltuneWarning)]
    assert len(msgs) == 1, msgs
    # the levels without a database answer: shipped results where cltune has some for it
    shipped = lookup_without_db(device_key(info), "reduce", "sum/float32").level == "shipped"
    assert r.level == ("shipped" if shipped else "builtin")
    assert (tmp_path / f"{how}.db").read_bytes() == before


@pytest.mark.parametrize("how", [
    "garbage",
    "damaged-pages",
])
def test_a_second_reducer_on_the_same_corrupt_db_does_not_warn_again(tmp_path, queue, info,
                                                                      how):
    url = _corrupt(tmp_path / f"{how}2.db", how, info)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        get_reducer(queue, db=url)
        r = get_reducer(queue, op="max", db=url)
        assert r(cla.to_device(queue, np.arange(7, dtype=np.float32))).get() == 6.0
    msgs = [str(i.message) for i in w if issubclass(i.category, CltuneWarning)]
    assert len(msgs) == 1, msgs


CLI_CASES = [("garbage", ["show"]), ("garbage", ["tune", "--sizes", "2^10", "--trials", "1"]),
             ("damaged-pages", ["show"]),
             ("damaged-pages", ["tune", "--sizes", "2^10", "--trials", "1"])]


def _cli_on_corrupt(tmp_path: Path, info, how: str, args: list[str]):  # noqa: ANN001, ANN202
    url = _corrupt(tmp_path / "bad.db", how, info)
    before = (tmp_path / "bad.db").read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = subprocess.run(cltune(*args, "--device", str(info.index), "--db", url, "--storage",
                              f"sqlite:///{tmp_path / 's.db'}")
                       if args[0] == "tune" else cltune(*args, "--db", url),
                       capture_output=True, text=True, timeout=120, env=env)
    assert (tmp_path / "bad.db").read_bytes() == before, "the CLI wrote to a corrupt file"
    return r


@pytest.mark.multiprocess
@pytest.mark.parametrize("how,args", CLI_CASES)
def test_cli_on_a_corrupt_db_fails_cleanly(tmp_path, info, how, args):
    r = _cli_on_corrupt(tmp_path, info, how, args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr + r.stdout
    assert r.stderr.count("error:") == 1 and "bad.db" in r.stderr.replace("\n", "")


@pytest.mark.multiprocess
@pytest.mark.parametrize("how,args", CLI_CASES[:2])
def test_cli_on_a_corrupt_db_says_so_in_one_line(tmp_path, info, how, args):
    r = _cli_on_corrupt(tmp_path, info, how, args)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines


def test_opening_a_fresh_database_waits_for_another_writer(tmp_path):
    """The first connection to a fresh SQLite file switches it to WAL, which needs an
    exclusive lock; while another connection holds the write lock SQLite refuses at once
    ('database is locked', deadlock avoidance: no busy timeout). Seen in CI when four processes
    opened one new database together. Store.open retries the switch and opens once the other
    writer commits."""
    path = tmp_path / "fresh.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (a)")  # still a rollback-journal database
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO other VALUES (1)")
    release = threading.Timer(0.5, holder.commit)
    release.start()
    t0 = time.monotonic()
    try:
        s = Store.open(f"sqlite:///{path}")
        s.close()
    finally:
        release.join()
        holder.close()
    assert 0.4 < time.monotonic() - t0 < 20
