"""Problem size, work-group and grid as Kernel Tuner computes them for one set of parameters.

`problem_size` is an int, a tuple of up to three ints or strings (expressions of the
parameters), or a parameter's name; the work-group size is read from the block size names
(`block_size_x` ... or `block_size_names`; x defaults to 256, y and z to 1); the grid (the
number of work-groups) is the problem size divided by `grid_div_x/y/z`, rounded up (None: by
that dimension's block size when it is tuned, else 1; an int; an expression; a function of
the params; a list of those, multiplied). OpenCL gets global = grid * block, always 3-D.

    >>> p = {"block_size_x": 128, "tile": 2}
    >>> block_dims(p), grid_dims(problem_dims(1000, p), p, (None, None, None))
    ((128, 1, 1), (8, 1, 1))
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cltune.user.source import DEFAULT_BLOCK_NAMES, KernelSourceError, replace_params


def evaluate(text: str, params: Mapping[str, object], what: str) -> Any:  # noqa: ANN401
    """A Python expression of the parameters, as Kernel Tuner evaluates it (the application's
    own text, in its own process: restrictions, grid divisors, problem sizes, metrics)."""
    try:
        return eval(replace_params(text, params), {"__builtins__": BUILTINS}, {})  # noqa: S307
    except ZeroDivisionError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's expression: one line naming it
        raise KernelSourceError(f"{what} {text!r:.80}: {type(e).__name__}: {e}") from None


BUILTINS = {n: getattr(__builtins__, n) if not isinstance(__builtins__, dict) else
             __builtins__[n] for n in ("abs", "min", "max", "int", "float", "round", "len",
                                       "pow", "sum", "bool", "divmod", "all", "any")}
BUILTINS["math"] = math
BUILTINS["np"] = np
BUILTINS["numpy"] = np


def problem_dims(problem_size: Any, params: Mapping[str, object]) -> tuple[int, int, int]:  # noqa: ANN401
    if callable(problem_size):
        problem_size = problem_size(params)
    if isinstance(problem_size, (str, int, np.integer)):
        problem_size = (problem_size,)
    if not isinstance(problem_size, (tuple, list)) or not 1 <= len(problem_size) <= 3:
        raise TypeError("Error: problem_size should be an int, a string or a tuple of at "
                        "most three of them")
    dims = [1, 1, 1]
    for i, s in enumerate(problem_size):
        if isinstance(s, str):
            dims[i] = int(evaluate(s, params, "problem_size"))
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            dims[i] = int(s)
        else:
            raise TypeError("Error: problem_size should only contain strings or integers")
        if dims[i] < 1:
            raise KernelSourceError(f"problem_size: dimension {i} is {dims[i]} (must be >= 1)")
    return dims[0], dims[1], dims[2]


def block_dims(params: Mapping[str, object],
               names: Sequence[str] = DEFAULT_BLOCK_NAMES) -> tuple[int, int, int]:
    return (int(params.get(names[0], 256)), int(params.get(names[1], 1)),  # type: ignore[call-overload]
            int(params.get(names[2], 1)))  # type: ignore[call-overload]


def _divisor(d: Any, default: str, params: Mapping[str, object]) -> float:  # noqa: ANN401
    if d is None:
        return float(params.get(default, 1))  # type: ignore[arg-type]
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        return float(d)
    if callable(d):
        return float(d(params))
    if isinstance(d, str):
        return float(int(evaluate(d, params, "grid divisor")))
    if isinstance(d, (list, tuple)):
        out = 1.0
        for part in d:
            out *= _divisor(part, "", params) if part is not None else 1.0
        return out
    raise ValueError("Error: unrecognized type in grid divisor list, should be any of int, "
                     "str, callable, or iterable")


def grid_dims(dims: tuple[int, int, int], params: Mapping[str, object],
              grid_div: Sequence[Any], names: Sequence[str] = DEFAULT_BLOCK_NAMES,
              ) -> tuple[int, int, int]:
    out = []
    for i in range(3):
        div = _divisor(grid_div[i], names[i], params)
        if div <= 0:
            raise KernelSourceError(f"grid divisor of dimension {'xyz'[i]} is {div:g}")
        out.append(int(math.ceil(float(dims[i]) / div)))
    return out[0], out[1], out[2]


def block_names(names: Sequence[str] | None, tune_params: Mapping[str, object],
                warn: bool = True) -> tuple[str, ...]:
    """The three block size names: the application's (at most 3 strings, padded with the
    defaults), else the defaults with the tunable parameters' own spellings (`BLOCK_SIZE_X`)."""
    if names is not None:
        if not isinstance(names, (list, tuple)) or len(names) > 3 or not all(
                isinstance(n, str) for n in names):
            raise ValueError("block_size_names should be a list of at most 3 strings")
        for n in names:
            if warn and n not in tune_params:
                warnings.warn(f"Block size name {n} is not specified in the tunable "
                              f"parameters list!", UserWarning, stacklevel=4)
        return (*names, *DEFAULT_BLOCK_NAMES[len(names):])
    if warn and not any(k.lower() in DEFAULT_BLOCK_NAMES for k in tune_params):
        warnings.warn("None of the tunable parameters specify thread block dimensions!",
                      UserWarning, stacklevel=4)
    out = list(DEFAULT_BLOCK_NAMES)
    for k in tune_params:  # other spellings of the defaults (BLOCK_SIZE_X) in their place
        if k.lower() in DEFAULT_BLOCK_NAMES and k not in DEFAULT_BLOCK_NAMES:
            out[DEFAULT_BLOCK_NAMES.index(k.lower())] = k
    return tuple(out)
