"""cltune's tuning database: SQLAlchemy models, store, lookup with fallback chain, migrations."""

from .engine import default_storage_url, default_url
from .errors import DatabaseError, SchemaError
from .store import ResultRow, Store

__all__ = ["DatabaseError", "ResultRow", "SchemaError", "Store", "default_storage_url",
           "default_url"]
