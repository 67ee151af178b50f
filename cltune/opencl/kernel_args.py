"""Kernel arguments by name (`KernelArgs`), and setting one scalar kernel argument fast.

`pyopencl.Kernel.set_arg(i, numpy_scalar)` costs ~5.3 us a call (pyopencl 2026.1, measured on
PoCL and Intel's runtime alike: the generic argument path), while the buffer-protocol setter
its generated invokers rely on, `Kernel._set_arg_buf`, takes ~0.05 us for the same bytes. A
hot path that changes an offset or a scalar on every call sets it here; the value must
already be a numpy scalar of the kernel parameter's type (its bytes are what the kernel gets).
"""

from __future__ import annotations

import struct
from math import copysign
from typing import Any

import numpy as np
import pyopencl as cl

_FAST = hasattr(cl.Kernel, "_set_arg_buf")


def set_scalar(k: cl.Kernel, index: int, value: np.generic) -> None:
    """k's argument `index` = value (a numpy scalar of the parameter's exact type)."""
    if _FAST:
        k._set_arg_buf(index, value)
    else:  # pragma: no cover - a pyopencl without the private setter
        k.set_arg(index, value)


_U32 = struct.Struct("=I").pack  # the host's byte order, as the device's (both little-endian)
#: for hot paths that inline set_u32: whether pyopencl has the private byte setter, and the
#: packing of a uint argument
FAST_SETTER, pack_u32 = _FAST, _U32


def set_u32(k: cl.Kernel, index: int, value: int) -> None:
    """k's `uint` argument `index` = value (0 <= value < 2**32) from a Python int: packed bytes
    (~0.16 us a call here) where making a numpy scalar first costs ~0.5 us more."""
    if _FAST:
        k._set_arg_buf(index, _U32(value))
    else:  # pragma: no cover - a pyopencl without the private setter
        k.set_arg(index, np.uint32(value))


#: the work-group size of one-work-item-an-element launches: NVIDIA's OpenCL spends ~4-6 us
#: more host time on a launch whose work-group size it must choose itself (`None`) than on
#: one that names it (scripts/experiments/enqueue_costs.py, H100: 9.5-11.0 against 5.2 us)
FLAT_WG = 64


