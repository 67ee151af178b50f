"""What cltune learns about drivers on this machine, kept on disk (never user data): the
device-health verdicts, the vetting verdicts and the ICD folder, in `$CLTUNE_CACHE_DIR`, else
`platformdirs.user_cache_dir("cltune")`.

A verdict file is JSON `{"<version key>": N, "verdicts": {key: entry}}`; a file of another
version, or one that does not parse, reads as empty (the verdicts are made again), and an
entry that does not parse is dropped. Writes are atomic (a temp file renamed over it), so a
reader never sees a torn file; adding entries (`add_verdicts`) reads, merges and writes under
an exclusive lock on a sidecar file (`<name>.lock`, `fcntl.flock`), so processes that share
the folder (two applications, a worker and its parent, pytest-xdist workers) never drop each
other's entries. `exclusive` holds the same kind of lock around a piece of work that a second
process should wait for rather than repeat (a device's health probe). A cache that cannot be
written or locked only costs the work again.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def cache_dir() -> Path:
    env = os.environ.get("CLTUNE_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir  # lazy: import cltune stays cheap

    return Path(user_cache_dir("cltune", appauthor=False))


def read_verdicts(path: Path, version_key: str, version: int,
                  parse: Callable[[dict], T | None]) -> dict[str, T]:
    """The entries of `path` that `parse` accepts (None: dropped)."""
    try:
        doc = json.loads(path.read_text())
        entries = doc["verdicts"] if doc.get(version_key) == version else {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
    out: dict[str, T] = {}
    for key, v in entries.items() if isinstance(entries, dict) else ():
        got = parse(v) if isinstance(v, dict) else None
        if got is not None:
            out[key] = got
    return out


def write_verdicts(path: Path, version_key: str, version: int,
                   entries: dict[str, dict[str, Any]]) -> None:
    """Replace `path` with these entries, atomically; an OSError is swallowed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {version_key: version, "verdicts": dict(sorted(entries.items()))}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass


@contextmanager
def exclusive(lock_path: Path, wait_s: float = 60.0) -> Iterator[bool]:
    """Hold an exclusive inter-process lock on `lock_path` (created if missing) while inside;
    yields whether it is held. Where it cannot be taken (no `fcntl`, an unwritable folder) or
    another holder keeps it past `wait_s` (a process stopped while holding it), the caller
    goes on unlocked, as before locks: the lock only saves repeated work and lost entries,
    it never stops cltune."""
    try:
        import fcntl  # lazy: POSIX only; elsewhere the cache goes unlocked
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield False
        return
    try:
        held, end, pause = False, time.monotonic() + wait_s, 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    break
                time.sleep(pause)
                pause = min(0.05, pause * 2)
            except OSError:
                break
        yield held
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def lock_path(path: Path) -> Path:
    """The sidecar file whose lock guards `path`."""
    return path.with_name(path.name + ".lock")


def add_verdicts(path: Path, version_key: str, version: int, parse: Callable[[dict], T | None],
                 dump: Callable[[T], dict[str, Any]], new: dict[str, T],
                 keep: Callable[[str], bool] | None = None) -> dict[str, T]:
    """Merge `new` into the entries of `path` (read under the lock, so another process's
    entries written since are kept) and write them back atomically; returns the merged
    entries. `keep(key)`: entries it refuses are dropped when the file is written (verdicts
    no key of this code can ask for again). A failure to write is swallowed, as in
    `write_verdicts`."""
    with exclusive(lock_path(path)):
        stored = read_verdicts(path, version_key, version, parse)
        if all(k in stored and stored[k] == v for k, v in new.items()):
            return stored
        if keep is not None:
            stored = {k: v for k, v in stored.items() if keep(k)}
        stored.update(new)
        write_verdicts(path, version_key, version, {k: dump(v) for k, v in stored.items()})
        return stored
