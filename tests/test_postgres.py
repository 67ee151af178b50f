"""The tuning database and the Optuna storage on a real PostgreSQL server.

`CLTUNE_TEST_PG_URL` (`.ci/postgres.sh` starts a throwaway server and exports it) names a
database; every test works in its own fresh schemas (`search_path` through the URL's `options`),
dropped at the end, so runs and other users of the database never meet. The role needs no
CREATEDB, only CREATE on the database (it owns it in CI).

- Store.open creates the schema, round trip, re-open;
- cltune's tables (`cltune_*`, version in `cltune_schema_version`) and Optuna's (`studies`, ...,
  `alembic_version`) in ONE schema, created in either order;
- what two writers of the same key do (deterministic: one holds an uncommitted insert while the
  library call runs); record() retries, set_best()/upsert_device()/schema creation do not;
- processes hammering the same keys;
- three `cltune tune --study shared --resume` workers on one study and one results database.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import optuna
import pytest
from sqlalchemy import create_engine, func, inspect, select, text
from sqlalchemy.engine import make_url
from support.records import reduce_measurement
from support.require import need
from support.writes import random_record_writes

from cltune.families.reduce.config import Config
from cltune.tuning_db import DatabaseError, Store, tally
from cltune.tuning_db.migrations import LATEST
from cltune.tuning_db.models import Base, Best, Device, Result

pytestmark = pytest.mark.postgres

PG_URL = os.environ.get("CLTUNE_TEST_PG_URL", "").strip()
DONE = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
PARTS = {"vendor": "acme", "type": "gpu", "model": "Rocket 9", "compute_units": 8,
         "local_mem": 65536, "max_wg": 1024, "platform": "Acme CL",
         "platform_version": "OpenCL 3.0", "driver": "1.0", "opencl_c": "OpenCL C 1.2"}
CFG = {"strategy": "serial", "wg": 8, "tile": 0, "items": 4, "vec": 8, "groups_per_cu": 2,
       "passes": 2, "acc": "native"}
SRC = "c" * 16


def with_query(url: str, **q: str) -> str:
    return make_url(url).update_query_dict(q).render_as_string(hide_password=False)


def raw(url: str, autocommit: bool = True):  # noqa: ANN201 - psycopg.Connection
    import psycopg

    u = make_url(url)
    return psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password,
                           dbname=u.database, options=u.query.get("options"),
                           autocommit=autocommit)


@pytest.fixture(scope="module")
def pg() -> Iterator[Callable[[str], str]]:
    """A factory: schema label -> URL of a fresh schema (search_path) in the test database."""
    need(bool(PG_URL), "CLTUNE_TEST_PG_URL is not set (source .ci/postgres.sh start)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        need(False, "psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        raw(PG_URL).close()
    except Exception as e:  # noqa: BLE001
        need(False, f"PostgreSQL at CLTUNE_TEST_PG_URL is not reachable: {e}")
    run = f"cltune_t{uuid.uuid4().hex[:8]}"
    made: list[str] = []

    def schema(label: str) -> str:
        name = f"{run}_{label}"
        with raw(PG_URL) as c:
            c.execute(f'CREATE SCHEMA "{name}"')
        made.append(name)
        return with_query(PG_URL, options=f"-csearch_path={name}")

    yield schema
    with raw(PG_URL) as c:
        for name in made:
            c.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def tables(url: str) -> set[str]:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return set(inspect(c).get_table_names())
    finally:
        eng.dispose()


def add(store: Store, bucket: int = 20, median: float = 1e-3, key: str = "k1") -> tuple[int, int]:
    dev = store.upsert_device(PARTS, "a" * 16, "b" * 16, "Rocket 9")
    rid = store.record(dev, reduce_measurement("sum", "float32", bucket, CFG, key, status="ok",
                                               median_s=median, gbps=1.0, n_measured=1 << bucket,
                                               cltune_version="t", source_hash=SRC))
    return dev, rid


# ------------------------------------------------------------------------ schema, round trip
def test_store_open_creates_the_schema_and_round_trips(pg):
    url = pg("rt")
    s = Store.open(url)
    assert {"cltune_schema_version", "cltune_devices", "cltune_results",
            "cltune_best"} <= tables(url)
    dev, rid = add(s)
    s.set_best(dev, rid)
    _, rid2 = add(s, median=2e-3)  # slower, same key: kept the faster, one row
    assert rid2 == rid
    rows = s.bests([dev])
    assert len(rows) == 1 and rows[0].config == CFG and rows[0].median_s == 1e-3
    assert s.counts() == {"devices": 1, "results": 1, "failed": 0, "bests": 1}
    s.close()
    again = Store.open(url)  # re-open: nothing created twice, version kept
    with again.engine.connect() as c:
        assert c.execute(text("SELECT version FROM cltune_schema_version")).scalars().all() == [
            LATEST]
    again.close()
    ro = Store.open(url, readonly=True)
    assert ro.bests(ro.device_ids())[0].config == CFG
    ro.close()


@pytest.mark.parametrize("first", ["cltune", "optuna"])
def test_cltune_and_optuna_tables_coexist_in_one_schema(pg, first):
    from cltune.tuning.tuner import open_storage

    url = pg(f"co{first[0]}")

    def ours() -> None:
        s = Store.open(url)
        dev, rid = add(s)
        s.set_best(dev, rid)
        s.close()

    def theirs() -> None:
        storage = open_storage(url)
        study = optuna.create_study(study_name="cltune:x:sum/float32:2^20", storage=storage,
                                    load_if_exists=True)
        study.add_trial(optuna.trial.create_trial(
            params={"wg": 8}, distributions={"wg": optuna.distributions.CategoricalDistribution(
                [8, 16])}, value=1.0))
        storage.engine.dispose()

    for f in ((ours, theirs) if first == "cltune" else (theirs, ours)):
        f()
    names = tables(url)
    assert {"alembic_version", "studies", "trials", "version_info"} <= names  # Optuna's
    assert {"cltune_schema_version", "cltune_devices", "cltune_results",
            "cltune_best"} <= names  # ours
    assert not {n for n in names if n.startswith("cltune_")} - {
        "cltune_schema_version", "cltune_devices", "cltune_results", "cltune_best",
        "cltune_vendor_tally"}
    with raw(url) as c:
        assert c.execute("SELECT version FROM cltune_schema_version").fetchall() == [(LATEST,)]
        (rev,), = c.execute("SELECT version_num FROM alembic_version").fetchall()
        assert rev.startswith("v")  # Optuna's revision, untouched by us
    ro = Store.open(url, readonly=True)
    assert len(ro.bests(ro.device_ids())) == 1
    ro.close()
    trials = optuna.load_study(study_name="cltune:x:sum/float32:2^20", storage=url).trials
    assert len(trials) == 1 and trials[0].value == 1.0


@pytest.mark.multiprocess
def test_database_errors_do_not_print_the_password(pg):
    u = make_url(PG_URL)
    need(bool(u.password), "CLTUNE_TEST_PG_URL has no password")
    bad = u.set(database="cltune_no_such_database").render_as_string(hide_password=False)
    with pytest.raises(DatabaseError) as e:
        Store.open(bad)
    r = subprocess.run([sys.executable, "-m", "cltune", "show", "--db", bad],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    for text_ in (str(e.value), r.stderr.replace("\n", "")):
        assert f":{u.password}@" not in text_, text_


# ------------------------------------------------------------------------ two writers, one key
def _wait_until_blocked(app: str, t: threading.Thread, limit: float = 10.0) -> bool:
    """True once the session named `app` waits for a lock (the other writer's)."""
    t0 = time.monotonic()
    with raw(PG_URL) as c:
        while time.monotonic() - t0 < limit and t.is_alive():
            n = c.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                          " AND wait_event_type = 'Lock'", (app,)).fetchone()[0]
            if n:
                return True
            time.sleep(0.05)
    return False


