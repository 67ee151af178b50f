"""`any`/`all` of a whole contiguous array on a CPU device, in vector registers, stopping at
the first element that decides the answer (kernels/anyvec.cl), for cltune.stats.api.

The expression path (cltune.stats.kernels: a 0/1 per element folded with | or &) reads every
element, as numpy does; here each of `items` work-items scans its own contiguous chunk,
`ACCUMULATORS` vectors of `lanes` elements compared with zero at a time, and stops at the first
group that holds a nonzero element (any) or a zero one (all); a one-work-item kernel ORs the
chunks' flags on the device, so a call is as asynchronous as the expression path's (one chunk:
one launch). `any` of data whose chunks start with a nonzero element (and `all` of data with
a zero early in each chunk) reads a few vectors per chunk; the worst case (any of zeros, all
of nonzeros) reads everything, at the memory's speed like the expression path. numpy's
semantics: an element is true where `x != 0` (a NaN is, -0.0 is not), an empty array is
any False and all True, the bool result as a 0-d (keepdims: all-ones) device array.

Served (`served`) on devices of type CPU (`DeviceInfo.type`), for the dtypes of
cltune.stats.kernels.DTYPES (float64 where the device has fp64; bool arrives as uint8), in any
memory order (any/all do not depend on it). The program is built once per context, device and
dtype (`KERNELS`, a `cpuvec.Kernels`), after it ran right once on this fingerprint and driver
in the device's worker (`check`, through `cpuvec.vetted`; house rule 17); where it did not, or
does not build, the expression path serves, with a CltuneWarning.

The plan, from the device's info (`plan`, `lanes_for`): lanes = the device's native (or
preferred, whichever is wider) vector width of the element type, a power of two in 4..16,
within the health check's cap; items = compute units x ITEMS_PER_CU, fewer so that a chunk
holds MIN_CHUNK_BYTES (one chunk, one launch, below 256 KiB).

    >>> from cltune.stats import anyvec
    >>> anyvec.serves(x)              # True: cltune.any(x) / cltune.all(x) run kernels/anyvec.cl
    >>> print(anyvec.explain(queue, np.float32, 1 << 24))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.serving import Explanation
from cltune.core.shapes import empty_result
from cltune.device.info import DeviceInfo
from cltune.opencl.build import BuildError
from cltune.opencl.events import in_order, pending
from cltune.opencl.kernel_args import setter
from cltune.opencl.pools import pool_for
from cltune.opencl.scalars import ScalarFactory, new_scalar
from cltune.stats import cpuvec
from cltune.stats.cpuvec import Built, Plan, partials, vector_width

#: CLT_ZV_TYPE of each dtype served (kernels/anyvec.cl)
TYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
     np.int64, np.uint64))}
#: work-items per compute unit (as cltune.stats.normvec's: a full scan is bound by memory)
ITEMS_PER_CU = 4
#: the least a chunk holds (one chunk, one launch, below 256 KiB)
MIN_CHUNK_BYTES = 1 << 18
#: CLT_ZV_U: vectors whose masks are ORed between two tests for a deciding element (2^24
#: float32, a full scan: ORing 8 groups of 4 between tests was 1.5x slower on PoCL)
ACCUMULATORS = 4

_BOOL = np.dtype(np.bool_)
_KIND = {"f": {4: "float", 8: "double"}, "i": {1: "char", 2: "short", 4: "int", 8: "long"}}
_CHUNK_TYPES = (None, np.int64, np.int64, np.int64, None, np.int64, None, np.int64, np.int32,
                np.int32)
_FINISH_TYPES = (None, np.int64, None, np.int64, np.int32)


def lanes_for(dev: cl.Device, info: DeviceInfo, dt: np.dtype) -> int:
    """Vector width: the device's native or preferred width of the element type, whichever is
    wider, as a power of two in 4..16, within the health check's cap."""
    kind = _KIND["f" if dt.kind == "f" else "i"][dt.itemsize]
    return vector_width(dev, info, kind, dt.itemsize)


def plan(n: int, lanes: int, compute_units: int, itemsize: int) -> Plan:
    """The cut of n elements (a `cpuvec.Plan` named anyvec): compute_units x ITEMS_PER_CU
    chunks, fewer where a chunk would hold less than MIN_CHUNK_BYTES."""
    return cpuvec.cut("anyvec", n, lanes, ACCUMULATORS, compute_units, itemsize,
                      per_cu=ITEMS_PER_CU, min_chunk_bytes=MIN_CHUNK_BYTES)


