"""Opening a tuning database: URL resolution, SQLite pragmas, short atomic transactions."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from .errors import DatabaseError
from .paths import (  # noqa: F401 - re-exported: they lived here first
    default_dir,
    default_storage_url,
    default_url,
    normalise_url,
)

BUSY_TIMEOUT_MS = 30_000


def sqlite_path(url: str) -> Path | None:
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


def _wal(cur) -> None:  # noqa: ANN001 - a DB-API cursor
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the write lock: on a
    fresh file the switch needs an exclusive lock, and SQLite answers a connection that must
    upgrade its shared lock while another holds the reserved one with an immediate 'database
    is locked' (deadlock avoidance: the busy timeout does not apply). Seen in CI when four
    processes opened a new database at once, one of them creating the schema."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(0.1, pause * 2)


def make_engine(url: str, *, readonly: bool = False, immutable: bool = False) -> Engine:
    """An engine with WAL, a busy timeout and `BEGIN IMMEDIATE` writes on SQLite."""
    url = normalise_url(url)
    try:
        u = make_url(url)
    except ArgumentError as e:
        raise DatabaseError(f"not a database URL: {url!r} ({e})") from None
    path = sqlite_path(url)
    if path is not None:
        if readonly:
            if not path.exists():
                raise DatabaseError(f"database file {path} does not exist")
            # immutable: for a WAL file in a read-only directory, where SQLite cannot create
            # the -shm it needs to read normally (only tried after mode=ro failed)
            url = f"sqlite:///file:{path}?mode=ro{'&immutable=1' if immutable else ''}&uri=true"
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise DatabaseError(f"cannot create {path.parent}: {e.strerror}") from None
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000,
                                                  "isolation_level": None})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _rec):  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not readonly:
                _wal(cur)
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):  # noqa: ANN001
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

        return engine
    try:
        return create_engine(u, pool_pre_ping=True)
    except Exception as e:  # noqa: BLE001 - missing driver etc.
        raise DatabaseError(f"cannot open {u.render_as_string(hide_password=True)}: {e}") from None