def flat_grid(items: int, wg: int = FLAT_WG) -> tuple[tuple[int], tuple[int]]:
    """(global, local) sizes of a 1-D launch of at least `items` work-items (>= 1) in groups
    of `wg` (the kernel returns past its count), so that no driver picks the group size."""
    return (max(1, -(-items // wg)) * wg,), (wg,)


def changed(last: Any, value: Any) -> bool:
    """Whether a scalar argument set to `last` must be set again for `value`: they differ,
    or both are zeros of other signs (-0.0 == 0.0, yet x / a flips an infinity's sign). The
    warm paths ask it only for equal zeros that are not Python ints (`last != v or v == 0
    and type(v) is not int and changed(last, v)`): asked for every argument, an offset of 0
    among them, it cost argmax, norm and ReductionKernel ~0.5 us a call on PoCL."""
    if last != value:
        return True
    if value == 0:
        try:
            return copysign(1.0, value) != copysign(1.0, last)
        except TypeError:  # complex zeros: the parts' signs
            return ((copysign(1.0, value.real), copysign(1.0, value.imag))
                    != (copysign(1.0, last.real), copysign(1.0, last.imag)))
    return False


def set_value(k: cl.Kernel, index: int, value: Any) -> None:
    """A buffer through set_arg (its fast path), a numpy scalar through set_scalar."""
    if isinstance(value, np.generic):
        set_scalar(k, index, value)
    else:
        k.set_arg(index, value)


class ArgSetter:
    """The arguments of one kernel object, set only through this object (`setter(k, ...)`
    attaches it to the kernel, so launchers that share a build share it): buffers on every
    launch (never kept, so an application's buffer is never held alive; ~0.05 us each),
    scalars (~0.05 us through set_scalar) and local memory (~1.9 us through set_arg) only when
    they differ from what this object set last. Callers serialise
    launches of one kernel (a lock), as for any shared cl.Kernel."""

    __slots__ = ("k", "types", "last", "owner")

    def __init__(self, k: cl.Kernel, types: tuple) -> None:
        self.k, self.types = k, types
        self.last: list = [None] * len(types)
        self.owner: object = None  # the token whose scalars and local memory are set now

    def buffers(self, values: Any, kept: tuple[int, ...] = ()) -> tuple[int, ...]:
        """The places of `values` that `launch_again` sets on every call: the buffers, but
        for `kept` (the caller's own buffers, set only when they change)."""
        return tuple(i for i, t in enumerate(self.types)
                     if t is None and type(values[i]) is not cl.LocalMemory and i not in kept)

    def launch_again(self, queue: cl.CommandQueue, gsize: tuple, lsize: tuple, values: Any,
                     bufs: tuple[int, ...], kept: tuple[int, ...], token: object,
                     wait_for: Any) -> cl.Event:
        """`launch` for a caller (`token`) whose scalars and local memory never change between
        its calls: when nobody set other values since its last launch, only the buffers
        `bufs` (from `buffers`: the application's) are set, and its own buffers at `kept`
        (scratch it holds alive) only when they are other objects than last time (a prepared
        axis call compared 12 arguments and set 4 buffers per call before)."""
        k, last = self.k, self.last
        if self.owner is not token or k._cltune_args is not self:
            ev = self.launch(queue, gsize, lsize, values, wait_for)
            for i in kept:
                last[i] = values[i]
            self.owner = token
            return ev
        for i in bufs:
            k.set_arg(i, values[i])
        for i in kept:
            v = values[i]
            if last[i] is not v:
                k.set_arg(i, v)
                last[i] = v
        return cl.enqueue_nd_range_kernel(queue, k, gsize, lsize, None, wait_for)

    def launch_keyed(self, queue: cl.CommandQueue, gsize: tuple, lsize: tuple, values: Any,
                     bufs: tuple[int, ...], key: tuple, wait_for: Any) -> cl.Event:
        """`launch` for a caller whose scalars and local memory are decided by `key` (a tuple
        that holds the caller and whatever else its scalars depend on, e.g. an offset): while
        the last launch of this kernel was one of the same key, only the buffers at `bufs` are
        set (the statistics' warm calls: ~1 us less than comparing every argument)."""
        k = self.k
        if self.owner != key or k._cltune_args is not self:
            ev = self.launch(queue, gsize, lsize, values, wait_for)
            self.owner = key
            return ev
        for i in bufs:
            k.set_arg(i, values[i])
        return cl.enqueue_nd_range_kernel(queue, k, gsize, lsize, None, wait_for)

    def launch(self, queue: cl.CommandQueue, gsize: tuple, lsize: tuple, values: Any,
               wait_for: Any) -> cl.Event:
        k, last = self.k, self.last
        self.owner = None
        for i, t in enumerate(self.types):
            v = values[i]
            if t is None:
                if type(v) is cl.LocalMemory:  # ours, not the application's: kept; 1.9 us to set
                    if last[i] is not v:
                        k.set_arg(i, v)
                        last[i] = v
                else:
                    k.set_arg(i, v)
            elif last[i] is None or last[i] != v or (v == 0 and type(v) is not int
                                                     and changed(last[i], v)):
                set_scalar(k, i, t(v))
                last[i] = v
        return cl.enqueue_nd_range_kernel(queue, k, gsize, lsize, None, wait_for)


def setter(k: cl.Kernel, types: Any) -> ArgSetter:
    """The ArgSetter of kernel object k for these scalar types (numpy types; None for a buffer
    or local memory), made on first use."""
    s = getattr(k, "_cltune_args", None)
    types = tuple(types)
    if s is None or s.types != types:
        s = ArgSetter(k, types)
        k._cltune_args = s
    return s


class KernelArgs:
    """A kernel's argument list: the index of each argument by name (`args.out`), as plain
    attributes (read on every launch)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        for i, name in enumerate(names):
            setattr(self, name, i)

    def __getattr__(self, name: str) -> int:  # only for names the kernel does not have
        raise AttributeError(f"no kernel argument {name!r} in {self.__dict__.get('names')}")

    def scalar_dtypes(self, index_dtype: type) -> list[type | None]:
        """For `Kernel.set_scalar_arg_dtypes`: indices and sizes are index_dtype, rest None."""
        return [index_dtype if n in ("xoff", "yoff", "n", "chunk") else None for n in self.names]
