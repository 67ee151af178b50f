"""pyopencl's scan kernels on cltune's scan: `GenericScanKernel`, `InclusiveScanKernel`,
`ExclusiveScanKernel` with pyopencl's constructors and calls (kernels/generic_scan.cl);
`cltune.use_in_pyopencl()` (cltune.dropin.switch) swaps them into pyopencl.scan and
pyopencl.algorithm, so that `copy_if`, `remove_if`, `partition`, `unique`, `RadixSort` and
`ListOfListsBuilder` run on them:

    >>> knl = cltune.GenericScanKernel(ctx, np.int32, "__global int *x, __global int *y",
    ...                                "x[i]", "a+b", "0", "y[i] = prev_item")
    >>> knl(x, y)                                      # an exclusive prefix sum
    >>> with cltune.use_in_pyopencl():
    ...     out, count, ev = pyopencl.algorithm.copy_if(x, "ary[i] > 0")

The expressions are the application's code, compiled as pyopencl compiles them (never read
from the database). Every work-item scans a contiguous range and every combine joins
neighbours in order, so `scan_expr` need only be associative (pyopencl's contract), not
commutative.

Tuned like `cltune.ReductionKernel` (family `gscan`, cltune.families.scan.gscan_*): the
work-group size and the chunks a compute unit are looked up per call size by the kernel's
fingerprint (never its text) in the tuning database, else shaped like the device's tuned plain
scan (`derived`), else from the device's limits (`builtin`); `knl.explain(n)` says which and
why. `knl.tune(*sample_args)` tunes it (each config run in the device's worker against the
one-work-item walk), `tune="first-use"` does so in a background thread at the first call, and
`cltune tune --kernel module:attribute` from the command line.

The expressions are the application's code and the driver is untrusted (house rule 17): the
first call on a device builds and runs the program in the device's worker, on copies of that
call's arguments, against a one-work-item walk of the same expressions (`clt_gs_serial`,
`check_scan`); the verdict is kept per fingerprint, driver and program. A crash or hang there
and the program is never built here (`NoConfigRuns`); answers that differ (float rounding of
another order, or an output statement that reads what others write) are a warning.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import (
    VectorArg,
    dtype_to_ctype,
    get_arg_list_scalar_arg_dtypes,
    get_arg_offset_adjuster_code,
    get_or_register_dtype,
    parse_arg_list,
)

from cltune.core.serving import CltuneWarning, Explanation
from cltune.device.select import info_for
from cltune.families.scan.gscan_config import GScanConfig
from cltune.families.scan.gscan_serve import Choices, GScanChoice, builtin, resolve
from cltune.isolation.vetting import NoConfigRuns, checked
from cltune.opencl.build import compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import in_order
from cltune.opencl.expression import FINGERPRINT_HEX
from cltune.opencl.kernel_args import setter
from cltune.opencl.samples import random_args
from cltune.opencl.sources import kernel_file, text_hash

__all__ = ["ExclusiveScanKernel", "GenericScanKernel", "InclusiveScanKernel"]

TUNE_MODES = (None, "first-use")
#: scratch bytes a kernel keeps per in-order queue between calls (larger calls make their own)
KEPT_SCRATCH = 64 << 20

_programs: ContextCache[Any] = ContextCache()
#: this module's own text, in the vetting key (how it launches the program is vetted too)
_HOST = text_hash(Path(__file__).read_text())


def macro_body(text: Any, what: str) -> str:
    """An expression as a macro body, as pyopencl takes it (`_process_code_for_macro`): its
    `//CL//` markers dropped, any other `//` comment refused (a macro body is one line)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string of OpenCL C, not {type(text).__name__}")
    text = text.replace("//CL//", "\n")
    if "//" in text:
        raise ValueError(f"{what}: // comments are not allowed in expressions; use /* */")
    return text.replace("\n", " ")


