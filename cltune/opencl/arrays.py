"""An application's input as a device array of a reducer: a numpy array is uploaded, a
pyopencl Array is checked (its dtype, its context, contiguity); anything else is a TypeError
naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla


def _dtype_hint(name: str, got: np.dtype, want: np.dtype) -> str:
    return (f"{name} has dtype {got}, this reducer is for {want} (cast with .astype or use "
            f"get_reducer(..., dtype={got}))")


def device_array(a: Any, want: np.dtype, ctx: cl.Context, queue: cl.CommandQueue, name: str,
                 *, flat: bool = False) -> cla.Array:
    """`a` (a numpy array or a pyopencl Array of dtype `want` in `ctx`) on the device; a numpy
    array is uploaded (C-contiguous, flattened with `flat`)."""
    if type(a) is cla.Array and a.dtype is want and (a.context is ctx or a.context == ctx) and (
            a._flags or a.flags).forc:
        return a  # the hot path: checked by identity, as the checks below would pass it
    if isinstance(a, np.ndarray):
        if a.dtype != want:
            raise TypeError(_dtype_hint(name, a.dtype, want))
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            a = np.ascontiguousarray(a)
        return cla.to_device(queue, np.ascontiguousarray(a).reshape(-1) if flat else a)
    if not isinstance(a, cla.Array):
        raise TypeError(f"{name} must be a pyopencl.array.Array or numpy array, "
                        f"not {type(a).__name__}")
    if a.dtype != want:
        raise TypeError(_dtype_hint(name, a.dtype, want))
    if a.context.int_ptr != ctx.int_ptr:
        raise ValueError(f"{name} lives in another OpenCL context than this reducer")
    if a.size and not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError(f"{name} is not contiguous; reduce a contiguous copy (x.copy())")
    return a
