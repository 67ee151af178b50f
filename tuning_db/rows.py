"""A stored result as plain data (no SQLAlchemy), shared by the store, lookups and imports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResultRow:
    """A stored result, detached from the session."""

    id: int
    fingerprint: str
    device_name: str
    op: str
    dtype: str
    bucket: int
    config: dict
    status: str
    reason: str
    median_s: float | None
    gbps: float | None
    max_rel_error: float | None
    driver: str
    cltune_version: str
    updated_at: str
    stale: bool