def _parameter(a: Any) -> str:
    """An argument as clt_output takes it: a vector as the pointer the kernel made of its base
    and offset (CLT_USER_PREP), a scalar as itself."""
    if isinstance(a, VectorArg):
        return f"__global {dtype_to_ctype(a.dtype)} *{a.name}"
    return f"{dtype_to_ctype(a.dtype)} {a.name}"


def _statement(text: Any, what: str) -> str:
    """A statement put into a function's body as given (lines and comments of both kinds
    kept, as pyopencl puts its output statement into the kernel's)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string of OpenCL C, not {type(text).__name__}")
    return text


def _preamble(text: Any) -> str:
    """The application's preamble as given (lines kept: it may hold preprocessor lines)."""
    if not isinstance(text, str):
        raise TypeError(f"preamble must be a string of OpenCL C, not {type(text).__name__}")
    return text


class _Built:
    def __init__(self, prg: cl.Program, wg: int, user: list) -> None:
        self.reduce, self.top, self.down = prg.clt_gs_reduce, prg.clt_gs_top, prg.clt_gs_down
        self.serial = prg.clt_gs_serial
        self.wg = wg
        self.lock = threading.Lock()
        i8 = np.int64
        self.reduce.set_scalar_arg_dtypes([*user, None, i8, None, None, None, None])
        self.top.set_scalar_arg_dtypes([None, None, i8])
        self.down.set_scalar_arg_dtypes([*user, None, i8, None, None, None])
        self.serial.set_scalar_arg_dtypes([*user, None, None, None])


class _DeviceChoices:
    """The database's answer for one kernel on one device, and the choice per call size."""

    def __init__(self, info: Any, choices: Choices) -> None:
        self.info, self.choices = info, choices
        self.by_n: dict[int, tuple[GScanChoice, str, str]] = {}

    def serve(self, n: int) -> tuple[GScanChoice, str, str]:
        hit = self.by_n.get(n)
        if hit is None:
            if len(self.by_n) > 256:
                self.by_n.clear()
            hit = self.by_n[n] = self.choices.serve(n)
        return hit


