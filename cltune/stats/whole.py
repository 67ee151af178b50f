"""numpy's whole-array rules for n-D inputs that one flat reduction does not give (cltune.stats.api
calls these without `axis`):

- `argmax`/`argmin` of an F-ordered array is numpy's flat index in C order, and on ties the
  first in C order, which is not the first in memory: the reduction keys every element by its
  C index (`arg_c_order`; up to MAX_DIMS axes longer than 1, else on the host).
- `numpy.linalg.norm(x, ord)` of a 2-D array is a matrix norm: 1 / -1 the largest / smallest
  column sum of |x|, inf / -inf the largest / smallest row sum, 'fro' the Frobenius norm
  (`matrix_norm`); 2, -2 and 'nuc' need singular values (a ValueError here); an ord with more
  than two dimensions is numpy's ValueError.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import dtype_to_ctype

from cltune.families.expr.api import ReductionKernel
from cltune.opencl.caches import ContextCache
from cltune.stats.kernels import arg_struct

#: axes longer than 1 the C-order index kernel takes (more: computed on the host)
MAX_DIMS = 8

_kernels: ContextCache[ReductionKernel] = ContextCache()

_DIMS = ", ".join(f"d{k}" for k in range(MAX_DIMS))
_F2C = f"""
/* the C-order flat index of the element at F-order (memory) index i of dims d0..d7 */
inline long clt_f2c(long i, {", ".join(f"const long d{k}" for k in range(MAX_DIMS))}) {{
  const long d[{MAX_DIMS}] = {{{_DIMS}}};
  long m[{MAX_DIMS}];
  for (int k = 0; k < {MAX_DIMS}; ++k) {{ m[k] = i % d[k]; i /= d[k]; }}
  long c = 0;
  for (int k = 0; k < {MAX_DIMS}; ++k) c = c * d[k] + m[k];
  return c;
}}
"""


def needs_c_order(x: cla.Array) -> bool:
    """Whether memory order and C order differ for x (F-ordered, two or more axes > 1)."""
    return not x.flags.c_contiguous and sum(d > 1 for d in x.shape) >= 2


def _arg_kernel(ctx: cl.Context, dt: np.dtype, largest: bool) -> ReductionKernel:
    """argmax/argmin keyed by the C index: the struct pick per element (ties: the smaller C
    index; the stats fold's 'first in memory wins' does not hold in C order)."""

    return _kernels.get(ctx, (dt.str, largest), lambda: _make_arg(ctx, dt, largest))


def _make_arg(ctx: cl.Context, dt: np.dtype, largest: bool) -> ReductionKernel:
    acc, st, pre, neutral = arg_struct(dt, largest)
    dims = ", ".join(f"long d{k}" for k in range(MAX_DIMS))
    return ReductionKernel(ctx, acc, neutral=neutral, reduce_expr=f"{st}_pick(a, b)",
                          map_expr=f"{st}_make(x[i], clt_f2c(i, {_DIMS}))",
                          arguments=f"__global const {dtype_to_ctype(dt)} *x, {dims}",
                          preamble=pre + _F2C, finish_expr="a.idx", dtype_result=np.int64,
                          name=f"arg_c_order_{st}")


def arg_c_order(x: cla.Array, q: cl.CommandQueue, largest: bool,
                keepdims: bool) -> cla.Array:
    """numpy.argmax/argmin (largest or not) of every element of the F-ordered array x: the
    C-order flat index of the first extreme (a NaN wins), as a 0-d (keepdims: all-ones) int64
    array."""
    shape = (1,) * x.ndim if keepdims else ()
    dims = [int(d) for d in x.shape if d > 1]
    if len(dims) > MAX_DIMS:  # rare: numpy on the host
        h = x.get()
        c = np.argmax(h) if largest else np.argmin(h)
        return cla.to_device(q, np.full(shape, c, np.int64))
    flat = x.reshape(x.size, order="F")
    knl = _arg_kernel(q.context, x.dtype, largest)
    out = cla.empty(q, shape, np.int64) if shape else None
    return knl(flat, *(dims + [1] * (MAX_DIMS - len(dims))), queue=q, out=out)
