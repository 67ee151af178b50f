"""The database's answer for what serves on a device, the one way every family asks at run
time: a lookup along the fallback chain (`lookup`) for one or more (family, variant) pairs,
that never raises for a missing, unreadable or foreign database.

One warning policy for every family: a database that cannot be used, or a lookup that fails,
is one `CltuneWarning` per database URL and reason per process (however many reducers or
kernels ask), and the levels without a database answer; a database file that does not exist
answers from the shipped results without loading SQLAlchemy (~0.3 s of a process's first
call), and is said only when the application (`db=`) or `CLTUNE_DB` named it (a typo would
lose its tuning silently otherwise).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from cltune.core.serving import CltuneWarning

from .errors import DatabaseError
from .paths import default_url, sqlite_file
from .shipped import Answer, DeviceKey, lookup_without_db

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def device_key(info: Any) -> DeviceKey:
    """The lookup key of a `DeviceInfo`."""
    return DeviceKey(info.fingerprint, info.hardware_key, info.model, info.vendor, info.type,
                     info.driver)


def warn_once(url: str, msg: str, stacklevel: int = 2) -> None:
    """`msg` as a CltuneWarning, once per (database, message kind) per process."""
    kind = msg.split("(", 1)[0]
    with _warned_lock:
        if (url, kind) in _warned:
            return
        _warned.add((url, kind))
    warnings.warn(msg, CltuneWarning, stacklevel=stacklevel + 1)


def answers(info: Any, db: str | None, queries: Sequence[tuple[str, str]],
            stacklevel: int = 2) -> list[Answer]:
    """The fallback chain's answer for each (family, variant) of `queries` on the device
    `info` describes, from the database `db` (None: `CLTUNE_DB` or the default file)."""
    key = device_key(info)
    url = db or default_url()
    path = sqlite_file(url)
    level = stacklevel + 1
    if path is not None and not path.exists():
        if db or os.environ.get("CLTUNE_DB", "").strip():
            warn_once(url, f"cltune: tuning database {path} does not exist (named by "
                      f"{'db=' if db else 'CLTUNE_DB'}); using the shipped or builtin configs",
                      level)
        return [lookup_without_db(key, f, v) for f, v in queries]
    from .lookup import lookup  # lazy: loads SQLAlchemy, only where a database file exists
    from .store import Store  # lazy: as above

    store = None
    try:
        store = Store.open(url, readonly=True)
    except DatabaseError as e:
        warn_once(url, f"cltune: tuning database unusable ({e}); using fallback configs", level)
    except Exception as e:  # noqa: BLE001 - a corrupt file must never crash an application
        warn_once(url, f"cltune: tuning database unreadable ({type(e).__name__}: {e}); "
                  "using fallback configs", level)
    try:
        out = []
        for family, variant in queries:
            try:
                out.append(lookup(store, key, family, variant))
            except Exception as e:  # noqa: BLE001
                warn_once(url, f"cltune: lookup failed ({type(e).__name__}: {e}); using the "
                          "levels without a database", level)
                out.append(lookup_without_db(key, family, variant))
        return out
    finally:
        if store is not None:
            store.close()


def answer(info: Any, db: str | None, family: str, variant: str, stacklevel: int = 2) -> Answer:
    """`answers` for one (family, variant)."""
    return answers(info, db, [(family, variant)], stacklevel + 1)[0]
