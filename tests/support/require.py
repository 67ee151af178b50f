"""`need`: skip a test whose system component is missing, or fail it under CI.

`CLTUNE_REQUIRE_ALL=1` (set by .ci/run) turns the skip into a failure, so CI always runs
everything.
"""

from __future__ import annotations

import os

import pytest


def need(ok: bool, reason: str) -> None:
    """Skip (or fail under CLTUNE_REQUIRE_ALL=1) when a system component is missing."""
    if ok:
        return
    if os.environ.get("CLTUNE_REQUIRE_ALL") == "1":
        pytest.fail(f"required component missing: {reason}")
    pytest.skip(reason)
