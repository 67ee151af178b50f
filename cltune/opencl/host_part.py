"""The host part of a call: its time with the driver's ND-range enqueue stubbed out (the Python
around the launches, cltune's own cost per call), and the bare-enqueue floor beside it (issue
39: `cltune bench` and scripts/call_floor.py report both, so a regression in the Python of a
warm call shows as a number).

The stub replaces pyopencl's ND-range entry points (the module's and the extension's, which
generated kernel invokers call) with one that counts the call and answers an already completed
marker event. Stubbed calls leave host-side state ahead of the device: a chained scan's ticket
base moves on while no kernel takes a ticket, so a later real call of the same scanner would
wait on groups that never ran. Measure host parts last, after every real call, and call
`cltune.clear_caches()` after them (`cltune bench` does): never a real call of the same
objects afterwards.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyopencl as cl
import pyopencl._cl as _cl

_TRIVIAL = "__kernel void clt_trivial(__global float *o) { o[get_global_id(0)] = 1.0f; }"
_stub_lock = threading.Lock()


@dataclass(frozen=True)
class HostPart:
    """µs per call with the enqueue stubbed, and the enqueues one call makes."""

    us: float
    launches: float


@contextlib.contextmanager
def stubbed_enqueue(queue: cl.CommandQueue, count: list[int]) -> Iterator[None]:
    """Within: every ND-range enqueue of this process answers a completed marker of `queue`
    at once and adds 1 to count[0]. One stub at a time; the entry points come back on exit,
    whatever happened inside."""
    done = cl.enqueue_marker(queue)
    queue.finish()

    def stub(*args: Any, **kw: Any) -> cl.Event:
        count[0] += 1
        return done

    with _stub_lock:
        saved = (cl.enqueue_nd_range_kernel, _cl.enqueue_nd_range_kernel)
        cl.enqueue_nd_range_kernel = stub
        _cl.enqueue_nd_range_kernel = stub
        try:
            yield
        finally:
            cl.enqueue_nd_range_kernel, _cl.enqueue_nd_range_kernel = saved


def _blocks(call: Callable[[], object], calls: int, blocks: int) -> float:
    """Median over `blocks` of the seconds per call of `calls` calls back to back."""
    out = []
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(calls):
            call()
        out.append((time.perf_counter() - t) / calls)
    return statistics.median(out)


def measure(call: Callable[[], object], queue: cl.CommandQueue, calls: int = 200,
            blocks: int = 7) -> HostPart:
    """The host part of `call` (warm: called before, for real). Leaves the queue idle."""
    queue.finish()
    count = [0]
    with stubbed_enqueue(queue, count):
        call()  # a warm call may still arm something on its first stubbed run
        count[0] = 0
        us = _blocks(call, calls, blocks) * 1e6
    return HostPart(us, count[0] / (calls * blocks))


def enqueue_floor(queue: cl.CommandQueue, calls: int = 200, blocks: int = 7) -> HostPart:
    """A bare `cl.enqueue_nd_range_kernel` of a one-work-item kernel, its argument set once,
    `calls` back to back then one finish: µs per call, the floor any call from Python pays on
    this device (launches 1)."""
    k = cl.Program(queue.context, _TRIVIAL).build().clt_trivial
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64)
    k.set_args(buf)

    def bare() -> None:
        cl.enqueue_nd_range_kernel(queue, k, (1,), (1,))

    bare()
    queue.finish()
    out = []
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(calls):
            bare()
        queue.finish()
        out.append((time.perf_counter() - t) / calls)
    return HostPart(statistics.median(out) * 1e6, 1.0)