class GenericScanKernel:
    """pyopencl.scan.GenericScanKernel's constructor and call, on cltune's scan, tuned.

    cltune's extensions, keyword-only: `tune="first-use"` (the first call starts tuning its
    size class in a background thread on a private queue, within `budget_s` seconds; calls
    switch to the result when it is stored), `db` (the tuning database; default `CLTUNE_DB`
    or the user's data dir), `sample` (`sample(queue, n) -> args` to tune at size n; default
    random vectors of n elements and zero scalars)."""

    def __init__(self, ctx: cl.Context, dtype: Any, arguments: Any, input_expr: str,
                 scan_expr: str, neutral: str | None, output_statement: str,
                 is_segment_start_expr: str | None = None,
                 input_fetch_exprs: Sequence[tuple[str, str, int]] | None = None,
                 index_dtype: Any = None, name_prefix: str = "scan", options: Any = None,
                 preamble: str = "", devices: Sequence[cl.Device] | None = None, *,
                 tune: str | None = None, budget_s: float = 60.0, db: str | None = None,
                 sample: Any = None) -> None:
        if neutral is None:
            raise ValueError("must provide a 'neutral' element in scan")
        if tune not in TUNE_MODES:
            raise ValueError(f"tune={tune!r} is not one of {TUNE_MODES}")
        if not budget_s > 0:
            raise ValueError(f"budget_s must be > 0, got {budget_s!r}")
        self.tune_mode, self.budget_s, self.db, self.sample = tune, budget_s, db, sample
        self.name = name_prefix
        self._states: dict[int, _DeviceChoices] = {}
        self._lock = threading.Lock()
        self._kept: dict[int, tuple[cl.CommandQueue, list]] = {}  # queue -> its scratch
        self._builds: dict[tuple, _Built] = {}  # (device, config) -> its program
        # (queue, n, config, build) -> the geometry and kept scratch of calls seen (`_again`)
        self._plans: dict[tuple, tuple] = {}
        self.background: Any = None  # the first-use tuning thread, once started
        self.background_error: Exception | None = None
        # what the worker makes its own copy from (vetting: check_scan)
        self._ctor = {"dtype": dtype, "arguments": arguments, "input_expr": input_expr,
                      "scan_expr": scan_expr, "neutral": neutral,
                      "output_statement": output_statement,
                      "is_segment_start_expr": is_segment_start_expr,
                      "input_fetch_exprs": input_fetch_exprs, "index_dtype": index_dtype,
                      "options": options, "preamble": preamble}
        self.context, self.dtype = ctx, np.dtype(dtype)
        if self.dtype.itemsize % 4:
            raise TypeError("scan value type must have size divisible by 4 bytes")
        self.index_dtype = np.dtype(index_dtype if index_dtype is not None else np.int32)
        if self.index_dtype.kind != "i":
            raise TypeError("index_dtype must be signed")
        self.parsed_args = [VectorArg(a.dtype, a.name, with_offset=True)
                            if isinstance(a, VectorArg) else a
                            for a in parse_arg_list(arguments)]
        try:
            self.first_array_idx = next(i for i, a in enumerate(self.parsed_args)
                                        if isinstance(a, VectorArg))
        except StopIteration:
            raise ValueError("the arguments need at least one array (it sizes the scan)") \
                from None
        self.devices = list(devices or ctx.devices)
        if isinstance(options, str):
            self.options = options.split()
        else:
            self.options = [str(o) for o in (options or [])]
        fetch = []
        by_name = {a.name: a for a in self.parsed_args}
        for item in input_fetch_exprs or ():
            name, arg, off = item
            if arg not in by_name or not isinstance(by_name[arg], VectorArg):
                raise ValueError(f"input_fetch_exprs: {arg!r} is not an array argument")
            if int(off) not in (0, -1):
                raise ValueError("input_fetch_exprs: OFFSET must be 0 or -1")
            ct = dtype_to_ctype(by_name[arg].dtype)
            fetch.append(f"{ct} {name}; if ((long)(i) + ({int(off)}) >= 0) "
                         f"{name} = {arg}[(i) + ({int(off)})];")
        seg = is_segment_start_expr
        self._prelude = "\n".join([
            "/* generated by cltune.families.scan.generic from the application's code */",
            "#pragma OPENCL EXTENSION cl_khr_fp64: enable" if self._uses_double() else "",
            _preamble(preamble),
            "#define CLT_HAVE_USER 1",
            f"typedef {dtype_to_ctype(self.dtype)} clt_scan_t;",
            f"typedef {dtype_to_ctype(self.index_dtype)} clt_index_t;",
            f"#define CLT_NEUTRAL ({macro_body(neutral, 'neutral')})",
            f"#define CLT_INPUT(i) ({macro_body(input_expr, 'input_expr')})",
            f"#define CLT_SCAN(a, b, across_seg_boundary) ({macro_body(scan_expr, 'scan_expr')})",
            *(["#define CLT_SEGMENTED 1",
               f"#define CLT_SEG_START(i, a) ({macro_body(seg, 'is_segment_start_expr')})"]
              if seg else []),
            "#define CLT_FETCH(i) " + " ".join(fetch),
            # the output statement in a function of the user's arguments (the kernel passes
            # its own, offsets applied) and of N, i, item, prev_item, last_item (pyopencl's
            # names), so that it keeps its lines and comments
            "inline void clt_output(" + "".join(f"{_parameter(a)}, " for a in self.parsed_args)
            + "const clt_index_t N, const clt_index_t i, const clt_scan_t item, "
            "const clt_scan_t prev_item, const clt_scan_t last_item) {",
            _statement(output_statement, "output_statement"),
            ";}",
            "#define CLT_OUTPUT(i, item, prev_item, last_item) clt_output("
            + "".join(f"{a.name}, " for a in self.parsed_args)
            + "N, i, item, prev_item, last_item)",
            "#define CLT_USER_ARGS " + " ".join(f"{a.declarator()},"
                                                for a in self.parsed_args),
            "#define CLT_USER_PREP " + get_arg_offset_adjuster_code(
                self.parsed_args).replace("\n", " "),
            "",
        ])
        self._user = list(get_arg_list_scalar_arg_dtypes(self.parsed_args))
        # the ArgSetters' types of the application's arguments: numpy scalar types; None for
        # buffers and structs (set through pyopencl's own path)
        self._arg_types = tuple(None if d is None or np.dtype(d).names else np.dtype(d).type
                                for d in self._user)
        self.fingerprint = self._fingerprint()
        # only arrays as arguments: a warm call keys its scalars by the arrays' offsets alone
        self._vectors_only = all(isinstance(d, VectorArg) for d in self.parsed_args)
        self._vector_slots = tuple(range(0, 2 * len(self.parsed_args), 2))

    def _fingerprint(self) -> str:
        """The database key of this kernel: a hash of its types and code as it is built (the
        generated prelude holds the dtypes, expressions, arguments and preamble), the options
        and the index type; never the text itself."""
        blob = "\0".join([self.dtype.str, repr(self.dtype.descr), self.index_dtype.str,
                          self._prelude, " ".join(self.options)])
        return hashlib.sha256(blob.encode()).hexdigest()[:FINGERPRINT_HEX]

    #: per-process state that never crosses to the evaluation worker (isolation.codec)
    _LOCAL_STATE = ("_states", "_lock", "_kept", "_builds", "_plans", "background",
                    "background_error")

    def __getstate__(self) -> dict[str, Any]:
        """What the evaluation worker rebuilds the kernel from: the context (the worker's own
        takes its place), the constructor's arguments, `sample`, and the application's
        registered struct types by their C names."""
        structs = [(dtype_to_ctype(d), d) for d in
                   [self.dtype, *(a.dtype for a in self.parsed_args)] if d.names]
        return {"context": self.context, "ctor": self._ctor, "db": self.db,
                "sample": self.sample, "budget_s": self.budget_s, "name": self.name,
                "structs": structs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, dt in state["structs"]:
            get_or_register_dtype(name, dt)
        ctor = dict(state["ctor"])
        # the worker evaluates; it never tunes in the background
        self.__init__(state["context"], name_prefix=state["name"], db=state["db"],  # type: ignore[misc]
                      sample=state["sample"], budget_s=state["budget_s"], **ctor)

    def _uses_double(self) -> bool:
        dts = [self.dtype] + [a.dtype for a in getattr(self, "parsed_args", [])]
        return any(d == np.float64 or (d.names and any(d.fields[n][0] == np.float64
                                                       for n in d.names)) for d in dts)

    def _built(self, dev: cl.Device, sample: Any = None, cfg: GScanConfig | None = None,
               ) -> _Built:
        """The program of `cfg` (default: the builtin's) on dev, vetted first where
        `sample()` (the call's arguments and size) is given (None: in the worker, where a
        tuning trial or the vetting check runs it)."""
        if cfg is None:
            cfg = builtin(info_for(dev), self.dtype.itemsize)
        hit = self._builds.get((dev.int_ptr, cfg))  # a call's look-up: no source text hashed
        if hit is not None:
            return hit
        d = cfg.defines()
        wg = d["CLT_WG"]
        src = (self._prelude + "\n" + "".join(f"#define {k} {v}\n" for k, v in d.items())
               + kernel_file("generic_scan.cl"))

        def make() -> _Built:
            if sample is not None:
                self._vet(dev, src, sample, cfg)
            return _Built(compile_program(self.context, dev, src, self.options), wg,
                          self._user)

        b = _programs.get(self.context, (dev.int_ptr, src, tuple(self.options)), make)
        self._builds[(dev.int_ptr, cfg)] = b
        return b

    def _vet(self, dev: cl.Device, src: str, sample: Any, cfg: GScanConfig) -> None:
        info = info_for(dev)
        key = f"{self.dtype.str}/{text_hash(src + chr(0) + ' '.join(self.options))}"
        # the application's registered struct types, by their C names (the worker knows none)
        structs = [(dtype_to_ctype(d), d) for d in
                   [self.dtype, *(a.dtype for a in self.parsed_args)] if d.names]
        # the config the program is built for: the worker's check launches it as a call would
        ctor = {**self._ctor, "_config": cfg.to_dict()}
        v = checked(info, "generic_scan", f"{key}/{_HOST}", check_scan, ctor, structs,
                    args_of=sample, extra_s=self._vet_s)
        if v.ok or v.step == "build":
            return
        if v.step == "validate":
            warnings.warn(f"cltune: GenericScanKernel's answers differed from a one-work-item "
                          f"walk of its expressions when vetted on {info.name} "
                          f"({v.reason[:300]}); it is used", CltuneWarning, stacklevel=5)
            return
        raise NoConfigRuns(
            f"cltune: GenericScanKernel ({self._ctor['scan_expr']!r:.60}, {self.dtype}) "
            f"{v.step} in vetting on {info.name} ({v.reason[:300]}); it is not run in this "
            "process (CLTUNE_TRUST_DRIVER=1 runs it anyway)")

    def __call__(self, *args: Any, queue: cl.CommandQueue | None = None, allocator: Any = None,
                 size: int | None = None, wait_for: Sequence[cl.Event] | None = None,
                 **kwargs: Any) -> cl.Event:
        if kwargs:
            raise TypeError(f"unexpected keyword arguments: {', '.join(kwargs)}")
        if len(args) != len(self.parsed_args):
            raise TypeError(f"expected {len(self.parsed_args)} arguments, got {len(args)}")
        first = args[self.first_array_idx]
        queue = queue or first.queue
        if queue is None:
            raise TypeError("no queue: pass queue= (the first array has none)")
        waits = list(wait_for or [])
        n = size if size is not None else first.shape[0]
        if n == 0:
            return cl.enqueue_marker(queue, wait_for=waits or None)
        inv: list[Any] = []
        for d, v in zip(self.parsed_args, args, strict=True):
            if isinstance(d, VectorArg):
                if v.size and not v.flags.forc:
                    raise ValueError(f"argument {d.name!r} must be contiguous (a strided view "
                                     "would be read as if it were not: copy it first)")
                inv += [v.base_data, v.offset]
                waits += list(v.events)
            else:
                inv.append(v)
        dev = queue.device
        ch, level, _ = self._state(dev).serve(n)
        if self.tune_mode == "first-use" and self.background is None and not _tuned(level):
            self._start_background(dev, n)
        # the serial walk and the copies of the first call's arrays take time in proportion
        self._vet_s = 2e-7 * n
        b = self._built(dev, lambda: (list(args), n), ch.config)
        return self._enqueue(queue, b, ch.config, inv, args, n, allocator, waits)[-1]

    def _enqueue(self, queue: cl.CommandQueue, b: _Built, cfg: GScanConfig, inv: list,
                 args: Sequence[Any], n: int, allocator: Any, waits: list,
                 ) -> list[cl.Event]:
        """The three launches of a built config over n >= 1 elements, their events; the
        vector arguments get the last one."""
        if allocator is None and self._vectors_only:
            plan = self._plans.get((queue.int_ptr, n, cfg, b))
            if plan is not None:
                kept = self._kept.get(queue.int_ptr)
                if kept is not None and kept[1] is plan[0]:
                    return self._again(queue, b, plan, inv, args, waits)
        cus = max(1, queue.device.max_compute_units)
        tile = max(b.wg, cfg.tile)  # a group's least share: a tile, or a work-item each
        groups = max(1, min(cus * cfg.groups_per_cu, -(-n // tile)))
        chunk = -(-n // groups)
        if cfg.tile > 1:
            chunk = -(-chunk // cfg.tile) * cfg.tile  # whole tiles, the last one partial
        groups = -(-n // chunk)
        seg = bool(self._ctor["is_segment_start_expr"])  # flags saved only with segments
        # the groups' carries and flags; every element's input value and segment flag, read
        # once (pyopencl's contract: an output statement may overwrite inputs, e.g.
        # ary[i + 1] = item in place)
        sizes = ((groups + 1) * self.dtype.itemsize, groups * 4, n * self.dtype.itemsize,
                 n if seg else 1)
        pv, pf, tmp, tflag = self._scratch(queue, allocator, sizes)
        # through ArgSetters: scalars set only when they change, by the fast path (pyopencl's
        # set_args converted each: ~5 us a scalar, most of a small call's host time)
        user, it, i8 = self._arg_types, self.index_dtype.type, np.int64
        g, lw = (groups * b.wg,), (b.wg,)
        with b.lock:
            e1 = setter(b.reduce, (*user, it, i8, None, None, None, None)).launch(
                queue, g, lw, (*inv, n, chunk, pv, pf, tmp, tflag), waits or None)
            e2 = setter(b.top, (None, None, i8)).launch(queue, lw, lw, (pv, pf, groups), None)
            ev = setter(b.down, (*user, it, i8, None, None, None)).launch(
                queue, g, lw, (*inv, n, chunk, pv, tmp, tflag), None)
        for d, v in zip(self.parsed_args, args, strict=True):
            if isinstance(d, VectorArg):
                v.add_event(ev)
        kept = self._kept.get(queue.int_ptr) if allocator is None else None
        if self._vectors_only and kept is not None and kept[1][0] is pv:
            # the queue's kept scratch served: later calls of this key are `_again`'s
            if len(self._plans) > 64:
                self._plans.clear()
            self._plans[(queue.int_ptr, n, cfg, b)] = (kept[1], g, lw, n, chunk, groups,
                                                      object())
        return [e1, e2, ev]

    def _again(self, queue: cl.CommandQueue, b: _Built, plan: tuple, inv: list,
               args: Sequence[Any], waits: list) -> list[cl.Event]:
        """`_enqueue`'s launches for a call of a key seen before on the queue's kept scratch
        (the vector arguments only: their buffers set, the offsets keyed): the geometry and
        the scratch of the plan, every scalar left as set while the kernels last ran it."""
        (pv, pf, tmp, tflag), g, lw, n, chunk, groups, tok = plan
        user, it, i8 = self._arg_types, self.index_dtype.type, np.int64
        offs = tuple(inv[1::2])
        bufs = self._vector_slots
        with b.lock:
            e1 = setter(b.reduce, (*user, it, i8, None, None, None, None)).launch_keyed(
                queue, g, lw, (*inv, n, chunk, pv, pf, tmp, tflag), bufs, (tok, offs),
                waits or None)
            e2 = setter(b.top, (None, None, i8)).launch_keyed(queue, lw, lw, (pv, pf, groups),
                                                              (), (tok,), None)
            ev = setter(b.down, (*user, it, i8, None, None, None)).launch_keyed(
                queue, g, lw, (*inv, n, chunk, pv, tmp, tflag), bufs, (tok, offs), None)
        for v in args:
            v.add_event(ev)
        return [e1, e2, ev]

    def _scratch(self, queue: cl.CommandQueue, allocator: Any, sizes: tuple[int, ...],
                 ) -> list[Any]:
        """Buffers of `sizes` bytes for one call: with an allocator, its; on an in-order queue,
        the queue's own kept between calls (its calls run one after another there; at most
        KEPT_SCRATCH bytes, the latest queues) — making them each call costs ~5 us apiece
        on NVIDIA's driver; else new ones (released when the call's launches are done)."""
        if allocator is not None:
            return [cla.empty(queue, (max(1, s),), np.uint8, allocator=allocator).data
                    for s in sizes]
        if in_order(queue) is None or sum(sizes) > KEPT_SCRATCH:
            return [cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(1, s)) for s in sizes]
        with self._lock:
            kept = self._kept.get(queue.int_ptr)  # held with its queue: the address is its
            bufs = kept[1] if kept is not None else [None] * len(sizes)
            if kept is None or any(b.size < s for b, s in zip(bufs, sizes, strict=True)):
                # a new list whenever a buffer is new (a plan holds the list it ran on)
                bufs = [b if b is not None and b.size >= s else
                        cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(64, s))
                        for b, s in zip(bufs, sizes, strict=True)]
            self._kept.pop(queue.int_ptr, None)
            self._kept[queue.int_ptr] = (queue, bufs)
            while len(self._kept) > 4:
                self._kept.pop(next(iter(self._kept)))
            return bufs

    # ---- tuning ---------------------------------------------------------------------------
    def _state(self, dev: cl.Device) -> _DeviceChoices:
        st = self._states.get(dev.int_ptr)
        if st is None:
            with self._lock:
                st = self._states.get(dev.int_ptr)
                if st is None:
                    info = info_for(dev)
                    st = self._states[dev.int_ptr] = _DeviceChoices(
                        info, resolve(info, self.fingerprint, self.dtype.itemsize, self.db))
        return st

    def reload(self) -> None:
        """Read the database again (after tuning elsewhere)."""
        with self._lock:
            self._states.clear()

    def explain(self, n: int, device: cl.Device | None = None) -> Explanation:
        """Which config serves calls of n elements on `device` (default: the context's
        first), and where it came from (a lookup level, `derived` or `builtin`)."""
        dev = device if device is not None else self.context.devices[0]
        ch, level, why = self._state(dev).serve(max(1, int(n)))
        return Explanation(int(n), ch.config, level, why, ch.bucket, ch.tuned_at, ch.driver,
                           ch.gbps)

    def sample_args(self, queue: cl.CommandQueue, n: int, seed: int = 0) -> tuple[Any, ...]:
        """Arguments for tuning at size n: `sample(queue, n)` when given, else vectors of n
        elements (floats in [0, 1), integers 0..99, booleans, structs zeroed) and zero
        scalars, in the order of the kernel's arguments."""
        if self.sample is not None:
            return tuple(self.sample(queue, n))
        return random_args(self.parsed_args, queue, n, seed)

    def tune(self, *sample_args: Any, trials: int = 30, timeout: float = 120.0,
             queue: cl.CommandQueue | None = None, db: str | None = None,
             storage: str | None = None, seed: int = 0, size: int | None = None) -> list[Any]:
        """Tune this kernel for the size class of `sample_args` (as a call takes them; their
        first array's length, or `size`) on the queue's device; every config runs in the
        device's worker against the one-work-item walk of the same expressions. Results go
        to the database, and this kernel switches to them. Returns the tuner's results."""
        from cltune.families.scan import api  # lazy: the family's api reaches the tuner

        res = api.tune_generic(self, sample_args, trials=trials, timeout=timeout, queue=queue,
                               db=db if db is not None else self.db, storage=storage,
                               seed=seed, size=size)
        self.reload()
        return res

    def _start_background(self, dev: cl.Device, n: int) -> None:
        from cltune.families.scan import api  # lazy: the family's api reaches the tuner

        with self._lock:
            if self.background is None:
                self.background = api.tune_generic_in_background(self, dev, n, self.budget_s)


def _tuned(level: str) -> bool:
    """Whether a lookup level is this kernel's own tuned config on this device."""
    return level not in ("derived", "builtin")


class _LegacyScan:
    """pyopencl's InclusiveScanKernel / ExclusiveScanKernel: (ctx, dtype, scan_expr, neutral,
    ...) and a call (input_ary, output_ary=None, ...) returning output_ary."""

    _output = ""

    def __init__(self, ctx: cl.Context, dtype: Any, scan_expr: str, neutral: str | None = None,
                 name_prefix: str = "scan", options: Any = None, preamble: str = "",
                 devices: Sequence[cl.Device] | None = None) -> None:
        dtype = np.dtype(dtype)
        ct = dtype_to_ctype(dtype)
        self.dtype = dtype
        self._knl = GenericScanKernel(
            ctx, dtype, f"__global {ct} *input_ary, __global {ct} *output_ary",
            "input_ary[i]", scan_expr, neutral, self._output, options=options,
            preamble=preamble, devices=devices)

    def __call__(self, input_ary: cla.Array, output_ary: cla.Array | None = None,
                 allocator: Any = None, queue: cl.CommandQueue | None = None,
                 size: int | None = None, wait_for: Sequence[cl.Event] | None = None,
                 ) -> cla.Array:
        if output_ary is None:
            output_ary = input_ary
        if isinstance(output_ary, str) and output_ary == "new":
            output_ary = cla.empty_like(input_ary, allocator=allocator)
        if input_ary.shape != output_ary.shape:
            raise ValueError("input and output must have the same shape")
        if not input_ary.flags.forc:
            raise RuntimeError("InclusiveScanKernel cannot deal with non-contiguous arrays")
        self._knl(input_ary, output_ary, allocator=allocator, queue=queue,
                  size=size if size is not None else input_ary.size, wait_for=wait_for)
        return output_ary


class InclusiveScanKernel(_LegacyScan):
    """pyopencl.scan.InclusiveScanKernel on cltune's scan."""

    _output = "output_ary[i] = item;"


class ExclusiveScanKernel(_LegacyScan):
    """pyopencl.scan.ExclusiveScanKernel on cltune's scan."""

    _output = "output_ary[i] = prev_item;"


def same_answers(got: np.ndarray, want: np.ndarray, n: int) -> bool:
    """Equal, or for floats within the rounding that another order of n combines may give."""
    if got.tobytes() == want.tobytes():
        return True
    if got.dtype.kind not in "fc" or got.shape != want.shape:
        return False
    eps = float(np.finfo(got.dtype).eps)
    scale = float(np.nanmax(np.abs(want))) if want.size else 0.0
    return bool(np.allclose(got, want, rtol=0, atol=4 * max(1, n) * eps * scale + 1e-30,
                            equal_nan=True))


def check_scan(ctx: cl.Context, queue: cl.CommandQueue, dev: cl.Device, info: Any,
               ctor: dict, structs: list[tuple[str, np.dtype]], args: list, n: int) -> str:
    """Vetting's check (isolation.vetting.checked, run in the device's worker): a
    GenericScanKernel made as the application made it, called on copies of the call's
    arguments, against clt_gs_serial on other copies; '' or the arrays that differ."""
    for name, dt in structs:
        get_or_register_dtype(name, dt)
    ctor = dict(ctor)
    cfg = GScanConfig.from_mapping(ctor.pop("_config")) if "_config" in ctor else \
        builtin(info, np.dtype(ctor["dtype"]).itemsize)
    knl = GenericScanKernel(ctx, **ctor)
    arrays = [i for i, (d, a) in enumerate(zip(knl.parsed_args, args, strict=True))
              if isinstance(d, VectorArg) and isinstance(a, cla.Array)]
    mine = list(args)
    ref = list(args)
    for i in arrays:
        mine[i], ref[i] = args[i].copy(queue=queue), args[i].copy(queue=queue)
    b = knl._built(dev, None, cfg)
    inv: list[Any] = []
    for d, v in zip(knl.parsed_args, mine, strict=True):
        inv += [v.base_data, v.offset] if isinstance(d, VectorArg) else [v]
    if n:
        knl._enqueue(queue, b, cfg, inv, mine, n, None, [])
    inv = []
    for d, v in zip(knl.parsed_args, ref, strict=True):
        inv += [v.base_data, v.offset] if isinstance(d, VectorArg) else [v]
    tmp = cla.empty(queue, (max(1, n),), knl.dtype)
    tflag = cla.empty(queue, (max(1, n),), np.uint8)
    with b.lock:
        b.serial.set_args(*inv, knl.index_dtype.type(n), tmp.data, tflag.data)
        cl.enqueue_nd_range_kernel(queue, b.serial, (1,), (1,))
    differ = [knl.parsed_args[i].name for i in arrays
              if not same_answers(mine[i].get(), ref[i].get(), n)]
    return f"arrays {', '.join(differ)} differ from the serial walk's" if differ else ""
