"""Arguments to tune an application's kernel on when it brings none (`knl.sample_args`): for
each of its declared arguments (pyopencl's `VectorArg` / `ScalarArg`, in order), a device
vector of n elements — floats in [0, 1), integers 0..99, booleans, structs zeroed — or a zero
scalar of its type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg


def random_args(arguments: Sequence[Any], queue: cl.CommandQueue, n: int,
                seed: int = 0) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for a in arguments:
        dt = np.dtype(a.dtype)
        if not isinstance(a, VectorArg):
            out.append(np.zeros((), dt)[()])
            continue
        if dt.kind == "f":
            host = rng.random(n).astype(dt)
        elif dt.kind in "iu":
            host = rng.integers(0, 100, n).astype(dt)
        elif dt.kind == "b":
            host = rng.random(n) < 0.5
        else:
            host = np.zeros(n, dt)
        out.append(cla.to_device(queue, host))
    return tuple(out)
