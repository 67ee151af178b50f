"""Segmented reductions at run time: `r.segments(x, offsets, initial=None)`, on the axis
family's engine (cltune.families.axis.api) and its `segs` variant."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.families.axis.family import NO_ERROR, identity
from cltune.families.axis.serve import AxisExplanation, axis_engine, device_array, explain


def _bad_bounds(i: int, n: int) -> ValueError:
    return ValueError(f"offsets are not valid CSR bounds for x of {n} elements: segment {i} "
                      "has bounds that are negative, decreasing or past the end")


def _check_host_bounds(o: np.ndarray, n: int) -> None:
    """The device's check of every segment's bounds, on host bounds."""
    a, b = o[:-1], o[1:]
    bad = (a < 0) | (b < a) | (b > n)
    if bad.any():
        raise _bad_bounds(int(np.flatnonzero(bad)[0]), n)


def reduce_segments(reducer: Any, x: Any, offsets: Any, initial: Any, q: cl.CommandQueue,
                    out: Any, wait_for: Any, check: bool | None = None) -> cla.Array:
    """`r.segments(x, offsets, initial=None)`: one value per CSR segment.

    Host bounds (a numpy array) are checked on the host, every call. Device bounds are checked
    on the device (a bad segment is reduced as empty and flagged; no load leaves x); the flag
    is read (one round trip) the first time an offsets array is used (`check=None`), on every
    call with `check=True`, never with `check=False`. A call with host bounds waits on
    nothing: it may be enqueued behind a `wait_for` event that is set later."""
    spec = reducer.spec
    if spec.op == "dot":
        raise TypeError("segments of a dot: multiply first (x * y), then use a sum reducer")
    if wait_for is not None and not all(isinstance(e, cl.Event) for e in wait_for):
        raise TypeError("wait_for must be a list of pyopencl Events")
    xd = device_array(reducer, x, q, "x")
    if isinstance(offsets, np.ndarray) and offsets.ndim == 1 and offsets.dtype in (
            np.int32, np.int64) and offsets.size >= 1:
        # host bounds: checked here, and put on the device by the buffer's creation, which
        # waits on no queue (a blocking upload on the queue would wait behind the caller's
        # `wait_for`, e.g. a user event this thread sets after the call)
        host = np.ascontiguousarray(offsets)
        _check_host_bounds(host, xd.size)
        check = bool(check)
        offsets = cla.Array(q, host.shape, host.dtype, data=cl.Buffer(
            q.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host))
    elif isinstance(offsets, np.ndarray):
        offsets = cla.to_device(q, np.ascontiguousarray(offsets))  # refused below
    if not isinstance(offsets, cla.Array) or offsets.dtype not in (np.int32, np.int64) \
            or offsets.ndim != 1 or not offsets.flags.c_contiguous:
        raise TypeError("offsets must be a 1-D contiguous int32 or int64 array of m + 1 "
                        "segment bounds (CSR row pointers)")
    if offsets.size < 1:
        raise ValueError("offsets needs at least one entry (m + 1 bounds for m segments)")
    if offsets.context.int_ptr != reducer._eng.ctx.int_ptr:
        raise ValueError("offsets lives in another OpenCL context than this reducer")
    m = offsets.size - 1
    eng = axis_engine(reducer)
    rdt = spec.result_dtype
    if out is None:
        res = cla.empty(q, (m,), rdt, allocator=eng.allocator)
    elif not (isinstance(out, cla.Array) and out.dtype == rdt and out.shape == (m,)
              and out.offset == 0):
        raise TypeError(f"out must be a pyopencl Array of shape ({m},), dtype {rdt}, offset 0")
    else:
        res = out
    if m == 0:
        return res
    try:
        init = rdt.type(initial) if initial is not None else identity(spec)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"initial={initial!r:.40} is not a {rdt} value: {e}") from None
    waits = list(wait_for or []) + list(xd.events) + list(offsets.events) + list(res.events)
    cfg, _ = eng.choose("segs", m, max(1, xd.size // m))
    la = eng.launcher(cfg, "rows")
    b = la.built(False)
    init_acc = b.acc_dtype.type(init)
    key = (offsets.base_data.int_ptr, offsets.offset, offsets.size, offsets.dtype.num)
    if check is None:
        check = key not in eng.checked
    err = eng.err(q)
    if check:
        waits.append(cl.enqueue_copy(q, err, np.full(1, NO_ERROR, np.uint32),
                                     is_blocking=False))
    if offsets.offset:  # the kernel reads bounds from the start of a buffer
        offsets = offsets.copy(queue=q)
    evs = la.segs(q, xd.base_data, xd.offset // spec.itemsize, xd.size, offsets.base_data,
                  offsets.dtype == np.int64, m, init_acc, err, res.base_data,
                  wait_for=waits or None)
    res.add_event(evs[-1])
    if check:
        flag = np.empty(1, np.uint32)
        cl.enqueue_copy(q, flag, err, wait_for=evs)
        if int(flag[0]) != NO_ERROR:
            raise _bad_bounds(int(flag[0]), xd.size)
        with eng._lock:
            eng.checked[key] = None
            while len(eng.checked) > 256:
                eng.checked.popitem(last=False)
    return res


def explain_segments(reducer: Any, m: int, n: int) -> AxisExplanation:
    """Which config `r.segments` runs for m segments over n elements."""
    return explain(reducer, "segs", m, max(1, n // max(1, m)))
