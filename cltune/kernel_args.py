"""Setting one scalar kernel argument fast.

`pyopencl.Kernel.set_arg(i, numpy_scalar)` costs ~5.3 us a call (pyopencl 2026.1, measured on
PoCL and Intel's runtime alike: the generic argument path), while the buffer-protocol setter
its generated invokers rely on, `Kernel._set_arg_buf`, takes ~0.05 us for the same bytes. A
hot path that changes an offset or a scalar on every call sets it here; the value must
already be a numpy scalar of the kernel parameter's type (its bytes are what the kernel gets).
"""

from __future__ import annotations

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


def set_value(k: cl.Kernel, index: int, value: Any) -> None:
    """A buffer through set_arg (its fast path), a numpy scalar through set_scalar."""
    if isinstance(value, np.generic):
        set_scalar(k, index, value)
    else:
        k.set_arg(index, value)
