"""`answer` checked against the arguments before anything runs, with Kernel Tuner's rules: one
entry per argument (None: not checked), an array for an array argument of a dtype the output
casts to and of its size, a numpy scalar of the same dtype for a scalar."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def check_answer(answer: Sequence[Any] | None, arguments: Sequence[Any],
                 typed: bool = True) -> list | None:
    """answer as a list; its entries' kinds checked unless a verify function reads them
    (`typed` False: only the length, as Kernel Tuner)."""
    if answer is None:
        return None
    if not isinstance(answer, (list, tuple)):
        raise TypeError("answer must be a list with one entry per argument (None: unchecked)")
    if len(answer) != len(arguments):
        raise TypeError("The length of argument list and provided results do not match.")
    out = []
    for i, (want, arg) in enumerate(zip(answer, arguments, strict=False)):
        if want is None or not typed:
            out.append(want)
            continue
        host = arg.get() if hasattr(arg, "get") and not isinstance(arg, np.ndarray) else arg
        if isinstance(want, np.ndarray) and isinstance(host, np.ndarray):
            if not np.can_cast(host.dtype, want.dtype):
                raise TypeError(f"Element {i} of the expected results list is not of the same "
                                f"dtype as the kernel output: {want.dtype} != {host.dtype}.")
            if want.size != host.size:
                raise TypeError(f"Element {i} of the expected results list has a size "
                                f"different from the kernel argument: {want.size} != "
                                f"{host.size}.")
        elif isinstance(want, np.generic) and isinstance(host, np.generic):
            if want.dtype != host.dtype:
                raise TypeError(f"Element {i} of the expected results list is not the same "
                                f"as the kernel output: {want.dtype} != {host.dtype}.")
        else:
            raise TypeError(f"Element {i} of expected results list is not a numpy array or "
                            f"numpy scalar, or not of the kind of argument {i}.")
        out.append(want)
    return out
