"""One registry of the caches that belong to OpenCL contexts: `clear_caches()` clears them all.

Every cache of built programs, engines or scratch registers its clearing function here when
its module is imported (pyopencl's `first_arg_dependent_memoize` + `clear_first_arg_caches`),
so clearing never misses a family, and a cache whose module was never imported is empty.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

import pyopencl as cl

V = TypeVar("V")

_clearers: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> Callable[[], None]:
    """Have `clear_caches()` call `clear`; returns it (usable as a decorator)."""
    _clearers.append(clear)
    return clear


def clear_caches() -> None:
    """Forget every cached build, engine, database answer and device context (of every
    family); objects in use keep working, new ones start afresh."""
    for clear in list(_clearers):
        clear()


class ContextCache(Generic[V]):
    """Values per (context, key): an entry lives as long as its Context object does, then its
    programs, kernels and buffers are released. Thread-safe; a value is made outside the lock
    (a build takes long) and the first one stored wins."""

    #: every ContextCache made (for `clear_caches()` and its test)
    instances: ClassVar[weakref.WeakSet[ContextCache]] = weakref.WeakSet()

    def __init__(self) -> None:
        self._by_ctx: weakref.WeakKeyDictionary[cl.Context, dict[object, V]] = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        register(self.clear)
        ContextCache.instances.add(self)

    def get(self, ctx: cl.Context, key: object, make: Callable[[], V]) -> V:
        with self._lock:
            hit = self._by_ctx.get(ctx, {}).get(key)
        if hit is not None:
            return hit
        value = make()
        with self._lock:
            return self._by_ctx.setdefault(ctx, {}).setdefault(key, value)

    def clear(self) -> None:
        with self._lock:
            self._by_ctx.clear()

    def contexts(self) -> list[cl.Context]:
        with self._lock:
            return list(self._by_ctx)
