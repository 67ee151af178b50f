"""Where the databases are, without importing SQLAlchemy (get_reducer's path when there is no
database file at all stays this cheap)."""

from __future__ import annotations

import os
import re
from pathlib import Path


def default_dir() -> Path:
    from platformdirs import (
        user_data_dir,  # lazy: platformdirs costs import time; paths are asked for rarely
    )

    return Path(user_data_dir("cltune", appauthor=False))


def default_url() -> str:
    """`CLTUNE_DB` if set, else a SQLite file in the user data dir."""
    env = os.environ.get("CLTUNE_DB", "").strip()
    if env:
        return env
    return f"sqlite:///{default_dir() / 'tuning.db'}"


def default_storage_url(db: str | None = None) -> str:
    """Optuna's study storage: `CLTUNE_STORAGE` if set, else `studies.db` beside the results
    database (`db`, else `CLTUNE_DB`, else the user data dir's `tuning.db`) where that is a
    SQLite file, else the user data dir's `studies.db`."""
    env = os.environ.get("CLTUNE_STORAGE", "").strip()
    if env:
        return env
    path = sqlite_file(db or default_url())
    if path is not None:
        return f"sqlite:///{path.parent / 'studies.db'}"
    return f"sqlite:///{default_dir() / 'studies.db'}"


def normalise_url(url: str) -> str:
    """Accept a plain file path too; return a SQLAlchemy URL."""
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


_SQLITE_FILE = re.compile(r"^sqlite(\+\w+)?:///(?P<path>[^?]*)")


def sqlite_file(url: str) -> Path | None:
    """The file of a plain SQLite URL (or path); None for other databases, in-memory ones and
    `file:` URIs (those are left to SQLAlchemy)."""
    m = _SQLITE_FILE.match(normalise_url(url))
    if not m or m.group("path") in ("", ":memory:") or m.group("path").startswith("file:"):
        return None
    return Path(m.group("path"))