def _race(url: str, hold: Callable, call: Callable[[str], object]) -> object:
    """`hold(conn)` inserts the same key in an open transaction (another worker, mid-write);
    `call(url)` runs the library meanwhile; then the other worker commits. Returns what the
    call returned or raised."""
    app = f"cltune-race-{uuid.uuid4().hex[:6]}"
    eng = create_engine(url)
    conn = eng.connect()
    tx = conn.begin()
    hold(conn)
    res: list = []

    def run() -> None:
        try:
            res.append(call(with_query(url, application_name=app)))
        except BaseException as e:  # noqa: BLE001
            res.append(e)

    t = threading.Thread(target=run)
    t.start()
    blocked = _wait_until_blocked(app, t)
    tx.commit()
    conn.close()
    t.join(60)
    eng.dispose()
    assert res, "the library call did not return"
    print(f"\n  (the call {'waited for' if blocked else 'did not wait for'} the other writer)")
    return res[0]


def _ready(url: str) -> tuple[Store, int, int]:
    s = Store.open(url)
    dev, rid = add(s, bucket=10)
    return s, dev, rid


def test_record_of_a_key_another_worker_is_inserting_is_retried(pg):
    url = pg("rr")
    s, dev, _ = _ready(url)

    def hold(conn) -> None:  # noqa: ANN001
        conn.execute(Result.__table__.insert().values(
            device_id=dev, family="reduce", variant="sum/float32", size_class="2^10",
            config_key="k2",
            config_json="{}", status="ok", reason="", median_s=5e-4, n_measured=1024,
            cltune_version="t", source_hash=SRC, stale=0))

    def call(u: str) -> int:
        st = Store.open(u)
        try:
            return st.record(dev, reduce_measurement("sum", "float32", 10, CFG, "k2", status="ok",
                                                     median_s=1e-4, gbps=1.0, n_measured=1024,
                                                     cltune_version="t", source_hash=SRC))
        finally:
            st.close()

    got = _race(url, hold, call)
    assert isinstance(got, int), got
    rows = s.results(dev, "reduce", "sum/float32", "2^10")
    assert sorted(r.median_s for r in rows) == [1e-4, 1e-3]  # k2 once, the faster one won
    assert [r.id for r in rows if r.median_s == 1e-4] == [got]
    s.close()


