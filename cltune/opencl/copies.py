"""A device-to-device buffer copy without pyopencl's generic `enqueue_copy` dispatch (its
argument sorting costs ~1-2 us a call on a CPU host; the warm calls that return a copy, such
as a histogram's edges, make one every call)."""

from __future__ import annotations

from typing import Any

import pyopencl as cl

try:  # pyopencl's own entry point behind enqueue_copy for buffer to buffer
    from pyopencl._cl import _enqueue_copy_buffer as _copy
except ImportError:  # pragma: no cover - another pyopencl layout: the public call
    _copy = None


def copy_buffer(queue: cl.CommandQueue, src: cl.Buffer, dst: cl.Buffer, nbytes: int,
                src_offset: int = 0, dst_offset: int = 0,
                wait_for: Any = None) -> cl.Event:
    """Enqueue dst[dst_offset:+nbytes] = src[src_offset:+nbytes] on `queue`; its event."""
    if _copy is not None:
        return _copy(queue, src, dst, nbytes, src_offset, dst_offset, wait_for)
    return cl.enqueue_copy(queue, dst, src, byte_count=nbytes, src_offset=src_offset,
                           dst_offset=dst_offset, wait_for=wait_for)
