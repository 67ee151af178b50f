"""float32 sums along short rows of a length that is not a power of two, on CPUs: through
kernels/normvec.cl's `clt_normvec_rowss<L>` (cltune.stats.normvec) instead of clt_ax_packed.

clt_ax_packed folds rows of 2, 4, 8 or 16 elements as a tree of whole vectors; rows of other
lengths it transposes in registers with a length known at run time, which left rows of 5 at
0.4-0.6 of the 1-D sum's speed on both CPU runtimes. normvec's kernel per length runs a
work-item a row in groups of 256 (the CPU compilers put neighbouring work-items in vector
lanes, the row's loads a gather at a constant stride) and adds the row in double: rows of 3,
5-7 and 9-15 float32 1.03-1.40x faster on Debian's PoCL, 1.32-1.91x on Intel's runtime
(docs/logs/cpu-sum-rows-2026-12-07.txt). Served where no tuned config serves the rows class
(a tuned one ran in the tuner's worker and stays); the kernels are vetted with normvec's
others in the device's worker.

The statistics sit above the families, so this module does not import them: cltune.stats
.normvec registers its launch maker here (`register`) when it is imported (cltune.stats
.reducers imports it, so `cltune.get_reducer`'s reducers have it); without it the family's
own launch serves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

#: the lengths served (the powers of two keep clt_ax_packed's tree)
LENGTHS = frozenset((3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15))

#: (queue, element offset, rows, length) -> a prepared launch `(x, out, y, wait_for) ->
#: [event]` of the rows' float32 sums, or None where it does not serve (its size floor, its
#: vetting); set by cltune.stats.normvec
_maker: Callable[[cl.CommandQueue, int, int, int], Any] | None = None


def register(maker: Callable[[cl.CommandQueue, int, int, int], Any]) -> None:
    """Set the launch maker (cltune.stats.normvec calls this at its import)."""
    global _maker  # noqa: PLW0603 - one registration, by the module that owns the kernels
    _maker = maker


def launch_for(eng: Any, q: cl.CommandQueue, xoff: int, rows: int,  # noqa: ANN401
               length: int) -> Any | None:  # noqa: ANN401
    """A prepared launch `(x, out, y, wait_for) -> [event]` of the float32 sums of `rows` rows
    of `length` (at element offset xoff) into out[0:rows], or None where the axis family's
    own launch serves (not a CPU, not a float32 sum, a length this does not take, a tuned
    config, no maker registered or it declines)."""
    spec = eng.spec
    maker = _maker
    if (maker is None or eng.info.type != "cpu" or spec.op != "sum"
            or spec.np_dtype != np.float32 or spec.result_dtype != np.float32
            or length not in LENGTHS or eng.choose("rows", rows, length)[1] is not None):
        return None
    return maker(q, xoff, rows, length)


def explain_why(eng: Any, q: cl.CommandQueue, rows: int, length: int) -> str | None:  # noqa: ANN401
    """What `explain` says where `launch_for` serves these rows, else None."""
    if launch_for(eng, q, 0, rows, length) is None:
        return None
    return (f"served by kernels/normvec.cl's clt_normvec_rowss{length} (a work-item a row, "
            "the row added in double; cltune/families/axis/short_rows.py), not by the config "
            "shown")
