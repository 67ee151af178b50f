"""Where cltune keeps what it learns about drivers on this machine (never user data): the
device-health verdicts, the vetting verdicts and the ICD folder. `$CLTUNE_CACHE_DIR`, else
`platformdirs.user_cache_dir("cltune")`."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("CLTUNE_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir  # lazy: import cltune stays cheap

    return Path(user_cache_dir("cltune", appauthor=False))
