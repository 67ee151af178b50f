"""The fallback levels that need no database: results shipped with cltune, and `builtin`.

No SQLAlchemy here: `get_reducer` on a machine without a tuning database (the usual case for a
model cltune ships results for) answers from this module alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from .rows import ResultRow

LEVELS = ("exact", "driver-changed", "same-device", "shipped", "vendor-default", "builtin")


@dataclass(frozen=True)
class DeviceKey:
    """The parts of a device a lookup matches on (see DeviceInfo)."""

    fingerprint: str
    hardware_key: str
    model: str
    vendor: str
    type: str
    driver: str


@dataclass(frozen=True)
class Answer:
    level: str
    why: str
    rows: tuple[ResultRow, ...] = field(default=())


BUILTIN = "no tuned results for this device: config derived from its limits"


@lru_cache(maxsize=1)
def _shipped_files() -> tuple[tuple[str, tuple], ...]:
    """(file name, validated records) of every tuning_db/shipped/*.json, read and validated
    once per process: they are package data and do not change while it runs."""
    from .exchange import parse_export  # validates every field

    base = resources.files("cltune.tuning_db").joinpath("shipped")
    if not base.is_dir():
        return ()
    return tuple((f.name, tuple(parse_export(json.loads(f.read_text()))))
                 for f in sorted(base.iterdir(), key=lambda p: p.name)
                 if f.name.endswith(".json"))


def load_shipped(family: str, variant: str, key: DeviceKey) -> Answer | None:
    """Shipped results (tuning_db/shipped/*.json, the export format) for this model."""
    for name, doc in _shipped_files():
        rows = tuple(r for r in doc if r.family == family and r.variant == variant
                     and r.model == key.model and r.vendor == key.vendor)
        if rows:
            return Answer("shipped", f"results shipped with cltune for {key.model} ({name})",
                          tuple(r.as_row() for r in rows))
    return None


def lookup_without_db(key: DeviceKey, family: str, variant: str) -> Answer:
    """The chain when there is no database: `shipped`, else `builtin` (empty rows)."""
    return load_shipped(family, variant, key) or Answer("builtin", BUILTIN)