def test_record_keeps_the_faster_of_two_concurrent_updates(pg):
    url = pg("lu")
    s, dev, rid = _ready(url)  # key k1 at bucket 10: 1e-3 s, committed

    def hold(conn) -> None:  # noqa: ANN001 - another worker stores a faster 1e-5 s, uncommitted
        conn.execute(Result.__table__.update().where(Result.id == rid).values(median_s=1e-5))

    def call(u: str) -> int:  # meanwhile this worker records 5e-5 s: better than 1e-3 only
        st = Store.open(u)
        try:
            return st.record(dev, reduce_measurement("sum", "float32", 10, CFG, "k1", status="ok",
                                                     median_s=5e-5, gbps=1.0, n_measured=1024,
                                                     cltune_version="t", source_hash=SRC))
        finally:
            st.close()

    got = _race(url, hold, call)
    assert got == rid, got
    med = s.results(dev, "reduce", "sum/float32", "2^10")[0].median_s
    s.close()
    assert med == 1e-5, f"the faster result was overwritten by a slower one: {med}"


def test_set_best_while_another_worker_inserts_the_same_best(pg):
    url = pg("sb")
    s, dev, rid = _ready(url)

    def hold(conn) -> None:  # noqa: ANN001
        conn.execute(Best.__table__.insert().values(device_id=dev, family="reduce",
                                                    variant="sum/float32", size_class="2^10",
                                                    result_id=rid))

    def call(u: str) -> None:
        st = Store.open(u)
        try:
            st.set_best(dev, rid)
        finally:
            st.close()

    got = _race(url, hold, call)
    s.close()
    assert not isinstance(got, BaseException), f"{type(got).__name__}: {got}"


