"""What crosses the pipe to the evaluation worker: pickles in which OpenCL objects of the
sending process become tokens that the worker resolves to its own.

A context becomes the worker's context, a command queue its queue, a device array its host
copy (uploaded again on the worker's queue). Everything else is pickled by value with
cloudpickle, so an application's `cltune.ReductionKernel` with a lambda `sample` or
`reference` reaches the worker as it is. Frames are length-prefixed.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from typing import Any

import cloudpickle
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

_LEN = struct.Struct("!Q")


class _Pickler(cloudpickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:  # noqa: ANN401 - pickle's protocol
        if isinstance(obj, cl.Context):
            return ("context",)
        if isinstance(obj, cl.CommandQueue):
            return ("queue",)
        if isinstance(obj, cla.Array):
            return ("array", np.ascontiguousarray(obj.get()), obj.shape,
                    "F" if obj.flags.f_contiguous and not obj.flags.c_contiguous else "C")
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, f: io.BytesIO, ctx: cl.Context | None,
                 queue: cl.CommandQueue | None) -> None:
        super().__init__(f)
        self.ctx, self.queue = ctx, queue

    def persistent_load(self, pid: Any) -> Any:  # noqa: ANN401
        kind = pid[0]
        if self.ctx is None:
            raise pickle.UnpicklingError(f"an OpenCL {kind} arrived where none is expected")
        if kind == "context":
            return self.ctx
        if kind == "queue":
            return self.queue
        if kind == "array":
            host, shape, order = pid[1], pid[2], pid[3]
            return cla.to_device(self.queue, np.asarray(host).reshape(shape, order=order))
        raise pickle.UnpicklingError(f"unknown token {kind!r}")


def dumps(obj: Any) -> bytes:  # noqa: ANN401
    f = io.BytesIO()
    _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return f.getvalue()


def loads(data: bytes, ctx: cl.Context | None = None,
          queue: cl.CommandQueue | None = None) -> Any:  # noqa: ANN401
    return _Unpickler(io.BytesIO(data), ctx, queue).load()


def send(fd: int, payload: bytes) -> None:
    """One frame: the length, then the bytes (all of them, however the pipe splits them)."""
    data = memoryview(_LEN.pack(len(payload)) + payload)
    while data:
        n = os.write(fd, data)
        data = data[n:]


def read_exact(fd: int, n: int) -> bytes | None:
    """n bytes from fd, or None at end of file."""
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def receive(fd: int) -> bytes | None:
    """One frame from fd, or None when the other side is gone."""
    head = read_exact(fd, _LEN.size)
    if head is None:
        return None
    return read_exact(fd, _LEN.unpack(head)[0])
