"""Wait lists: which events of an input's and a result's `events` a launch must wait for."""

from __future__ import annotations

import pyopencl as cl

_COMPLETE = cl.command_execution_status.COMPLETE


def pending(*lists: list, ours: cl.Event | None = None,
            in_order: cl.CommandQueue | None = None) -> list[cl.Event] | None:
    """The events of these lists (an input's, a result's `events`) that a launch must wait for:
    completed ones are removed from the lists, as pyopencl's `Array.finish()` does (each event
    in a wait list costs an enqueue ~0.1 us, and arrays keep their upload's event), and `ours`
    (enqueued before on the same in-order queue) is skipped, as is every event of `in_order`
    (an in-order queue the launch goes to: it runs after them anyway, and NVIDIA's driver
    pays a host round trip, ~40 us, for each event a kernel waits on)."""
    waits = []
    skip = in_order.int_ptr if in_order is not None else None
    for evs in lists:
        for e in list(evs):
            if e is ours:
                continue
            if e.command_execution_status == _COMPLETE:
                try:
                    evs.remove(e)
                except ValueError:  # another thread removed it
                    pass
                continue
            # only then the event's queue: pyopencl wraps it in a new CommandQueue object, whose
            # release is an implicit flush (clReleaseCommandQueue); asked first of an input's
            # completed upload event call after call, axis sums on the H200 ran 8-11 us a call
            # slower end to end (a11f8df against dbd88da, docs/logs/benchmarks-*.md)
            if skip is not None:
                q = e.command_queue  # None for a user event
                if q is not None and q.int_ptr == skip:
                    continue
            waits.append(e)
    return waits or None


def waits_on(queue: cl.CommandQueue, *lists: list) -> list[cl.Event] | None:
    """`pending` for a launch on `queue`: the events of these lists (inputs' `events`) that are
    neither complete nor on `queue` when it runs in order (None for a user event's or
    another queue's are kept). Pass this, never an array's raw `events`: NVIDIA's driver pays a
    host round trip for each event a launch waits on, completed or not (see `pending`). The
    histograms, top-k and the sorts passed their inputs' raw events until 2026-12-06 (a
    histogram of 2^20 floats on the H100 took 59.5 us a call in its counting launches, whose
    kernels take 18 — not measured after the change)."""
    return pending(*(lst for lst in lists if lst), in_order=in_order(queue))


def in_order(queue: cl.CommandQueue) -> cl.CommandQueue | None:
    """The queue when it runs its commands in order (pending's `in_order`), else None."""
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    return None if queue.properties & ooo else queue