def test_upsert_device_while_another_worker_inserts_it(pg):
    url = pg("ud")
    Store.open(url).close()

    def hold(conn) -> None:  # noqa: ANN001
        conn.execute(Device.__table__.insert().values(fingerprint="f" * 16, hardware_key="h",
                                                      name="Rocket 9", **PARTS))

    def call(u: str) -> int:
        st = Store.open(u)
        try:
            return st.upsert_device(PARTS, "f" * 16, "h", "Rocket 9")
        finally:
            st.close()

    got = _race(url, hold, call)
    assert not isinstance(got, BaseException), f"{type(got).__name__}: {got}"


def test_two_workers_create_a_fresh_schema_at_once(pg):
    url = pg("fs")

    def hold(conn) -> None:  # noqa: ANN001 - exactly what ensure_schema does, uncommitted
        from cltune.tuning_db.migrations import schema_lock

        schema_lock(conn)
        Base.metadata.create_all(conn)
        conn.execute(text("INSERT INTO cltune_schema_version (id, version) VALUES (1, :v)"),
                     {"v": LATEST})

    got = _race(url, hold, lambda u: Store.open(u).close())
    assert not isinstance(got, BaseException), f"{type(got).__name__}: {got}"


def test_two_workers_create_a_fresh_optuna_storage_at_once(pg):
    from optuna.storages._rdb import models

    from cltune.tuning.tuner import open_storage

    url = pg("fo")
    got = _race(url, lambda conn: models.BaseModel.metadata.create_all(conn),
                lambda u: open_storage(u).engine.dispose())
    assert not isinstance(got, BaseException), f"{type(got).__name__}: {str(got)[:300]}"


# ------------------------------------------------------------------------ hammering
def _hammer(url: str, barrier, seed: int, n: int, out) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    log, errors = [], []
    try:
        s = Store.open(url)
        dev = s.device_ids(fingerprint="a" * 16)[0]
        barrier.wait()
        log = random_record_writes(s, dev, rng, n, 12, CFG, SRC)
        s.close()
    except BaseException as e:  # noqa: BLE001
        errors.append(f"{type(e).__name__}: {e}")
    out.put((log, errors))


@pytest.mark.multiprocess
def test_processes_hammering_the_same_keys(pg):
    """4 processes x 150 record() on 24 shared keys and set_best() on 2 keys: no errors, one
    row per key. The device and the first bests exist beforehand (their first insert races:
    see the concurrent-write tests above)."""
    url = pg("hm")
    s = Store.open(url)
    dev, r10 = add(s, bucket=10, median=1.0, key="seed10")
    _, r20 = add(s, bucket=20, median=1.0, key="seed20")
    s.set_best(dev, r10)
    s.set_best(dev, r20)
    procs, n = 4, 150
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_hammer, args=(url, barrier, i, n, out)) for i in range(procs)]
    t0 = time.monotonic()
    for p in ps:
        p.start()
    got = [out.get(timeout=300) for _ in ps]
    for p in ps:
        p.join(60)
    wall = time.monotonic() - t0
    errors = [e for _, errs in got for e in errs]
    assert not errors, errors[:3]
    log = [x for lg, _ in got for x in lg]
    with s.session() as ses:
        rows = [(int(sc.removeprefix("2^")), *rest) for sc, *rest in ses.execute(
            select(Result.size_class, Result.config_key, Result.status, Result.median_s)
            .where(Result.config_key.like("k%")))]
        nbest = ses.scalar(select(func.count(Best.id)))
        bad = ses.scalar(select(func.count(Best.id)).join(Result, Result.id == Best.result_id)
                         .where((Result.status != "ok") | (Result.size_class != Best.size_class)))
    assert len(rows) == len({(b, k) for b, k, _, _ in rows}) == len({(b, k) for b, k, _ in log})
    for b, k, status, med in rows:
        oks = [m for bb, kk, m in log if (bb, kk) == (b, k) and m is not None]
        # the fastest validated median written wins (no lost update: rows are locked)
        assert (status == "ok" and med == pytest.approx(min(oks), rel=1e-12)
                if oks else (status, med) == ("failed", None)), (b, k, status, med)
    assert nbest == 2 and bad == 0
    with s.engine.connect() as c:  # the vendor tally was kept by every one of those writes
        assert tally.stored(c) == tally.recompute(c)
    s.close()
    slower = sum(1 for b, k, status, med in rows if status == "ok" and med > min(
        m for bb, kk, m in log if (bb, kk) == (b, k) and m is not None) * (1 + 1e-12))
    print(f"\nPostgreSQL hammer: {procs} processes x {n} record()/set_best(): {wall:.1f} s, "
          f"0 errors, {len(rows)} rows for {len(rows)} keys; {slower} key(s) kept a slower "
          "median than the fastest recorded (lost update)")


