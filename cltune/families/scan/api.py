"""Scans as applications call them (numpy's semantics and result dtypes):

    >>> c = cltune.cumsum(x)                       # x: a pyopencl Array (or numpy + queue=)
    >>> c = cltune.cumsum(x, axis=1)               # along an axis of a C- or F-ordered array
    >>> s = cltune.get_scanner(queue, "max", np.float32)
    >>> s(x, exclusive=True)                       # exclusive running max (first: -inf)
    >>> s.segments(x, offsets)                     # a scan restarting at CSR offsets
    >>> print(s.explain(x.shape, axis=0))          # which config serves it, and why

Integer sums and products widen to 64 bits and wrap as numpy's do; float results are computed
in their own type (as numpy's accumulate) with a rounding depth of ~log n where numpy's is n.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.shapes import empty_result
from cltune.device.select import info_for, require_usable
from cltune.families.scan.family import OPS, ScanVariant
from cltune.families.scan.nonzero import nonzero as nonzero  # other families' compaction
from cltune.families.scan.serve import ScanEngine, ScanExplanation
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order, pending
from cltune.opencl.pools import pool_for
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scalars import ResultFactory

__all__ = ["Scanner", "cummax", "cummin", "cumprod", "cumsum", "get_scanner"]

_engines: ContextCache[ScanEngine] = ContextCache()
_scanners: ContextCache[Scanner] = ContextCache()


_new = object.__new__


class Scanner:
    """Scans of one op and input dtype on one queue's device (see the module's example)."""

    def __init__(self, queue: cl.CommandQueue, op: str, dtype: Any, db: str | None = None,
                 ) -> None:
        if op not in OPS:
            raise ValueError(f"unknown scan op {op!r}; choose one of {', '.join(OPS)}")
        self.queue, self.op, self.db = queue, op, db
        self.dtype = np.dtype(dtype)
        self.variant = ScanVariant(op, self.dtype.name)  # checks the dtype
        self.ctx, self.dev = queue.context, queue.device
        self.info = require_usable(self.dev, info_for(self.dev))
        # (shape, axis, exclusive) -> (launcher, view, result shape, its results' template)
        self._hot: PreparedCalls = PreparedCalls()
        self._in_order = in_order(queue)
        self._checked: dict[tuple, None] = {}  # device offsets read back and found good
        self._pool = pool_for(queue)  # results: no free (NVIDIA: a device sync) per call
        self._offsets: dict[tuple, tuple] = {}  # host offsets' device copies (checked)
        self._seg_la: PreparedCalls = PreparedCalls()  # n -> the launcher serving segments of n
        self._rdt = self.variant.result_dtype
        self._isz, self._osz = self.dtype.itemsize, self._rdt.itemsize
        self._last: cl.Event | None = None  # the last launch's event (in-order queues)
        self._seen: cl.Event | None = None  # an input's event found on this in-order queue
        if self.variant.needs_fp64 and not self.info.fp64:
            raise TypeError(f"{self.dev.name} has no cl_khr_fp64: float64 scans cannot run "
                            "there")

    @property
    def result_dtype(self) -> np.dtype:
        return self._rdt

    def _engine(self, layout: str) -> ScanEngine:
        v = self.variant.with_layout(layout)
        return _engines.get(self.ctx, (self.dev.int_ptr, str(v), self.db),
                            lambda: ScanEngine(self.ctx, self.dev, self.info, v, self.db))

    # ---- geometry ---------------------------------------------------------------------------
    def _input(self, x: Any) -> cla.Array:
        if isinstance(x, np.ndarray):
            if x.dtype != self.dtype:
                raise TypeError(f"x has dtype {x.dtype}, this scanner is for {self.dtype}")
            return cla.to_device(self.queue, np.ascontiguousarray(x) if not (
                x.flags.c_contiguous or x.flags.f_contiguous) else x)
        if not isinstance(x, cla.Array):
            raise TypeError(f"x must be a pyopencl.array.Array or numpy array, not "
                            f"{type(x).__name__}")
        if x.dtype != self.dtype:
            raise TypeError(f"x has dtype {x.dtype}, this scanner is for {self.dtype} "
                            "(cast with .astype or use get_scanner(..., dtype=...))")
        if x.context.int_ptr != self.ctx.int_ptr:
            raise ValueError("x lives in another OpenCL context than this scanner")
        if x.size and not (x.flags.c_contiguous or x.flags.f_contiguous):
            raise ValueError("x is not contiguous; scan a contiguous copy")
        if x.offset % self.dtype.itemsize:
            raise ValueError("x's offset is not a whole number of elements")
        return x

    def view(self, shape: tuple[int, ...], axis: Any, f_order: bool = False,
             ) -> tuple[tuple[int, int, int], str]:
        """((outer, r, inner), layout) of scanning an array of `shape` along `axis` (None: the
        whole array in C order), memory order C unless `f_order`."""
        nd = len(shape)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if axis is None:
            return (1, n, 1), "rows"
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"axis must be an int or None, not {type(axis).__name__}")
        if nd == 0:
            raise np.exceptions.AxisError(int(axis), 0) if hasattr(np, "exceptions") else \
                ValueError(f"axis {axis} is out of bounds for a 0-d array")
        a = int(axis)
        if not -nd <= a < nd:
            raise np.exceptions.AxisError(a, nd) if hasattr(np, "exceptions") else \
                ValueError(f"axis {a} is out of bounds for array of dimension {nd}")
        a %= nd
        dims = tuple(int(d) for d in shape)
        if f_order:  # an F-ordered array is the C-ordered one of the reversed shape
            dims, a = dims[::-1], nd - 1 - a
        outer = int(np.prod(dims[:a], dtype=np.int64))
        inner = int(np.prod(dims[a + 1:], dtype=np.int64))
        return (outer, dims[a], inner), "rows" if inner == 1 else "cols"

    def _out(self, out: Any, shape: tuple[int, ...], order: str) -> cla.Array:
        rdt = self.result_dtype
        if out is None:
            return empty_result(self.queue, shape, rdt, order, self._pool)
        if not (isinstance(out, cla.Array) and out.dtype == rdt and out.shape == shape):
            raise TypeError(f"out must be a pyopencl Array of shape {shape} and dtype {rdt}")
        ok = out.flags.c_contiguous if order == "C" else out.flags.f_contiguous
        if out.size > 1 and not ok:
            raise ValueError(f"out must be {order}-contiguous like the input")
        if out.offset % rdt.itemsize:
            raise ValueError("out's offset is not a whole number of elements")
        return out

    # ---- calls ------------------------------------------------------------------------------
    def __call__(self, x: Any, axis: Any = None, exclusive: bool = False, out: Any = None,
                 wait_for: list[cl.Event] | None = None) -> cla.Array:
        """The scan of x along `axis` (None: of the flattened array, C order, as numpy's)."""
        if wait_for is None and type(x) is cla.Array and (axis is None or type(axis) is int):
            # the repeated call (~15 us less host); other axis types go the long way (errors)
            key = (x.shape, axis, exclusive if exclusive is False or exclusive is True
                   else bool(exclusive))
            hots = self._hot
            hot = hots.get(key)  # PreparedCalls.hit inlined (one frame less)
            if hot is not None:
                try:
                    hots.move_to_end(key)
                except KeyError:  # another thread dropped it meanwhile
                    pass
                go = hot[4]
                # the prepared call's own path: a C-contiguous x of ours at a whole element's
                # offset, a fresh result, no event to wait for but ones ordered anyway
                xe = x.events
                if (go is not None and out is None and x.dtype is self.dtype
                        and x.context is self.ctx and (x._flags or x.flags).c_contiguous
                        and not x.offset % self._isz
                        and (not xe or len(xe) == 1 and xe[0] is self._seen)):
                    rf = hot[3]
                    if rf.fast:  # ResultFactory.__call__ inlined: the result made after go
                        buf = rf._alloc(rf._nbytes)
                        ev = go(x.base_data, x.offset // self._isz, buf, 0)
                        res = _new(cla.Array)
                        d = rf._attrs.copy()
                        d["base_data"] = buf
                        d["events"] = [ev]
                        res.__dict__ = d
                    else:
                        res = rf()
                        ev = go(x.base_data, x.offset // self._isz, res.base_data, 0)
                        res.events.append(ev)
                    self._last = ev
                    return res
                if (go is not None and type(out) is cla.Array and x.dtype is self.dtype
                        and x.context is self.ctx and out.context is self.ctx
                        and out.dtype is self.result_dtype and out.shape == hot[2]
                        and (x._flags or x.flags).c_contiguous
                        and (out._flags or out.flags).c_contiguous
                        and not x.offset % self._isz and not out.offset % self._osz
                        and (not xe or len(xe) == 1 and xe[0] is self._seen)):
                    oe = out.events  # out= reused call after call: our own last launch only
                    if not oe or len(oe) == 1 and oe[0] is self._last and self._in_order:
                        ev = go(x.base_data, x.offset // self._isz, out.base_data,
                                out.offset // self._osz)
                        oe[:] = [ev]
                        self._last = ev
                        return out
                res = self._hot_call(x, out, key[2], *hot[:4])
                if res is not None:
                    return res
        xd = self._input(x)
        f_order = xd.ndim > 1 and not xd.flags.c_contiguous and xd.flags.f_contiguous
        if axis is None and f_order:
            xd = cla.to_device(self.queue, xd.get(self.queue).ravel())  # numpy's C order
            f_order = False
        view, layout = self.view(xd.shape, axis, f_order)
        shape = (xd.size,) if axis is None else xd.shape
        res = self._out(out, shape, "F" if f_order else "C")
        if xd.size == 0:
            return res
        la, _ = self._engine(layout).served(view)
        if (xd is x and wait_for is None and not f_order and res.flags.c_contiguous
                and (axis is None or type(axis) is int)
                and (x.shape, axis, bool(exclusive)) not in self._hot):
            # fresh results of the call's shape (not out's own strides), from a template;
            # the launcher's prepared call once this call has launched the view
            res = self._launch(la, xd, res, view, bool(exclusive), wait_for)
            self._hot.keep((x.shape, axis, bool(exclusive)), (
                la, view, shape, ResultFactory(self.queue, self.result_dtype, self._pool,
                                               shape),
                la.warm_rows(self.queue, view, bool(exclusive))))
            return res
        return self._launch(la, xd, res, view, bool(exclusive), wait_for)

    def _launch(self, la: Any, x: cla.Array, res: cla.Array, view: tuple[int, int, int],
                exclusive: bool, wait_for: list[cl.Event] | None) -> cla.Array:
        """Scan x as `view` into res after what they (and `wait_for`) wait on; res's events are
        then the launch's only (it came after all of them: waited for, or queued behind)."""
        waits = list(wait_for or [])
        xe, oe = x.events, res.events
        # an input whose one event was found on this in-order queue before (its upload,
        # scanned call after call): nothing to ask (0.86 us of queries a call here)
        if xe and len(xe) == 1 and xe[0] is self._seen:
            xe = ()
        # the launch we enqueued last on this in-order queue (an `out` reused call after call
        # holds it) runs before this one anyway: no event queries (~4 us a call on NVIDIA)
        if xe or oe and not (len(oe) == 1 and oe[0] is self._last and self._in_order):
            waits += pending(xe, oe, in_order=self._in_order) or []
            if self._in_order is not None and len(xe) == 1 and xe[0] not in waits:
                self._seen = xe[0]  # kept, not waited for: on this in-order queue
        evs = la.enqueue(self.queue, x.base_data, x.offset // self._isz, res.base_data,
                         res.offset // self._osz, view, exclusive=exclusive,
                         wait_for=waits or None)
        res.events[:] = [evs[-1]]
        self._last = evs[-1]
        return res

    def _hot_call(self, x: cla.Array, out: Any, exclusive: bool, la: Any,
                  view: tuple[int, int, int], shape: tuple[int, ...],
                  results: ResultFactory) -> cla.Array | None:
        """A call of a shape served before: the checks that can differ between arrays of one
        shape, then the launch; None sends the call the long way (which explains errors)."""
        isz, rdt = self.dtype.itemsize, self.result_dtype
        # self.ctx is the queue's own Context object, which arrays made on the queue carry:
        # compared by identity first (int_ptr is a driver query)
        if (x.dtype != self.dtype or (x.context is not self.ctx
                                      and x.context.int_ptr != self.ctx.int_ptr)
                or x.offset % isz or not (x._flags or x.flags).c_contiguous):
            return None
        if out is None:
            res = results()  # a copy of a template array (~2 us less than the constructor)
        elif (type(out) is cla.Array and out.dtype == rdt and out.shape == shape
              and out.context.int_ptr == self.ctx.int_ptr and not out.offset % rdt.itemsize
              and (out._flags or out.flags).c_contiguous):
            res = out
        else:
            return None
        return self._launch(la, x, res, view, exclusive, None)

    def segments(self, x: Any, offsets: Any, exclusive: bool = False, out: Any = None, *,
                 check: bool | None = None) -> cla.Array:
        """The scan of a 1-D x restarting at each CSR offset: offsets[0] == 0, non-decreasing,
        offsets[-1] == x.size (empty segments allowed); a numpy array of integers (checked on
        the host every call, then copied without waiting on the queue) or a 1-D contiguous
        int32/int64 device array (used in place; read back and checked the first time that
        array is used with check=None, every call with check=True, never with check=False:
        bad device offsets then give a wrong answer, never a load outside x)."""
        xd = self._input(x)
        if xd.ndim != 1:
            raise ValueError("segments() scans a 1-D array")
        n = xd.size
        if isinstance(offsets, cla.Array):
            if (offsets.dtype not in (np.int32, np.int64) or offsets.ndim != 1
                    or not offsets.flags.c_contiguous or offsets.size < 1):
                raise TypeError("device offsets must be a 1-D contiguous int32 or int64 array "
                                "of m + 1 >= 1 bounds")
            if offsets.context.int_ptr != self.ctx.int_ptr:
                raise ValueError("offsets lives in another OpenCL context than this scanner")
            key = (offsets.base_data.int_ptr, offsets.offset, offsets.size, offsets.dtype.num)
            if check or (check is None and key not in self._checked):
                _check_offsets(offsets.get(self.queue), n)
                self._checked[key] = None
                while len(self._checked) > 256:
                    self._checked.pop(next(iter(self._checked)))
            if offsets.offset:  # the kernel reads bounds from the start of a buffer
                offsets = offsets.copy(queue=self.queue)
            ob, off64, m, oevs = (offsets.base_data, offsets.dtype == np.int64,
                                  offsets.size - 1, list(offsets.events))
        else:
            od, m, off64 = self._host_offsets(offsets, n)
            ob, oevs = od.base_data, list(od.events)
        res = self._out(out, (n,), "C")
        if n == 0:
            return res
        la = self._seg_la.get(n)
        if la is None:
            la, _ = self._engine("rows").served((1, n, 1))
            self._seg_la.keep(n, la)
        isz, osz = self._isz, self._osz
        oe = res.events
        if xd.events or oevs or oe and not (len(oe) == 1 and oe[0] is self._last
                                          and self._in_order):
            waits = pending(xd.events, oe, oevs, in_order=self._in_order)
        else:  # only our own last launch, on this in-order queue: ordered anyway
            waits = None
        evs = la.enqueue(self.queue, xd.base_data, xd.offset // isz, res.base_data,
                         res.offset // osz, (1, n, 1), exclusive=bool(exclusive),
                         offsets=ob, m=m, off64=bool(off64), wait_for=waits or None)
        res.events[:] = [evs[-1]]  # after everything it had: the launch waited or queued behind
        self._last = evs[-1]
        return res

    def _host_offsets(self, offsets: Any, n: int) -> tuple[cla.Array, int, bool]:
        """(device copy, m, 64-bit) of host offsets, checked; kept, by the caller's bytes and
        n, for the next calls with the same values (they usually repeat): no checks and no
        upload then. An upload waits for the queue to drain on some drivers even when asked
        not to block (pageable host memory: NVIDIA's, Intel's CPU runtime), and the checks
        cost more host time than a small scan."""
        o = np.asarray(offsets)
        key = None
        if o.ndim == 1 and o.dtype.kind in "iu":
            oc = np.ascontiguousarray(o)
            key = (oc.dtype.str, oc.size, n,
                   oc.tobytes() if oc.nbytes <= 1 << 15 else hashlib.blake2b(oc).digest())
            hit = self._offsets.get(key)
            if hit is not None:
                return hit
        o = _check_offsets(o, n)
        off64 = n >= 2**31 - 1
        od = cla.to_device(self.queue, np.ascontiguousarray(o if off64 else o.astype(np.int32)),
                           allocator=self._pool)
        val = (od, len(o) - 1, off64)
        if key is not None:
            self._offsets[key] = val
            while len(self._offsets) > 8:
                self._offsets.pop(next(iter(self._offsets)))
        return val

    def explain(self, shape: Any, axis: Any = None) -> ScanExplanation:
        """Which config serves a scan of an array of `shape` along `axis`, and why."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        view, layout = self.view(shape, axis)
        _, ex = self._engine(layout).served(view)
        return ex


def _check_offsets(offs: np.ndarray, n: int) -> np.ndarray:
    """CSR bounds for n elements as int64, or ValueError saying what is wrong."""
    if offs.ndim != 1 or offs.size < 1 or not np.issubdtype(offs.dtype, np.integer):
        raise ValueError("offsets must be a 1-D array of integers (m + 1 bounds)")
    o = offs.astype(np.int64)
    if o[0] != 0 or o[-1] != n:
        raise ValueError(f"offsets must start at 0 and end at x.size ({n}); got "
                         f"{o[0]} .. {o[-1]}")
    d = np.diff(o)
    if (d < 0).any():
        i = int(np.flatnonzero(d < 0)[0])
        raise ValueError(f"offsets must be non-decreasing (offsets[{i + 1}] = {o[i + 1]} "
                         f"< offsets[{i}] = {o[i]})")
    return o


def get_scanner(queue: cl.CommandQueue, op: str = "sum", dtype: Any = np.float32, *,
                db: str | None = None) -> Scanner:
    """The scanner of `op` (sum, prod, min, max) over `dtype` on the queue's device, served by
    the tuned config of each call's class (else the builtin one)."""
    key = (queue.int_ptr, op, np.dtype(dtype), db)  # a dtype hashes as fast as its name
    return _scanners.get(queue.context, key, lambda: Scanner(queue, op, dtype, db))


#: (op, queue, dtype) -> the scanner of a plain call (a device array on its own queue, no
#: dtype=): `cltune.cumsum(x)` called again skips the scanner's look-up (~1.5 us a call)
_plain: PreparedCalls = PreparedCalls()


def _scan(op: str, x: Any, axis: Any, dtype: Any, out: Any, queue: cl.CommandQueue | None,
          ) -> cla.Array:
    if dtype is None and queue is None and type(x) is cla.Array:
        s = _plain.get((op, x.queue, x.dtype))
        if s is not None:
            return s(x, axis=axis, out=out)
    if isinstance(x, cla.Array):
        q = queue or x.queue
        if q is None:
            raise TypeError("x has no queue: pass queue=")
        if dtype is not None and np.dtype(dtype) != x.dtype:
            x = x.astype(np.dtype(dtype))
    elif isinstance(x, np.ndarray):
        if queue is None:
            raise TypeError("a numpy input needs queue= (the device to scan on)")
        q = queue
        if dtype is not None:
            x = x.astype(np.dtype(dtype))
    else:
        raise TypeError(f"x must be a pyopencl.array.Array or numpy array, not "
                        f"{type(x).__name__}")
    s = get_scanner(q, op, x.dtype)
    if dtype is None and queue is None and type(x) is cla.Array:
        _plain.keep((op, x.queue, x.dtype), s)
    want = s.result_dtype if dtype is None or op in ("min", "max") else np.dtype(dtype)
    if want == s.result_dtype:
        return s(x, axis=axis, out=out)
    res = s(x, axis=axis)  # integer sums in 64 bits; numpy's narrower dtype= wraps the same
    res = res.astype(want)
    if out is not None:
        if not (isinstance(out, cla.Array) and out.dtype == want and out.shape == res.shape):
            raise TypeError(f"out must be a pyopencl Array of shape {res.shape} and dtype {want}")
        cl.enqueue_copy(q, out.base_data, res.data, dst_offset=out.offset,
                        byte_count=res.nbytes)
        return out
    return res


def cumsum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, *,
           queue: cl.CommandQueue | None = None) -> cla.Array:
    """numpy.cumsum on the device: `cumsum(x)` of the flattened array, `axis=k` along an
    axis; `dtype` as numpy's (the accumulation and result type)."""
    if dtype is None and queue is None and type(x) is cla.Array:  # the warm call: one frame less
        s = _plain.get(("sum", x.queue, x.dtype))
        if s is not None:
            return s(x, axis, False, out)
    return _scan("sum", x, axis, dtype, out, queue)


def cumprod(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, *,
            queue: cl.CommandQueue | None = None) -> cla.Array:
    """numpy.cumprod on the device (see cumsum)."""
    if dtype is None and queue is None and type(x) is cla.Array:  # the warm call: one frame less
        s = _plain.get(("prod", x.queue, x.dtype))
        if s is not None:
            return s(x, axis, False, out)
    return _scan("prod", x, axis, dtype, out, queue)


def cummax(x: Any, axis: Any = None, out: Any = None, *,
           queue: cl.CommandQueue | None = None) -> cla.Array:
    """numpy.maximum.accumulate on the device (NaN propagates); axis=None scans the flattened
    array."""
    return _scan("max", x, axis, None, out, queue)


def cummin(x: Any, axis: Any = None, out: Any = None, *,
           queue: cl.CommandQueue | None = None) -> cla.Array:
    """numpy.minimum.accumulate on the device (NaN propagates)."""
    return _scan("min", x, axis, None, out, queue)


def tune_generic(knl: Any, sample_args: tuple[Any, ...], **kw: Any) -> list[Any]:
    """`GenericScanKernel.tune`: the tuner on the kernel (cltune.tuning.kernels)."""
    from cltune.tuning.kernels import tune_scan_kernel  # lazy: the tuner loads optuna

    return tune_scan_kernel(knl, sample_args, **kw)


def tune_generic_in_background(knl: Any, dev: cl.Device, n: int, budget_s: float) -> Any:
    """`GenericScanKernel(..., tune="first-use")`'s background run: the thread."""
    from cltune.tuning.kernels import start_background_scan  # lazy: the tuner loads optuna

    return start_background_scan(knl, dev, n, budget_s)
