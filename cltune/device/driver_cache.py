"""What cltune learns about drivers on this machine, kept on disk (never user data): the
device-health verdicts, the vetting verdicts and the ICD folder, in `$CLTUNE_CACHE_DIR`, else
`platformdirs.user_cache_dir("cltune")`.

A verdict file is JSON `{"<version key>": N, "verdicts": {key: entry}}`; a file of another
version, or one that does not parse, reads as empty (the verdicts are made again), and an
entry that does not parse is dropped. Writes are atomic (a temp file renamed over it); a cache
that cannot be written only costs the work again.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
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
