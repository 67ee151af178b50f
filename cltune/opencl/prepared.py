"""The prepared calls of every family, in one kind of cache (`PreparedCalls`; issue 39).

A family's first call of a key makes a *prepared call*: its kernel(s) with their constant
arguments set (an `ArgSetter` per kernel, opencl.kernel_args), the launch sizes, the result's
template (`ResultFactory`, opencl.scalars) and the queue's scratch. The key is what decides
all of that: (queue, size) for a whole-array call; (queue, shape, strides, offset, axis,
keepdims) along axes; (shape, axis, exclusive) for a scanner bound to its queue. A later call
of the key is a look-up here, then only what can differ between arrays of one key:

- the input is checked by identity where it can be (dtype object, the queue's own Context
  object, the flags pyopencl cached), by value where it must (offset in whole elements);
- the input's and output's buffers are set on every call and never kept (an application's
  buffer freed and handed out again by a pool is a new argument like any other), the
  prepared call's own scratch is set only when the scratch has grown;
- the result is a fresh array from the template, or `out=` when it has the call's dtype,
  shape, layout and context (else the long path, which explains the error);
- the launch waits for the input's (and `out`'s) pending events, but not for the launch the
  call enqueued last on the same in-order queue (ordered anyway: NVIDIA's driver pays a host
  round trip per event in a wait list); a call with `wait_for=` takes the long path;
- launches of one kernel object are serialised (the arguments are shared state).

tests/test_warm_contract.py checks that contract on every family's public call (new data,
a freed and re-allocated buffer, other offsets, `out=` reused, `wait_for=` with a user event,
two queues of one context, a cleared cache, threads on one key); tests/test_prepared.py the
cache itself.

`PreparedCalls` is a mapping bounded by its size (the least recently used entry goes first:
an application cycling through more shapes than fit keeps its most used ones), safe to read
from any thread without a lock (a look-up is one C call of OrderedDict), and emptied by
`cltune.clear_caches()` like every other cache of the package.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from cltune.opencl import caches

#: what a family keeps unless it says otherwise (shapes an application uses over and over)
DEFAULT_SIZE = 64


class PreparedCalls(OrderedDict):
    """Prepared calls (or anything a warm path keeps per key), at most `size` of them, the
    least recently used dropped first (`on_drop(value)` is told). Hot paths read it as
    `c.get(key)` and mark a hit with `c.touch(key)` (or both at once with `hit`); entries are
    added with `keep`."""

    #: every cache made (cleared together by `cltune.clear_caches()`)
    instances: ClassVar[weakref.WeakValueDictionary[int, PreparedCalls]] = \
        weakref.WeakValueDictionary()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, size: int = DEFAULT_SIZE,
                 on_drop: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        if size < 1:
            raise ValueError("a prepared-call cache keeps at least one entry")
        self.size, self.on_drop = size, on_drop
        PreparedCalls.instances[id(self)] = self

    def __reduce__(self) -> Any:  # pragma: no cover - never pickled; OrderedDict's needs args
        raise TypeError("prepared calls hold OpenCL objects and are not pickled")

    def touch(self, key: Any) -> None:
        """Mark `key` as just used (a no-op if another thread dropped it meanwhile)."""
        try:
            self.move_to_end(key)
        except KeyError:
            pass

    def hit(self, key: Any) -> Any:
        """The entry of `key` (marked as used), or None."""
        v = self.get(key)
        if v is not None:
            try:
                self.move_to_end(key)
            except KeyError:
                pass
        return v

    def keep(self, key: Any, value: Any) -> Any:
        """Store value under key (the newest entry), dropping the least recently used past the
        size; returns value."""
        dropped = []
        with PreparedCalls._lock:
            old = self.get(key)
            self[key] = value
            self.move_to_end(key)
            if old is not None and old is not value:
                dropped.append(old)
            while len(self) > self.size:
                dropped.append(self.popitem(last=False)[1])
        if self.on_drop is not None:
            for v in dropped:
                self.on_drop(v)
        return value

    def clear(self) -> None:
        with PreparedCalls._lock:
            values = list(self.values()) if self.on_drop is not None else ()
            super().clear()
        for v in values:
            self.on_drop(v)


@caches.register
def clear_all() -> None:
    """Empty every prepared-call cache (part of `cltune.clear_caches()`)."""
    for c in list(PreparedCalls.instances.values()):
        c.clear()
