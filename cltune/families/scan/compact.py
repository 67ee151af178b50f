"""Stream compaction on the tuned scan, with pyopencl.algorithm's signatures (and numpy's for
`nonzero`):

    >>> out, count, ev = cltune.copy_if(x, "ary[i] > threshold",
    ...                                 extra_args=[("threshold", np.float32(0.5))])
    >>> kept = out[:int(count.get())]
    >>> idx = cltune.nonzero(x)            # a tuple of int64 device arrays, like numpy's

A reduce-then-scan over the predicate itself (the application's OpenCL C expression of
`ary[i]`, `i` and the extra arguments, compiled as pyopencl compiles it; kernels/compact.cl):
each chunk's kept elements counted (one launch), then each chunk's group sums the counts before
its own and packs its kept elements there in order (a second launch; no launch of its own scans
the counts): about two reads of the input and one write of what is kept, no flags or positions
arrays (pyopencl's copy_if writes and reads both). The count stays on the device
(pyopencl's contract); `nonzero` (numpy's, scan/nonzero.py) runs on it too.

The predicate is the application's code and the driver is untrusted (house rule 17): before
this process builds a predicate's program, the program runs once in the device's worker on the
first elements of the call's own arrays and is checked against a one-work-item walk of the
same predicate (`clt_sel_serial`); the verdict is kept per fingerprint, driver and program
(`isolation.vetting.checked`). A program that crashed, hung or answered wrong there is never
built here (`NoConfigRuns` says why).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import dtype_to_ctype

from cltune.device.select import info_for
from cltune.isolation.vetting import NoConfigRuns, checked
from cltune.opencl.build import compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order, pending
from cltune.opencl.kernel_args import flat_grid, set_scalar
from cltune.opencl.pools import pool_for
from cltune.opencl.prepared import PreparedCalls
from cltune.opencl.scalars import ResultFactory
from cltune.opencl.sources import kernel_file, text_hash

__all__ = ["copy_if", "partition", "remove_if", "unique"]

_programs: ContextCache[Any] = ContextCache()
#: this module's own text, in the vetting key (how it launches the program is vetted too)
_HOST = text_hash(Path(__file__).read_text())
_L = np.int64
#: the most elements of the call's array a program is vetted on (odd: a partial last tile;
#: ~10-20 groups on GPUs, every chunk on CPUs)
VET_ELEMENTS = 20011
#: extra arrays of up to this many bytes are copied whole into the vetting input, larger ones
#: their first VET_EXTRA_BYTES (VET_ELEMENTS elements at least)
VET_EXTRA_BYTES = 1 << 26


#: expressions checked before -> their text as compiled (a warm call's look-up)
_exprs: dict[str, str] = {}


def _check_expr(text: Any, what: str) -> str:
    if type(text) is str:
        done = _exprs.get(text)
        if done is not None:
            return done
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string of OpenCL C, not {type(text).__name__}")
    text = text.replace("//CL//", "\n")  # pyopencl's marker (its _process_code_for_macro)
    if "//" in text:
        raise ValueError(f"{what}: // comments are not allowed in expressions; use /* */")
    checked = text.replace("\n", " ")
    if type(text) is str and len(_exprs) < 1024:
        _exprs[text] = checked
    return checked


def _extra(extra_args: Any) -> list[tuple[str, Any]]:
    if extra_args is None:
        return []
    out = []
    for item in extra_args:
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and isinstance(item[0], str) and item[0].isidentifier()):
            raise TypeError("extra_args must be (name, value) pairs with identifier names")
        name, value = item
        if name in ("ary", "i", "n") or name.startswith("clt_"):
            raise ValueError(f"extra argument name {name!r} is reserved (ary, i, n, clt_*)")
        if not isinstance(value, (cla.Array, np.generic)):
            raise TypeError(f"extra argument {name!r}: a numpy scalar (np.float32(0.5)) or a "
                            "pyopencl Array, not " + type(value).__name__)
        if isinstance(value, cla.Array) and value.size and not value.flags.forc:
            raise ValueError(f"extra argument {name!r} must be contiguous (a strided view "
                             "would be read as if it were not: copy it first)")
        out.append((name, value))
    return out


def _prelude(elem: np.dtype, pred: str, extra: list[tuple[str, Any]], preamble: str) -> str:
    decl = ["__global const clt_elem_t *ary_base, const long ary_off,"]
    prep = ["__global const clt_elem_t *ary = ary_base + ary_off;"]
    for name, v in extra:
        ct = dtype_to_ctype(v.dtype)
        if isinstance(v, cla.Array):
            decl.append(f"__global {ct} *{name}_base, const long {name}_off,")
            prep.append(f"__global {ct} *{name} = {name}_base + {name}_off;")
        else:
            decl.append(f"const {ct} {name},")
    return "\n".join([
        "/* generated by cltune.families.scan.compact from the application's predicate */",
        "#pragma OPENCL EXTENSION cl_khr_fp64: enable" if elem == np.float64 or any(
            v.dtype == np.float64 for _, v in extra) else "",
        preamble,
        "#define CLT_HAVE_USER 1",
        f"typedef {dtype_to_ctype(elem)} clt_elem_t;",
        f"#define CLT_PRED(i) ({pred})",
        "#define CLT_USER_ARGS " + " ".join(decl),
        "#define CLT_USER_PREP " + " ".join(prep),
        "",
    ])


class _Kernels:
    """A program's kernels by name, retrieved once (kernel arguments are per object: calls
    holding the lock set and enqueue them together)."""

    def __init__(self, prg: cl.Program) -> None:
        for k in prg.all_kernels():
            setattr(self, k.function_name, k)
        self.lock = threading.Lock()


def _program(ctx: cl.Context, dev: cl.Device, source: str, opts: tuple[str, ...]) -> Any:
    return _programs.get(ctx, (dev.int_ptr, source, opts),
                         lambda: _Kernels(compile_program(ctx, dev, source, list(opts))))


def _args_of(ary: cla.Array, extra: list[tuple[str, Any]]) -> list[Any]:
    args: list[Any] = [ary.base_data, _L(ary.offset // ary.dtype.itemsize)]
    for _, v in extra:
        if isinstance(v, cla.Array):
            args += [v.base_data, _L(v.offset // v.dtype.itemsize)]
        else:
            args.append(v)
    return args


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _use_ballot(dev: cl.Device) -> int:
    """1: the scatter by warp ballots (inline PTX) on NVIDIA's platform; 0 elsewhere: the kept
    elements packed through __local memory (2, for tests: the ballots emulated)."""
    return int(not (dev.type & cl.device_type.CPU) and info_for(dev).is_nvidia)


def _shape_of(dev: cl.Device, out_size: int, ballot: bool = False) -> tuple[int, int, int]:
    """(work-group size, items a work-item, groups per compute unit): CPUs walk a chunk a
    work-item in order; NVIDIA's ballots take 256 x 4, 8 groups a compute unit (no tile in
    __local; the H200's best or within 1 us of it at 2^20 and 2^24, 210 us at 2^26 where
    256 x 8 takes 288: scripts/experiments/compact_shapes.py); other GPUs stage tiles of
    256 x 8 through __local memory (fewer items where large elements would not fit)."""
    if dev.type & cl.device_type.CPU:
        return 1, 1, 4
    if ballot and dev.max_work_group_size >= 256:
        return 256, 4, 8
    wg = 1 << (min(256, dev.max_work_group_size).bit_length() - 1)
    items = 8
    while items > 1 and (wg * items * 33 // 32 + 1) * (1 + out_size) + wg * out_size \
            + wg * items * out_size + 20 * wg + 256 > dev.local_mem_size:
        items //= 2
    while wg > 1 and (wg * items * 33 // 32 + 1) * (1 + out_size) + wg * items * out_size \
            + 24 * wg + 256 > dev.local_mem_size:
        wg //= 2
    return wg, items, 4


def describe(dev: cl.Device, out_size: int) -> str:
    """How compaction runs on `dev` for results of `out_size` bytes (for benchmarks' tables)."""
    ballot = _use_ballot(dev)
    wg, items, per_cu = _shape_of(dev, out_size, bool(ballot))
    how = ", warp ballots" if ballot and wg % 32 == 0 else ""
    return (f"kernels/compact.cl: groups of {wg} x {items}, {per_cu} chunks a compute "
            f"unit{how}; two launches")


_prepared: ContextCache[tuple] = ContextCache()
_I64 = np.dtype(np.int64)
#: the index dtype of each CLT_SEL_INDEX mode (kernels/compact.cl)
INDEX_DTYPES = {1: _I64, 2: np.dtype(np.int32)}


def _device_shape(dev: cl.Device, out_size: int) -> tuple[int, int, int, int]:
    """(work-group size, items a work-item, chunks per compute unit, CLT_SEL_BALLOT) on dev."""
    mode = _use_ballot(dev)
    wg, items, per_cu = _shape_of(dev, out_size, bool(mode))
    return wg, items, per_cu, (mode if wg % 32 == 0 else 0)  # a warp is 32 work-items


def _prepare(q: cl.CommandQueue, elem: np.dtype, pred: str, extra: list[tuple[str, Any]],
             preamble: str, index: int, shape: tuple[int, int, int, int],
             sample: Callable[[], tuple] | None) -> Any:
    """The program of this predicate and shape (`_device_shape`), vetted first (`sample()`:
    the vetting input, made only when the verdict is not known; None: in the worker)."""
    dev = q.device
    wg, items, _, mode = shape
    opts = (f"-DCLT_SEL_WG={wg}", f"-DCLT_SEL_ITEMS={items}", f"-DCLT_SEL_INDEX={int(index)}",
            f"-DCLT_SEL_BALLOT={mode}")
    src = _prelude(elem, pred, extra, preamble) + kernel_file("compact.cl")
    if sample is not None:
        _vet(dev, src, opts, elem, pred, extra, preamble, index, shape, sample)
    prg = _program(q.context, dev, src, opts)
    # typed scalars: pyopencl then packs each argument directly (untyped, it inspects each one:
    # tens of us of host time per call)
    user: list[Any] = [None, _L]
    for _, v in extra:
        user += [None, _L] if isinstance(v, cla.Array) else [v.dtype]
    with prg.lock:
        prg.clt_sel_count.set_scalar_arg_dtypes([*user, _L, _L, None])
        prg.clt_sel_scatter.set_scalar_arg_dtypes([*user, _L, _L, None, None, None, np.uint32,
                                                   None, _L, _L])
        prg.clt_sel_serial.set_scalar_arg_dtypes([*user, _L, None, None, None])
    return prg


def _vet(dev: cl.Device, src: str, opts: tuple[str, ...], elem: np.dtype, pred: str,
         extra: list[tuple[str, Any]], preamble: str, index: int,
         shape: tuple[int, int, int, int], sample: Callable[[], tuple]) -> None:
    """Raise NoConfigRuns unless this program ran right in the device's worker (or failed to
    compile cleanly: building it here then raises the compiler's error, as pyopencl does)."""
    info = info_for(dev)
    key = f"{elem.str}/i{index}/{text_hash(src + chr(0) + ' '.join(opts))}/{_HOST}"
    v = checked(info, "compact", key, check_select, elem.str, pred,
                [(name, "a" if isinstance(val, cla.Array) else "s") for name, val in extra],
                preamble, index, shape, args_of=sample)
    if not v.buildable:
        raise NoConfigRuns(
            f"cltune: compaction with this predicate ({pred[:80]!r}, {elem.name}) {v.step} "
            f"in vetting on {info.name} ({v.reason[:300]}); it is not run in this process "
            "(CLTUNE_TRUST_DRIVER=1 runs it anyway)")


def _sample(ary: cla.Array, extra: list[tuple[str, Any]]) -> tuple:
    """The vetting input: the call's array (its first VET_ELEMENTS elements where it has more
    than VET_EXTRA_BYTES) and its extra arguments (arrays copied, up to VET_EXTRA_BYTES each),
    as host data: a predicate that reads by the extra scalars' values (a length, a reversed
    index) reads the same elements in the worker as here, but for the largest arrays."""
    m = ary.size if ary.nbytes <= VET_EXTRA_BYTES else min(ary.size, VET_ELEMENTS)
    data = ary.reshape(ary.size)[:m].get()
    vals = []
    for _, v in extra:
        if isinstance(v, cla.Array):
            flat = v.reshape(v.size) if v.flags.forc else v
            if v.nbytes > VET_EXTRA_BYTES and flat.ndim == 1:  # at least as many as ary's
                flat = flat[:max(VET_ELEMENTS, VET_EXTRA_BYTES // v.dtype.itemsize)]
            vals.append(np.ascontiguousarray(flat.get()))
        else:
            vals.append(v)
    return data, vals


def check_select(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: Any,
                 elem_str: str, pred: str, kinds: list[tuple[str, str]], preamble: str,
                 index: int, shape: tuple[int, int, int, int], data: np.ndarray,
                 values: list[Any]) -> str:
    """Vetting's check (isolation.vetting.checked, run in the device's worker): the two
    launches of every call form of this program (kept only, both sides, a fixed size's fill,
    and for indices the unravel kernel) against `clt_sel_serial`; '' or what differed."""
    elem = np.dtype(elem_str)
    ary = cla.to_device(queue, np.ascontiguousarray(data, elem))
    extra = [(name, cla.to_device(queue, v) if kind == "a" else v)
             for (name, kind), v in zip(kinds, values, strict=True)]
    n = ary.size
    odt = INDEX_DTYPES[index] if index else elem
    shape = tuple(int(v) for v in shape)
    prg = _prepare(queue, elem, pred, extra, preamble, index, shape, None)
    ref_t, ref_f = (cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(1, n) * odt.itemsize)
                    for _ in range(2))
    ref_c = cla.zeros(queue, (), np.int64)
    with prg.lock:
        prg.clt_sel_serial.set_args(*_args_of(ary, extra), n, ref_t, ref_f, ref_c.data)
        cl.enqueue_nd_range_kernel(queue, prg.clt_sel_serial, (1,), (1,))
    c = int(ref_c.get())
    want_t, want_f = np.empty(n, odt), np.empty(n, odt)
    if n:
        cl.enqueue_copy(queue, want_t, ref_t)
        cl.enqueue_copy(queue, want_f, ref_f)
    want_t, want_f = want_t[:c], want_f[:n - c]
    forms = [(False, 0, 0), (True, 0, 0)] + ([(False, n + 5, 3), (False, max(0, c - 1), 3)]
                                             if index else [])
    for with_false, fill_to, fill in forms:
        out, out_false, count, _, _, _ = select(ary, pred, extra, preamble, queue, None,
                                               with_false=with_false, index=index,
                                               fill_to=fill_to, fill=fill, shape=shape)
        got_c = int(count.get())
        got = out.get()
        what = f"with_false={with_false} fill_to={fill_to}"
        if got_c != c:
            return f"compaction counted {got_c} kept of {n}, the serial walk {c} ({what})"
        if got[:c].tobytes() != want_t.tobytes():
            return f"compaction's kept elements differ from the serial walk's ({what})"
        if with_false and out_false.get()[:n - c].tobytes() != want_f.tobytes():
            return f"compaction's other elements differ from the serial walk's ({what})"
        if fill_to > c and np.any(got[c:fill_to] != fill):
            return f"compaction's fill of out[{c}:{fill_to}] is wrong ({what})"
    if index and c:
        flat = cla.to_device(queue, want_t)
        res = cla.empty(queue, (c + 2,), odt)
        for narrow in (0, 1):
            with prg.lock:
                prg.clt_unravel.set_args(flat.data, ref_c.data, _L(c + 2), _L(7), _L(13),
                                         _L(-1), np.uint32(narrow), res.data)
                cl.enqueue_nd_range_kernel(queue, prg.clt_unravel, *flat_grid(c + 2))
            want = np.concatenate([(want_t.astype(np.int64) // 7) % 13, [-1, -1]])
            if not np.array_equal(res.get().astype(np.int64), want):
                return f"clt_unravel's indices are wrong (narrow={narrow})"
    return ""


#: prepared compaction calls: (queue, dtype, n, predicate, ...) -> _plan's tuple
_plans = PreparedCalls()


def _plan(q: cl.CommandQueue, elem: np.dtype, n: int, pred: str, extra: list[tuple[str, Any]],
          sig: tuple, preamble: str, index: int, sample: Callable[[], tuple],
          shape: tuple[int, int, int, int] | None) -> tuple:
    """(program, work-group size, groups, chunk, result dtype, pool, the queue when in order,
    the results' factories (made by the first call), the chunks' scratch when in order) of a
    call on n elements."""
    odt = INDEX_DTYPES[index] if index else elem
    # the program and kernel shape of this predicate: made once (the source, the device's
    # limits and the program lookup cost more host time per call than the kernels take)
    shape = shape or _device_shape(q.device, odt.itemsize)
    wg, items, per_cu, _ = shape
    cus = q.device.max_compute_units
    prg = _prepared.get(q.context, (q.device.int_ptr, elem.str, pred, sig, preamble, index, shape),
                        lambda: _prepare(q, elem, pred, extra, preamble, index, shape, sample))
    pool = pool_for(q)  # no free (a device sync on NVIDIA) per call
    tile = wg * items
    groups = max(1, min(_cdiv(n, tile), per_cu * cus))
    chunk = max(1, _cdiv(_cdiv(n, groups), tile)) * tile  # whole tiles
    groups = max(1, _cdiv(n, chunk))
    ordered = in_order(q)
    starts = None
    if ordered is not None:  # kept: the queue runs each call's launches before the next's
        starts = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, groups * 8)
    return prg, wg, groups, chunk, odt, pool, ordered, {}, starts


def _quick(ary: cla.Array, extra_args: Any) -> tuple[tuple, list, list] | None:
    """(signature, arguments, event lists) of a call whose array and extra arguments need no
    check beyond these (the names are checked by `_extra` when a key is first seen): a
    non-empty contiguous Array, and (name, numpy scalar or contiguous Array) tuples in a list
    or tuple; else None (the long path checks and explains). Offsets are element counts."""
    if not ary.size or not (ary._flags or ary.flags).forc:
        return None
    args = [ary.base_data, ary.offset // ary.dtype.itemsize]
    events = [ary.events]
    if extra_args is None:
        return (), args, events
    t = type(extra_args)
    if t is not list and t is not tuple:
        return None
    sig = []
    for item in extra_args:
        if type(item) is not tuple or len(item) != 2 or type(item[0]) is not str:
            return None
        name, v = item
        if type(v) is cla.Array:
            if v.size and not (v._flags or v.flags).forc:
                return None
            sig.append((name, "a", v.dtype))
            args += [v.base_data, v.offset // v.dtype.itemsize]
            events.append(v.events)
        elif isinstance(v, np.generic):
            sig.append((name, "s", v.dtype))
            args.append(v)
        else:
            return None
    return tuple(sig), args, events


def _slots(sig: tuple) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The user arguments' places by kind: (buffers, offsets, scalars)."""
    bufs, offs, scalars = [0], [1], []
    i = 2
    for _, kind, _ in sig:
        if kind == "a":
            bufs.append(i)
            offs.append(i + 1)
            i += 2
        else:
            scalars.append(i)
            i += 1
    return tuple(bufs), tuple(offs), tuple(scalars)


def select(ary: cla.Array, pred: str, extra_args: Any, preamble: str,
           queue: cl.CommandQueue | None, wait_for: Sequence[cl.Event] | None,
           with_false: bool = False, index: int = 0, fill_to: int = 0, fill: int = 0,
           shape: tuple[int, int, int, int] | None = None, length: int | None = None,
           ) -> tuple[cla.Array, cla.Array | None, cla.Array, cl.Event | None,
                      cl.CommandQueue, Any]:
    """(out, out_false, count, event, queue, program): the kept elements (their indices with
    `index`: 1 as int64, 2 as int32) in order in out[:count], the others in out_false[:n -
    count] (with_false); with `index` and `fill_to`, out holds fill_to elements at least and
    out[count:fill_to] = fill (nonzero of a fixed size). `shape` (vetting's check) overrides
    the device's kernel shape. `length`: out's shape is (length,) (its buffer still holds
    what the scatter writes: nonzero's first `size` indices, without a slice a call)."""
    quick = _quick(ary, extra_args) if type(ary) is cla.Array else None
    q = queue or ary.queue if quick is not None else None
    if quick is not None and q is not None and type(preamble) is str:
        sig, args, events = quick
    else:
        if not isinstance(ary, cla.Array):
            raise TypeError(f"ary must be a pyopencl Array, not {type(ary).__name__}")
        if ary.size and not ary.flags.forc:
            raise ValueError("ary must be contiguous (a strided view would be read as if it "
                             "were not: copy it first)")
        q = queue or ary.queue
        if q is None:
            raise TypeError("ary has no queue: pass queue=")
        extra = _extra(extra_args)
        if not isinstance(preamble, str):
            raise TypeError("preamble must be a string of OpenCL C")
        sig = tuple((name, "a" if isinstance(v, cla.Array) else "s", v.dtype)
                    for name, v in extra)
        args = _args_of(ary, extra)
        for i in _slots(sig)[1]:
            args[i] = int(args[i])
        events = [ary.events, *(v.events for _, v in extra if isinstance(v, cla.Array))]
    n = ary.size
    # the prepared call of this key (issue 39): the program, the launch geometry, the pool and
    # (on an in-order queue, which runs one call's two launches before the next call's) the
    # chunks' scratch, found by one look-up; a call then allocates its results, sets the
    # arguments and enqueues
    key = (q, ary.dtype, n, pred, sig, preamble, with_false, index, fill_to, fill, shape,
           _shape_of, _use_ballot, length)
    plan = _plans.hit(key) if n else None
    if plan is None:
        if quick is not None:  # a key not seen: the names are checked now
            extra = _extra(extra_args)
        if n == 0:  # nothing to launch, so nothing built (or vetted: there is no input)
            empty = cla.empty(q, (0,), INDEX_DTYPES[index] if index else ary.dtype)
            return (empty, (empty if with_false else None), cla.zeros(q, (), np.int64), None,
                    q, None)
        plan = _plan(q, ary.dtype, n, pred, extra, sig, preamble, index,
                     lambda: _sample(ary, extra), shape)
        _plans.keep(key, plan)
    prg, wg, groups, chunk, odt, pool, ordered, made, starts = plan
    # the results from templates (opencl.scalars.ResultFactory: ~2 us a result less than
    # pyopencl's fast constructor, whose general form spends ~15 us on checks), kept with the
    # plan
    if not made:
        held = max(n, fill_to)
        made["out"] = ResultFactory(q, odt, pool, (held if length is None else length,),
                                    alloc_bytes=held * odt.itemsize)
        made["count"] = ResultFactory(q, _I64, pool)
        if with_false:
            made["false"] = ResultFactory(q, odt, pool, (n,))
        made["slots"] = _slots(sig)
    out = made["out"]()
    out_false = made["false"]() if with_false else None
    count = made["count"]()
    if starts is None:  # an out-of-order queue: scratch of this call's own
        starts = pool.allocate(groups * 8) if pool is not None else \
            cl.Buffer(q.context, cl.mem_flags.READ_WRITE, groups * 8)
    # waited events: NVIDIA's driver pays a host round trip (~50 us) for each one a kernel
    # waits on, even one already complete; an in-order queue orders its own commands anyway
    waits = None
    if wait_for or any(events):
        waits = pending(list(wait_for or []), *events, in_order=ordered)
    of = out_false if out_false is not None else out
    na = len(args)
    bufs, offs, scalars = made["slots"]
    with prg.lock:
        k1, k3 = prg.clt_sel_count, prg.clt_sel_scatter
        # the kernels still hold this plan's arguments (its last call set them, the same
        # scratch): only the input's and the results' buffers, the offsets that changed and
        # the extra scalars are set
        if getattr(k1, "_clt_plan", None) is made and made["starts"] is starts:
            for i in bufs:
                v = args[i]
                k1.set_arg(i, v)
                k3.set_arg(i, v)
            last = made["offsets"]
            for i in offs:
                v = args[i]
                if last[i] != v:
                    set_scalar(k1, i, _L(v))
                    set_scalar(k3, i, _L(v))
                    last[i] = v
            for i in scalars:
                v = args[i]
                set_scalar(k1, i, v)
                set_scalar(k3, i, v)
            k3.set_arg(na + 3, out.base_data)
            k3.set_arg(na + 4, of.base_data)
            k3.set_arg(na + 6, count.base_data)
        else:
            typed = [_L(v) if i in offs else v for i, v in enumerate(args)]
            k1.set_args(*typed, n, chunk, starts)
            k3.set_args(*typed, n, chunk, starts, out.base_data, of.base_data,
                        int(with_false), count.data, fill_to, fill)
            k1._clt_plan = k3._clt_plan = made
            made["starts"] = starts
            made["offsets"] = {i: args[i] for i in offs}
        e1 = cl.enqueue_nd_range_kernel(q, k1, (groups * wg,), (wg,), None, waits)
        ev = cl.enqueue_nd_range_kernel(q, k3, (groups * wg,), (wg,), None,
                                        None if ordered else [e1])
    # fresh results: their event lists are empty (pyopencl's add_event only trims long lists)
    count.events.append(ev)
    out.events.append(ev)
    if out_false is not None:
        out_false.events.append(ev)
    return out, out_false, count, ev, q, prg


def copy_if(ary: cla.Array, predicate: str, extra_args: Any = None, preamble: str = "",
            queue: cl.CommandQueue | None = None, wait_for: Sequence[cl.Event] | None = None,
            ) -> tuple[cla.Array, cla.Array, cl.Event | None]:
    """pyopencl.algorithm.copy_if: (out, count, event); out[:count] are the elements of `ary`
    for which `predicate` (OpenCL C of `ary[i]`, `i`, the extra arguments) holds, in order;
    count is a device scalar (int64)."""
    pred = _check_expr(predicate, "predicate")
    out, _, count, ev, _, _ = select(ary, pred, extra_args, preamble, queue, wait_for)
    return out, count, ev


def remove_if(ary: cla.Array, predicate: str, extra_args: Any = None, preamble: str = "",
              queue: cl.CommandQueue | None = None, wait_for: Sequence[cl.Event] | None = None,
              ) -> tuple[cla.Array, cla.Array, cl.Event | None]:
    """pyopencl.algorithm.remove_if: copy_if of the elements for which `predicate` fails."""
    return copy_if(ary, f"!({_check_expr(predicate, 'predicate')})", extra_args, preamble,
                   queue, wait_for)


def partition(ary: cla.Array, predicate: str, extra_args: Any = None, preamble: str = "",
              queue: cl.CommandQueue | None = None, wait_for: Sequence[cl.Event] | None = None,
              ) -> tuple[cla.Array, cla.Array, cla.Array, cl.Event | None]:
    """pyopencl.algorithm.partition: (out_true, out_false, count, event); out_true[:count]
    holds the elements for which `predicate` holds, out_false[:n - count] the others, each in
    order."""
    pred = _check_expr(predicate, "predicate")
    out, out_false, count, ev, _, _ = select(ary, pred, extra_args, preamble, queue, wait_for,
                                           with_false=True)
    return out, out_false, count, ev  # type: ignore[return-value]


def unique(ary: cla.Array, is_equal_expr: str = "a == b", extra_args: Any = None,
           preamble: str = "", queue: cl.CommandQueue | None = None,
           wait_for: Sequence[cl.Event] | None = None,
           ) -> tuple[cla.Array, cla.Array, cl.Event | None]:
    """pyopencl.algorithm.unique: (out, count, event); the first element of every run of
    equal neighbours (`is_equal_expr` of `a` and `b`), in order."""
    eq = _check_expr(is_equal_expr, "is_equal_expr")
    pre = f"{preamble}\n#define CLT_EQ(a, b) ({eq})"
    return copy_if(ary, "(i) == 0 || !CLT_EQ(ary[(i) - 1], ary[(i)])", extra_args, pre,
                   queue, wait_for)
