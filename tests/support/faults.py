"""Injected driver faults for a test: workers started inside fail as a `CLTUNE_TEST_FAULT` rule
says (cltune/isolation/faults.py), with the vetting and health verdicts in a fresh cache."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cltune.device import health
from cltune.isolation import vetting
from cltune.isolation.worker import shutdown_workers
from cltune.opencl.caches import clear_caches


def fresh() -> None:
    """No worker, verdict or cache of this process left over."""
    shutdown_workers()
    vetting.forget()
    health.forget()
    clear_caches()


@contextmanager
def injected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rule: str) -> Iterator[Path]:
    """Inside: the rule holds for workers started from now on; yields the cache folder (where
    `vetted.json` goes). Before and after: nothing of this process's workers or caches kept."""
    monkeypatch.setenv("CLTUNE_TEST_FAULT", rule)
    monkeypatch.setenv("CLTUNE_CACHE_DIR", str(tmp_path / "cache"))
    fresh()
    try:
        yield tmp_path / "cache"
    finally:
        fresh()
