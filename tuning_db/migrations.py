"""Schema versioning: ordered migrations recorded in `cltune_schema_version`.

One mechanism only. A fresh database gets the current schema from the models and the latest
version; an older one gets each later migration in its own transaction, together with its
version bump; a newer one is refused with a message naming the fix.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, inspect, text

from .errors import SchemaError
from .models import Base, SchemaVersion
from .tally import BACKFILL_SQL

#: v1 as first released, kept verbatim so tests can build a v1 database and migrate it.
V1_DDL = (
    """CREATE TABLE cltune_schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)""",
    """CREATE TABLE cltune_devices (id INTEGER PRIMARY KEY, fingerprint VARCHAR(32) NOT NULL
        UNIQUE, hardware_key VARCHAR(32) NOT NULL, vendor VARCHAR(64) NOT NULL,
        type VARCHAR(16) NOT NULL, model VARCHAR(256) NOT NULL, name VARCHAR(256) NOT NULL,
        compute_units INTEGER NOT NULL, local_mem INTEGER NOT NULL, max_wg INTEGER NOT NULL,
        platform VARCHAR(256) NOT NULL, platform_version VARCHAR(512) NOT NULL,
        driver VARCHAR(128) NOT NULL, opencl_c VARCHAR(128) NOT NULL, created_at TIMESTAMP)""",
    """CREATE INDEX ix_cltune_devices_hardware_key ON cltune_devices (hardware_key)""",
    """CREATE INDEX ix_cltune_devices_model_vendor ON cltune_devices (model, vendor)""",
    """CREATE INDEX ix_cltune_devices_vendor_type ON cltune_devices (vendor, type)""",
    """CREATE TABLE cltune_results (id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL
        REFERENCES cltune_devices(id), op VARCHAR(16) NOT NULL, dtype VARCHAR(16) NOT NULL,
        bucket INTEGER NOT NULL, config_key VARCHAR(32) NOT NULL, config_json TEXT NOT NULL,
        status VARCHAR(16) NOT NULL, reason TEXT, median_s FLOAT, gbps FLOAT,
        max_rel_error FLOAT, n_measured INTEGER NOT NULL, cltune_version VARCHAR(32) NOT NULL,
        source_hash VARCHAR(32) NOT NULL, created_at TIMESTAMP, updated_at TIMESTAMP,
        CONSTRAINT uq_cltune_results_key UNIQUE (device_id, op, dtype, bucket, config_key))""",
    """CREATE INDEX ix_cltune_results_lookup ON cltune_results (device_id, op, dtype, status)""",
    """CREATE TABLE cltune_best (id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL
        REFERENCES cltune_devices(id), op VARCHAR(16) NOT NULL, dtype VARCHAR(16) NOT NULL,
        bucket INTEGER NOT NULL, result_id INTEGER NOT NULL REFERENCES cltune_results(id),
        updated_at TIMESTAMP,
        CONSTRAINT uq_cltune_best_key UNIQUE (device_id, op, dtype, bucket))""",
)


def _v2(conn: Connection) -> None:
    """v2: results remember when `cltune verify` last passed them, and staleness."""
    conn.execute(text("ALTER TABLE cltune_results ADD COLUMN verified_at TIMESTAMP"))
    conn.execute(text("ALTER TABLE cltune_results ADD COLUMN stale INTEGER DEFAULT 0 NOT NULL"))


#: v3 as released (frozen: the models may change later; this DDL may not).
V3_DDL = (
    """CREATE TABLE cltune_vendor_tally (vendor VARCHAR(64) NOT NULL, type VARCHAR(16) NOT NULL,
        op VARCHAR(16) NOT NULL, dtype VARCHAR(16) NOT NULL, config_json TEXT NOT NULL,
        n_best INTEGER NOT NULL, n_failed INTEGER NOT NULL,
        PRIMARY KEY (vendor, type, op, dtype, config_json))""",
    """CREATE INDEX ix_cltune_vendor_tally_top ON cltune_vendor_tally
        (vendor, type, op, dtype, n_failed, n_best DESC, config_json)""",
    """CREATE INDEX ix_cltune_best_result ON cltune_best (result_id)""",
)


#: the v3 tally backfill as released (frozen: tally.py now counts the v4 tables)
V3_BACKFILL = """
INSERT INTO cltune_vendor_tally (vendor, type, op, dtype, config_json, n_best, n_failed)
SELECT vendor, type, op, dtype, config_json, SUM(nb), SUM(nf) FROM (
    SELECT d.vendor AS vendor, d.type AS type, r.op AS op, r.dtype AS dtype,
           r.config_json AS config_json, 1 AS nb, 0 AS nf
      FROM cltune_best b JOIN cltune_devices d ON d.id = b.device_id
      JOIN cltune_results r ON r.id = b.result_id WHERE r.status = 'ok'
    UNION ALL
    SELECT d.vendor, d.type, r.op, r.dtype, r.config_json, 0, 1
      FROM cltune_results r JOIN cltune_devices d ON d.id = r.device_id
     WHERE r.status = 'failed'
) AS t GROUP BY vendor, type, op, dtype, config_json"""


def _v3(conn: Connection) -> None:
    """v3: the vendor tally (tally.py), filled from the bests and results already stored, so
    that `vendor-default` reads one summary row instead of counting every best of a vendor."""
    for stmt in V3_DDL:
        conn.execute(text(stmt))
    conn.execute(text(V3_BACKFILL))


#: v4 as released (frozen). `{id}` is the dialect's auto-increment primary key type.
V4_DDL = (
    """CREATE TABLE cltune_results (id {id} PRIMARY KEY, device_id INTEGER NOT NULL
        REFERENCES cltune_devices(id), family VARCHAR(32) NOT NULL, variant VARCHAR(64) NOT NULL,
        size_class VARCHAR(64) NOT NULL, config_key VARCHAR(32) NOT NULL,
        config_json TEXT NOT NULL, status VARCHAR(16) NOT NULL, reason TEXT, median_s FLOAT,
        gbps FLOAT, max_rel_error FLOAT, n_measured INTEGER NOT NULL,
        cltune_version VARCHAR(32) NOT NULL, source_hash VARCHAR(32) NOT NULL,
        created_at TIMESTAMP, updated_at TIMESTAMP, verified_at TIMESTAMP,
        stale INTEGER DEFAULT 0 NOT NULL,
        CONSTRAINT uq_cltune_results_key UNIQUE (device_id, family, variant, size_class,
                                                 config_key))""",
    """CREATE INDEX ix_cltune_results_lookup ON cltune_results
        (device_id, family, variant, status)""",
    """CREATE TABLE cltune_best (id {id} PRIMARY KEY, device_id INTEGER NOT NULL
        REFERENCES cltune_devices(id), family VARCHAR(32) NOT NULL, variant VARCHAR(64) NOT NULL,
        size_class VARCHAR(64) NOT NULL, result_id INTEGER NOT NULL
        REFERENCES cltune_results(id), updated_at TIMESTAMP,
        CONSTRAINT uq_cltune_best_key UNIQUE (device_id, family, variant, size_class))""",
    """CREATE INDEX ix_cltune_best_result ON cltune_best (result_id)""",
    """CREATE TABLE cltune_vendor_tally (vendor VARCHAR(64) NOT NULL, type VARCHAR(16) NOT NULL,
        family VARCHAR(32) NOT NULL, variant VARCHAR(64) NOT NULL, config_json TEXT NOT NULL,
        n_best INTEGER NOT NULL, n_failed INTEGER NOT NULL,
        PRIMARY KEY (vendor, type, family, variant, config_json))""",
    """CREATE INDEX ix_cltune_vendor_tally_top ON cltune_vendor_tally
        (vendor, type, family, variant, n_failed, n_best DESC, config_json)""",
)
_V4_COPY = (
    """INSERT INTO cltune_results (id, device_id, family, variant, size_class, config_key,
        config_json, status, reason, median_s, gbps, max_rel_error, n_measured, cltune_version,
        source_hash, created_at, updated_at, verified_at, stale)
       SELECT id, device_id, 'reduce', op || '/' || dtype, '2^' || CAST(bucket AS VARCHAR),
        config_key, config_json, status, reason, median_s, gbps, max_rel_error, n_measured,
        cltune_version, source_hash, created_at, updated_at, verified_at, stale
       FROM cltune_results_v3""",
    """INSERT INTO cltune_best (id, device_id, family, variant, size_class, result_id,
        updated_at)
       SELECT id, device_id, 'reduce', op || '/' || dtype, '2^' || CAST(bucket AS VARCHAR),
        result_id, updated_at FROM cltune_best_v3""",
)


def _v4(conn: Connection) -> None:
    """v4: results, bests and the tally are keyed by kernel family, variant and size class, so
    that families other than the 1-D reduction share the database. Every v3 row is kept with
    its id: family `reduce`, variant `op/dtype`, size class `2^bucket`; the tally is counted
    again from the copied rows."""
    pg = conn.dialect.name == "postgresql"
    conn.execute(text("DROP TABLE cltune_vendor_tally"))
    for t in ("cltune_best", "cltune_results"):
        conn.execute(text(f"ALTER TABLE {t} RENAME TO {t}_v3"))
    # names the new tables reuse (SQLite: indexes; PostgreSQL: also unique and key indexes)
    for ix in ("ix_cltune_results_lookup", "ix_cltune_best_result"):
        conn.execute(text(f"DROP INDEX {ix}"))
    if pg:
        for t, uq in (("cltune_best", "uq_cltune_best_key"),
                      ("cltune_results", "uq_cltune_results_key")):
            conn.execute(text(f"ALTER TABLE {t}_v3 DROP CONSTRAINT {uq}"))
            conn.execute(text(f"ALTER INDEX {t}_pkey RENAME TO {t}_v3_pkey"))
    for stmt in V4_DDL:
        conn.execute(text(stmt.format(id="SERIAL" if pg else "INTEGER")))
    for stmt in _V4_COPY:
        conn.execute(text(stmt))
    conn.execute(text("DROP TABLE cltune_best_v3"))
    conn.execute(text("DROP TABLE cltune_results_v3"))
    if pg:
        for t in ("cltune_results", "cltune_best"):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{t}', 'id'), "
                              f"COALESCE((SELECT MAX(id) FROM {t}), 0) + 1, false)"))
    conn.execute(text(BACKFILL_SQL))


MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _v2, 3: _v3, 4: _v4}
LATEST = 4


_PG_LOCK_KEY = 0x636C74756E65  # "cltune": one advisory lock for schema changes


def schema_lock(conn: Connection) -> None:
    """Schema creation and migrations run one process at a time (SQLite: BEGIN IMMEDIATE
    already holds the write lock; PostgreSQL: a transaction-scoped advisory lock)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})