def test_migrates_a_v3_database_and_answers_the_same_lookups(pg):
    """v3 -> v4 on PostgreSQL: renamed tables, constraints and key indexes, serial ids that
    continue after the copied rows (tests/test_migration_v4.py)."""
    from test_migration_v4 import check_v3_migration

    check_v3_migration(pg("v3"))


def test_migrates_a_v2_database_with_data(pg):
    """The v3 migration (frozen DDL and the tally's INSERT ... SELECT backfill) on
    PostgreSQL: rows intact, tally as expected and equal to a recomputation."""
    from test_db import check_v2_migration, v2_database

    check_v2_migration(v2_database(pg("v2")), write_after=False)


def test_vendor_tally_stays_exact_under_concurrent_writers(pg):
    """3 processes x 80 random writes of every kind that changes the vendor tally (record ok
    and failed, forced failures of bests, set_best, merge of export records) on the same
    devices and keys: no error, no deadlock, and the tally equals a recomputation."""
    from test_db import concurrent_writers

    concurrent_writers(pg("vt"))


# ------------------------------------------------------------------------ 3 workers, 1 study
def _side_by_side(ctx, device, configs: list[dict], bucket: int = 10) -> list[float]:  # noqa: ANN001
    """GB/s of each config per call as an application waits for it (what the tuner ranks its
    finalists by, since the stored best must never lose end to end), timed interleaved in this
    process so that both are measured under the same load. Device time alone is not what is
    compared: at 2^10 the per-call winner can have the slower kernel."""
    from cltune.core.inputs import make_input
    from cltune.core.ops import OpSpec
    from cltune.families.reduce.launch import Launcher
    from cltune.opencl.measure import Bench, profiling_queue

    info, dev = device
    spec = OpSpec.of("sum", "float32")
    bench = Bench(ctx, profiling_queue(ctx, dev), make_input(spec, 1 << bucket),
                  spec.result_dtype)
    las = [Launcher(ctx, dev, info, spec, Config.from_mapping(c)) for c in configs]
    rounds: list[list[float]] = [[] for _ in las]
    for _ in range(7):
        for la, r in zip(las, rounds, strict=True):
            r.append(bench.per_call(la, budget_s=0.1))
    return [bench.nbytes / sorted(r)[len(r) // 2] / 1e9 for r in rounds]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_three_workers_share_one_study_and_one_results_db(pg, info, ctx, device):
    """`cltune tune --study shared --resume` x 3 at once, results and Optuna storage in two
    schemas of the server. A single worker with the same number of trials runs first under
    another study name: it also creates the schemas, the device row and the first best (so
    the three workers only update that best: the first-insert races have their own tests above).
    The two winners are then timed side by side here: the workers measured while three
    processes shared two cores, so their stored GB/s are not comparable as they are."""
    k = 9
    db, storage = pg("wr"), pg("ws")
    base = ["tune", "--device", str(info.index), "--sizes", "2^10", "--trials", str(k),
            "--db", db, "--storage", storage, "--timeout", "240"]
    t0 = time.monotonic()
    ref = subprocess.run([sys.executable, "-m", "cltune", *base, "--study", "ref"],
                         capture_output=True, text=True, timeout=300)
    t_ref = time.monotonic() - t0
    assert ref.returncode == 0, ref.stderr[-3000:]
    s = Store.open(db, readonly=True)
    dev = s.device_ids(fingerprint=info.fingerprint)
    ref_best = s.bests(dev, "reduce", "sum/float32")
    assert len(ref_best) == 1
    ref_gbps, ref_cfg = ref_best[0].gbps, ref_best[0].config
    s.close()

    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "cltune", *base, "--study", "shared",
                               "--resume", "--seed", str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    t_workers = time.monotonic() - t0
    for p, o in zip(procs, outs, strict=True):
        assert p.returncode == 0, o[-3000:]
        assert "Traceback" not in o and "error:" not in o, o[-3000:]

    name = f"shared:{info.fingerprint}:sum/float32:2^10"
    assert name in {x.study_name for x in optuna.get_all_study_summaries(storage)}
    trials = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
    done = [t for t in trials if t.state in DONE]
    # MaxTrialsCallback: the workers stop together once the study holds k finished trials;
    # each of the others may finish the one trial it was in: at most k + 2
    assert k <= len(done) <= k + 2, f"{len(done)} finished trials for --trials {k}"
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    keys = {Config.from_mapping(t.user_attrs["config"]).key() for t in complete}

    s = Store.open(db, readonly=True)
    with s.session() as ses:
        n, distinct = ses.execute(select(
            func.count(Result.id),
            func.count(func.distinct(func.concat(Result.device_id, "|", Result.family, "|",
                                                 Result.variant, "|", Result.size_class, "|",
                                                 Result.config_key))))).one()
        ok_keys = set(ses.scalars(select(Result.config_key).where(
            Result.device_id == dev[0], Result.family == "reduce",
            Result.variant == "sum/float32", Result.size_class == "2^10",
            Result.status == "ok")))
        nbest = ses.scalar(select(func.count(Best.id)).where(Best.device_id == dev[0],
                                                             Best.size_class == "2^10"))
    assert n == distinct, f"{n - distinct} duplicate result rows"
    assert keys <= ok_keys, f"trials without their result row: {keys - ok_keys}"
    assert nbest == 1
    best = s.bests(dev, "reduce", "sum/float32")
    s.close()
    assert len(best) == 1 and best[0].status == "ok"
    # side by side again, up to three times (the best ratio): the workers measured while three
    # of them shared this host's two cores, and a call at 2^10 is launch-bound, so one
    # re-measure alone swings (CI saw 0.48 once while the host was also busy elsewhere)
    ratio = 0.0
    for _ in range(3):
        shared_now, ref_now = _side_by_side(ctx, device, [best[0].config, ref_cfg])
        ratio = max(ratio, shared_now / ref_now)
        if ratio >= 0.5:
            break
    print(f"\n3 workers x --trials {k} on one study: {len(done)} finished trials "
          f"({len(complete)} complete, {len(keys)} distinct configs), {n} result rows "
          f"(0 duplicates), 1 best, {t_workers:.1f} s (one worker alone: {t_ref:.1f} s); "
          f"stored {best[0].gbps:.2f} vs {ref_gbps:.2f} GB/s; side by side "
          f"{shared_now:.2f} vs {ref_now:.2f} GB/s: ratio {ratio:.2f}")
    # at least as good as one worker within timing noise; better is fine: with per-worker seeds
    # three workers explore more of the space than one (seen: 2.98x at 2^10)
    assert ratio >= 0.5, "the shared study's best is far below a single worker's"
