"""Wait lists: which events of an input's and a result's `events` a launch must wait for."""

from __future__ import annotations

import pyopencl as cl

_COMPLETE = cl.command_execution_status.COMPLETE


def pending(*lists: list, ours: cl.Event | None = None) -> list[cl.Event] | None:
    """The events of these lists (an input's, a result's `events`) that a launch must wait for:
    completed ones are removed from the lists, as pyopencl's `Array.finish()` does (each event
    in a wait list costs an enqueue ~0.1 us, and arrays keep their upload's event), and `ours`
    (enqueued before on the same in-order queue) is skipped."""
    waits = []
    for evs in lists:
        for e in list(evs):
            if e is ours:
                continue
            if e.command_execution_status == _COMPLETE:
                try:
                    evs.remove(e)
                except ValueError:  # another thread removed it
                    pass
            else:
                waits.append(e)
    return waits or None