def served(x: cla.Array, q: cl.CommandQueue) -> Built | None:
    """The kernels that serve any/all of every element of x on q, or None where the expression
    path serves (not a CPU, a dtype this does not take, vetting failed). x is C- or
    F-contiguous (cltune.stats.api checks) and not bool (viewed as uint8 there)."""
    dt = x.dtype
    if dt not in TYPE_CODES or x.offset % dt.itemsize:
        return None
    return KERNELS.built(q, dt)


def serves(x: cla.Array, queue: cl.CommandQueue | None = None) -> bool:
    """Whether `cltune.any(x)` / `cltune.all(x)` (no axis) run kernels/anyvec.cl."""
    q = queue if queue is not None else x.queue
    if x.dtype == _BOOL:
        x = x.view(np.uint8)
    return x.flags.forc and served(x, q) is not None


class Call:
    """any (zero=False) / all (zero=True: looks for a zero) of n elements on q with kernels b,
    prepared: the plan, the queue's pool and order; cltune.stats.warm keeps one per (queue,
    dtype, size) for the warm call (`warm`: the result from a factory)."""

    __slots__ = ("b", "q", "n", "pl", "pool", "inq", "zero", "results")

    def __init__(self, b: Built, q: cl.CommandQueue, n: int, zero: bool,
                 cut: Plan | None = None) -> None:
        self.b, self.q, self.n = b, q, n
        self.pl = cut or plan(n, b.lanes, b.compute_units, b.dtype.itemsize)
        self.pool = pool_for(q)
        self.inq = in_order(q)
        self.zero = int(zero)
        self.results: ScalarFactory | None = None  # the warm call's, made at its first

    def launch(self, x: cla.Array, res: cla.Array) -> cla.Array:
        """Enqueue the answer for x into res (bool)."""
        b, q, pl, n, pool, zero = self.b, self.q, self.pl, self.n, self.pool, self.zero
        xoff = x.offset // b.dtype.itemsize
        wait = pending(x.events, in_order=self.inq) if x.events else None
        with b.lock:
            chunks = setter(b.chunks, _CHUNK_TYPES)
            # keyed launches: the scalars are this call's (zero among them) and the offsets'
            # (a repeated call sets only the buffers)
            roff = res.offset
            if pl.items == 1:  # the chunk's flag is the answer: one launch
                ev = chunks.launch_keyed(q, (1,), (1,), (x.base_data, xoff, n, pl.chunk,
                                                         res.base_data, 0, res.base_data, roff,
                                                         1, zero), (0, 4, 6), (self, xoff, roff),
                                         wait)
            else:
                part = partials(q, pool, pl.items)
                ev1 = chunks.launch_keyed(q, (pl.items,), (1,), (x.base_data, xoff, n,
                                                                pl.chunk, part, 0,
                                                                res.base_data, roff, 0, zero),
                                          (0, 4, 6), (self, xoff, roff), wait)
                # an in-order queue runs the finish after the chunks (and hands the pooled
                # flags to nothing before it); an out-of-order one waits for them
                ev = setter(b.finish, _FINISH_TYPES).launch_keyed(
                    q, (1,), (1,), (part, pl.items, res.base_data, roff, zero), (0, 2),
                    (self, roff), None if pool is not None else [ev1])
        res.events.append(ev)
        return res

    def warm(self, x: cla.Array, extra: tuple = ()) -> cla.Array | None:
        """`launch` into a fresh 0-d result (from x's allocator, else from the queue's pool: an
        in-order queue's); None where x's offset is not a whole element's (the expression path
        serves that). `extra`: the statistic's scalars (none)."""
        if x.offset % self.b.dtype.itemsize:
            return None
        if x.allocator is not None:
            return self.launch(x, new_scalar(self.q, _BOOL, x.allocator))
        f = self.results
        if f is None:
            f = self.results = ScalarFactory(self.q, _BOOL, self.pool)
        return self.launch(x, f())


def truth(b: Built, x: cla.Array, q: cl.CommandQueue, every: bool, keepdims: bool, *,
          cut: Plan | None = None) -> cla.Array:
    """numpy.all (every) / numpy.any of every element of x (as `served` took it; empty: all
    True, any False), enqueued on q: a bool array of shape () (keepdims: all ones) whose event
    is the last launch. `cut` overrides the plan (the vetting check's inputs)."""
    return call(b, x, q, every, keepdims, cut=cut)[0]


