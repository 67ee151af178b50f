"""Errors of the tuning database, each with a message a user can act on."""


class DatabaseError(RuntimeError):
    """The database cannot be used (unreadable, locked, corrupt); the message says which."""


class SchemaError(DatabaseError):
    """The schema version is unknown, newer or older than this cltune; the message names the
    fix."""
