"""Stored results as plain data (no SQLAlchemy), shared by the store, lookups and imports.

Results are keyed by (device, family, variant, size class, config). A kernel family names its
variants and size classes (the 1-D reduction: family `reduce`, variant `op/dtype`, size class
`2^k`); the database only compares them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResultRow:
    """A stored result, detached from the session."""

    id: int
    fingerprint: str
    device_name: str
    family: str
    variant: str
    size_class: str
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


@dataclass(frozen=True)
class Measurement:
    """What `Store.record` writes: one evaluated config (validated and timed, or failed)."""

    family: str
    variant: str
    size_class: str
    config: dict
    config_key: str
    status: str  # ok | failed
    n_measured: int
    cltune_version: str
    source_hash: str
    reason: str = ""
    median_s: float | None = None
    gbps: float | None = None
    max_rel_error: float | None = None

    def __post_init__(self) -> None:
        if self.status not in ("ok", "failed"):
            raise ValueError(f"status must be ok or failed, not {self.status!r}")
        if self.status == "ok" and self.median_s is None:
            raise ValueError("an ok measurement needs its median time")
