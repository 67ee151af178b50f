"""cltune's tuning database: SQLAlchemy models, store, lookup with fallback chain, migrations.

`Store` and `ResultRow` are imported on first use (PEP 562), so that importing this package --
and answering from shipped results when there is no database file -- does not load SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DatabaseError, SchemaError
from .paths import default_storage_url, default_url

if TYPE_CHECKING:
    from .rows import ResultRow  # lazy: as Store
    from .store import Store  # lazy: SQLAlchemy, not needed to answer from shipped results

__all__ = ["DatabaseError", "ResultRow", "SchemaError", "Store", "default_storage_url",
           "default_url"]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from .store import Store  # lazy: SQLAlchemy, not needed to answer from shipped results

        return Store
    if name == "ResultRow":
        from .rows import ResultRow  # lazy: as Store

        return ResultRow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
