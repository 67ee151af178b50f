"""cltune's own Optuna studies are quiet in the application's process.

Optuna prints a line per trial (`[I ...] Trial 3 finished with value ...`) and per study to
stderr through its own handler, at INFO, from the moment it is imported. cltune runs studies
inside applications (`knl.tune(...)`, `tune="first-use"` in a background thread, the
statistics' tuning): those lines are not the application's to read. While a thread runs one of
cltune's studies, Optuna's records below WARNING that it emits are kept off Optuna's handlers
and passed to the logger `cltune.tuning.optuna` at DEBUG instead, where the application's own
logging configuration decides (`logging.getLogger("cltune").setLevel(logging.DEBUG)` shows
them). Nothing else changes: Optuna's studies of the application itself, other threads and
Optuna's warnings print as before; the command line shows progress with rich.

    >>> with quiet_studies():
    ...     study = optuna.create_study()   # no "A new study created" line on stderr
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: where Optuna's lines of cltune's studies go, at DEBUG
LOG = logging.getLogger("cltune.tuning.optuna")

_lock = threading.Lock()
_threads: dict[int, int] = {}  # thread id -> nesting depth of quiet_studies()
_passing = threading.local()  # set while a record is handed on (a handler on both loggers)


class _OwnStudies(logging.Filter):
    """On Optuna's handlers: drops (and re-logs at DEBUG under cltune) what a thread running
    a cltune study emits below WARNING."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or record.thread not in _threads:
            return True
        if getattr(_passing, "on", False):
            return True  # our own DEBUG record, reaching a handler that also sits on Optuna's
        if getattr(record, "cltune_quiet", False):
            return False  # handed on already, by this filter on another of Optuna's handlers
        record.cltune_quiet = True
        if LOG.isEnabledFor(logging.DEBUG):
            _passing.on = True
            try:
                LOG.debug("%s", record.getMessage())
            finally:
                _passing.on = False
        return False


_FILTER = _OwnStudies()


def _install() -> None:
    """The filter on every handler of Optuna's root logger (its default stderr handler, and
    any an application added there); handlers added later get it at the next study."""
    for h in logging.getLogger("optuna").handlers:
        if _FILTER not in h.filters:
            h.addFilter(_FILTER)


@contextmanager
def quiet_studies() -> Iterator[None]:
    """Within the block, Optuna's sub-WARNING records of this thread go to cltune's logger at
    DEBUG instead of Optuna's handlers (nests; other threads are untouched)."""
    tid = threading.get_ident()
    with _lock:
        _install()
        _threads[tid] = _threads.get(tid, 0) + 1
    try:
        yield
    finally:
        with _lock:
            left = _threads[tid] - 1
            if left:
                _threads[tid] = left
            else:
                del _threads[tid]