def call(b: Built, x: cla.Array, q: cl.CommandQueue, every: bool, keepdims: bool, *,
         cut: Plan | None = None) -> tuple[cla.Array, Call]:
    """`truth`'s result and the prepared call that made it (for cltune.stats.warm)."""
    c = Call(b, q, x.size, every, cut)
    alloc = x.allocator if x.allocator is not None else c.pool
    shape = (1,) * x.ndim if keepdims else ()
    res = empty_result(q, shape, _BOOL, "C", alloc) if shape else new_scalar(q, _BOOL, alloc)
    return c.launch(x, res), c


def explain(queue: cl.CommandQueue, dtype: Any, n: int) -> Explanation | None:
    """What serves any/all of n elements of dtype on the queue's device when kernels/anyvec.cl
    does (its plan, level `builtin`: from the device's info), else None."""
    dt = np.dtype(dtype)
    dt = np.dtype(np.uint8) if dt == _BOOL else dt
    if dt not in TYPE_CODES:
        return None
    b = KERNELS.built(queue, dt)
    if b is None:
        return None
    pl = plan(n, b.lanes, b.compute_units, dt.itemsize)
    return Explanation(n, pl, "builtin", "kernels/anyvec.cl: the CPU any/all in vector "
                       "registers, stopping at the first deciding element of each chunk, its "
                       "plan from the device's info (vetted on this driver)", None, "", "", None)


# ---- vetting -----------------------------------------------------------------------------
def _sample(dt: np.dtype, n: int, case: int) -> np.ndarray:
    """Check inputs: zeros with one nonzero (case 0: the last element, 1: a NaN or the type's
    minimum in the middle), ones with one zero (case 2: -0.0 or 0 at the end), all zeros
    (case 3), all nonzero (case 4)."""
    h = np.zeros(n, dt)
    if case in (2, 4):
        h[:] = 1
    if n == 0:
        return h
    if case == 0:
        h[n - 1] = 1
    elif case == 1:
        h[n // 2] = np.nan if dt.kind == "f" else (np.iinfo(dt).min or np.iinfo(dt).max)
    elif case == 2:
        h[n - 1] = -0.0 if dt.kind == "f" else 0
    return h


def check(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: DeviceInfo,
          dtype: str, lanes: int) -> str:
    """The vetting check (run in the device's worker by `isolation.vetting.checked`): build
    kernels/anyvec.cl for dtype and lanes, run any and all on one and several chunks, tails,
    a deciding element in a vector, the tail and the last place, a NaN and -0.0, all zeros,
    all nonzero, an empty array, an offset view; '' when every answer is numpy's."""
    dt = np.dtype(dtype)
    try:
        b = KERNELS.compile(ctx, dev, info, dt, lanes)
    except BuildError as e:
        return str(e)
    step = lanes * ACCUMULATORS
    cases = [(0, 1, 3), (1, 1, 0), (2, 1, 2), (lanes - 1, 1, 1), (lanes + 1, 1, 0),
             (4 * step + 3, 1, 2), (1031, 1, 1), (1031, 3, 0), (1031, 3, 3), (20011, 7, 2),
             (20011, 5, 4), (20011, 4, 1)]
    for n, items, case in cases:
        h = _sample(dt, n + 3, case)
        x = cla.to_device(queue, h)[3:]  # an offset view
        h = h[3:]
        chunk = -(-max(1, n) // items)
        chunk = -(-chunk // lanes) * lanes
        pl = Plan("anyvec", lanes, ACCUMULATORS, -(-max(1, n) // chunk), chunk)
        for every in (False, True):
            got = bool(truth(b, x, queue, every, False, cut=pl).get())
            want = bool(np.all(h) if every else np.any(h))
            if got != want:
                what = "all" if every else "any"
                return (f"wrong answer: {what} of {n} {dt.name} in {pl.items} chunk(s) gave "
                        f"{got}, numpy {want}")
    return ""


#: the kernel file, its builds and their vetting (cltune.stats.cpuvec.Kernels)
KERNELS = cpuvec.Kernels("anyvec", "ZV", TYPE_CODES, ACCUMULATORS,
                         "the CPU any/all kernel", check, lanes_for)
