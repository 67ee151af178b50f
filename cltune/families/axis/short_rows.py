"""float32 sums along short rows of a length that is not a power of two, on CPUs: through
kernels/normvec.cl's `clt_normvec_rowss<L>` (cltune.stats.normvec) instead of clt_ax_packed.

clt_ax_packed folds rows of 2, 4, 8 or 16 elements as a tree of whole vectors; rows of other
lengths it transposes in registers with a length known at run time, which left rows of 5 at
0.4-0.6 of the 1-D sum's speed on both CPU runtimes. normvec's kernel per length runs a
work-item a row in groups of 256 (the CPU compilers put neighbouring work-items in vector
lanes, the row's loads a gather at a constant stride) and adds the row in double: rows of 3,
5-7 and 9-15 float32 1.03-1.40x faster on Debian's PoCL, 1.32-1.91x on Intel's runtime
(docs/logs/cpu-sum-rows-2026-12-07.txt). Served where no tuned config serves the rows class
(a tuned one ran in the tuner's worker and stays), on arrays of at least normvec.ROWS_MIN
elements; the kernels are vetted with normvec's others in the device's worker.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

#: the lengths served (the powers of two keep clt_ax_packed's tree)
LENGTHS = frozenset((3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15))


def launch_for(eng: Any, q: cl.CommandQueue, xoff: int, rows: int,  # noqa: ANN401
               length: int) -> Any | None:  # noqa: ANN401
    """A prepared launch `(x, out, y, wait_for) -> [event]` of the float32 sums of `rows` rows
    of `length` (at element offset xoff) into out[0:rows], or None where the axis family's
    own launch serves (not a CPU, not a float32 sum, a tuned config, a length or size this
    does not take, normvec not vetted on this driver)."""
    spec = eng.spec
    if (eng.info.type != "cpu" or spec.op != "sum" or spec.np_dtype != np.float32
            or spec.result_dtype != np.float32 or length not in LENGTHS):
        return None
    from cltune.stats import normvec  # the statistics' kernels (a family above this one)

    if rows * length < normvec.ROWS_MIN or eng.choose("rows", rows, length)[1] is not None:
        return None
    b = normvec.KERNELS.built(q, normvec.DTYPE)
    if not normvec.takes_rows(b, "sum", rows, length):
        return None
    return _Launch(normvec, b, q, xoff, rows, length)


class _Launch:
    """The sums' launch with everything but the buffers decided."""

    __slots__ = ("b", "k", "q", "xoff", "rows", "gsize", "length", "setter")

    def __init__(self, normvec: Any, b: Any, q: cl.CommandQueue, xoff: int, rows: int,  # noqa: ANN401
                 length: int) -> None:
        from cltune.opencl.kernel_args import setter

        self.b, self.q, self.xoff, self.rows, self.length = b, q, xoff, rows, length
        self.k = b.rows_of["s", length]
        self.gsize = (-(-rows // normvec.ROWS_GROUP) * normvec.ROWS_GROUP,)
        self.setter = lambda: setter(self.k, normvec._ROWS_TYPES)  # noqa: SLF001

    def __call__(self, x: cl.Buffer, out: cl.Buffer, y: cl.Buffer | None = None,
                 wait_for: Any = None) -> list[cl.Event]:  # noqa: ANN401
        from cltune.stats import normvec

        with self.b.lock:
            ev = self.setter().launch(self.q, self.gsize, (normvec.ROWS_GROUP,),
                                      (x, self.xoff, self.rows, normvec.ROWS_WHAT["sum"][1],
                                       float(self.length), out, 0), wait_for)
        return [ev]


def explain_why(eng: Any, q: cl.CommandQueue, rows: int, length: int) -> str | None:  # noqa: ANN401
    """What `explain` says where `launch_for` serves these rows, else None."""
    if launch_for(eng, q, 0, rows, length) is None:
        return None
    return (f"served by kernels/normvec.cl's clt_normvec_rowss{length} (a work-item a row, "
            "the row added in double; cltune/families/axis/short_rows.py), not by the config "
            "shown")
