"""A memory pool per in-order queue, for the arrays cltune allocates per call (results,
uploads, compaction outputs).

Freeing a buffer is a device synchronisation on some drivers (NVIDIA's OpenCL releases device
memory like cuMemFree): an array dropped after every call then costs a round trip per call
(H200: pyopencl's copy_if ~0.5 ms at 2^20 where torch.nonzero takes 69 us). A pool keeps the
memory and hands it out again; on an in-order queue a reused block is only written by commands
queued after every earlier command that used it, so reuse is safe there. Out-of-order queues
get None (pyopencl's default allocator: fresh buffers).
"""

from __future__ import annotations

import pyopencl as cl
import pyopencl.tools as cltools

from cltune.opencl.caches import ContextCache

_pools: ContextCache[cltools.MemoryPool] = ContextCache()


def pool_for(queue: cl.CommandQueue) -> cltools.MemoryPool | None:
    """The pool of `queue` (an allocator for pyopencl arrays), None for out-of-order queues."""
    if queue.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
        return None
    return _pools.get(queue.context, ("pool", queue.int_ptr),
                      lambda: cltools.MemoryPool(cltools.ImmediateAllocator(queue)))
