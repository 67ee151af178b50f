"""Per-queue scratch of a two-stage reduction: the partials buffer (grown on demand by its
launcher), the zeroed ticket of the single-pass finish, and the last launch that used them."""

from __future__ import annotations

import numpy as np
import pyopencl as cl


class Scratch:
    """Per-queue scratch. On an out-of-order queue a launch waits for the previous one that
    used this scratch (`last`), so partials are never overwritten while still being read."""

    __slots__ = ("partials", "capacity", "ticket", "last", "in_order")

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.partials: cl.Buffer | None = None
        self.capacity = 0
        # zeroed at creation (no fill command: one enqueue less, and Oclgrind 21.10 mistracks
        # memory that a fill once covered)
        self.ticket = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                hostbuf=np.zeros(1, np.uint32))
        self.last: cl.Event | None = None
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.in_order = not (queue.properties & ooo)