def current_version(conn: Connection) -> int | None:
    """The stored version; None for an empty database (no cltune tables)."""
    names = set(inspect(conn).get_table_names())
    if SchemaVersion.__tablename__ not in names:
        if any(n.startswith("cltune_") for n in names):
            raise SchemaError("database has cltune tables but no schema version; it is damaged")
        return None
    row = conn.execute(text("SELECT version FROM cltune_schema_version")).first()
    if row is None:
        raise SchemaError("database schema version row is missing; the database is damaged")
    return int(row[0])


def check_readable(conn: Connection) -> int:
    v = current_version(conn)
    if v is None:
        raise SchemaError("no cltune tables in this database (nothing tuned yet)")
    if v > LATEST:
        raise SchemaError(
            f"database schema v{v} is newer than this cltune understands (v{LATEST}); "
            "upgrade cltune (pip install . in a newer checkout)"
        )
    if v < LATEST:
        raise SchemaError(
            f"database schema v{v} is older than this cltune's v{LATEST}; "
            "run `cltune migrate` (any writing command also migrates)"
        )
    return v


def ensure_schema(engine: Engine) -> int:
    """Create or migrate the schema to LATEST; returns the version now in place."""
    with engine.begin() as conn:
        schema_lock(conn)
        v = current_version(conn)
        if v is None:
            Base.metadata.create_all(conn)
            conn.execute(text("INSERT INTO cltune_schema_version (id, version) VALUES (1, :v)"),
                         {"v": LATEST})
            return LATEST
    if v > LATEST:
        with engine.connect() as conn:
            check_readable(conn)
    while v < LATEST:
        step = v + 1
        with engine.begin() as conn:  # the migration and its version bump commit together
            schema_lock(conn)
            if current_version(conn) != v:  # another process migrated meanwhile
                v = current_version(conn) or LATEST
                continue
            MIGRATIONS[step](conn)
            conn.execute(text("UPDATE cltune_schema_version SET version = :v"), {"v": step})
        v = step
    return v
