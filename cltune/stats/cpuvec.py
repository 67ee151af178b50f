"""What the whole-array kernels of cltune.stats that run on CPU devices in vector registers
(cltune.stats.argvec: argmax/argmin, cltune.stats.normvec: the L2 norm) share: the vector
width from the device's info, the cut of n elements into one contiguous chunk per work-item
(`Plan`, `cut`), their vetting in the device's worker with the warning when it failed
(`vetted`), the scratch of the chunks' partial results (`partials`), and what serves a
kernel file on a device (`Kernels`: its source, build options, build, and the vetted build
kept per context, device and dtype).

Both kernels are a work-item per contiguous chunk (an explicit-vector loop with several
independent accumulators) and a one-work-item finish on the device that combines the
chunks' partials (skipped with one chunk), so a call is as asynchronous as the expression
path's; their plan comes from the device's info, not from tuning.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyopencl as cl

from cltune.core.serving import CltuneWarning
from cltune.device.info import DeviceInfo
from cltune.device.select import info_for
from cltune.isolation.vetting import checked
from cltune.opencl.build import BuildError, compile_program
from cltune.opencl.caches import ContextCache
from cltune.opencl.events import pending
from cltune.opencl.sources import kernel_file, text_hash

T = TypeVar("T")


def vector_width(dev: cl.Device, info: DeviceInfo, kind: str, cap_bytes: int) -> int:
    """The device's native or preferred vector width of the OpenCL type `kind` (`float`,
    `double`, `int`, `long`), whichever is wider (Intel's CPU runtime prefers 1 but is
    natively 16 wide), as a power of two in 4..16, within the health check's cap
    (`DeviceInfo.vector_cap`) for vectors of `cap_bytes` lanes; at least 2."""
    widths = [0]
    for attr in (f"native_vector_width_{kind}", f"preferred_vector_width_{kind}"):
        try:
            widths.append(int(getattr(dev, attr)))
        except (cl.Error, AttributeError, TypeError, ValueError):
            pass
    w = 1 << (min(16, max(4, *widths)).bit_length() - 1)
    return max(2, info.vector_cap(cap_bytes, w))


@dataclass(frozen=True)
class Plan:
    """How a call of `kernel` is cut: `items` work-items of `chunk` elements (a multiple of
    `lanes`), `accumulators` vectors each."""

    kernel: str
    lanes: int
    accumulators: int
    items: int
    chunk: int

    def short(self) -> str:
        fin = ", + a finish" if self.items > 1 else ""
        return (f"{self.kernel} lanes={self.lanes} acc={self.accumulators} items={self.items} "
                f"chunk={self.chunk}{fin}")


def cut(kernel: str, n: int, lanes: int, accumulators: int, compute_units: int,
        itemsize: int, *, per_cu: int, min_chunk_bytes: int,
        max_blocks: int | None = None) -> Plan:
    """The cut of n elements (0 is cut as 1: one empty chunk): compute_units x per_cu
    chunks, fewer where a chunk would hold less than min_chunk_bytes; a chunk holds at most
    max_blocks vectors."""
    n = max(1, n)
    least = max(1, min_chunk_bytes // itemsize)
    items = max(1, min(max(1, compute_units) * per_cu, -(-n // least)))
    chunk = -(-n // items)
    chunk = -(-chunk // lanes) * lanes
    if max_blocks is not None:
        chunk = min(chunk, max_blocks * lanes)
    return Plan(kernel, lanes, accumulators, -(-n // chunk), chunk)


def vetted(info: DeviceInfo, name: str, key: str, check: Callable[..., str], args: tuple,
           build: Callable[[], T], what: str, stacklevel: int) -> tuple[T | None, str]:
    """`build()` where `check(ctx, queue, dev, info, *args)` (a module-level function) ran
    right once on this fingerprint and driver in the device's worker
    (`isolation.vetting.checked` under `name` and `key`: what it builds), else (None, why),
    with a CltuneWarning naming `what` at `stacklevel` (the caller's `warnings.warn` level)."""
    v = checked(info, name, key, check, *args)
    why = "" if v.ok else f"it failed on this driver ({v.step}: {v.reason[:300]})"
    if not why:
        try:
            return build(), ""
        except BuildError as e:  # it built in the worker: not expected, but not fatal
            why = f"it does not build here ({str(e)[:300]})"
    warnings.warn(f"cltune: {what} is not used: {why}; the expression kernel serves",
                  CltuneWarning, stacklevel=stacklevel + 1)
    return None, why


def partials(q: cl.CommandQueue, pool: Any, nbytes: int) -> Any:  # noqa: ANN401
    """Scratch for the chunks' partials: from the queue's pool (an in-order queue hands it to
    nothing before the finish that reads it has run), else a buffer of its own."""
    return pool(nbytes) if pool is not None else \
        cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes)


@dataclass
class Built:
    """The two kernels (`chunks`, `finish`) of one (context, device, dtype) of a kernel file:
    their arguments are shared state, so launches take `lock`."""

    dtype: np.dtype
    lanes: int
    compute_units: int
    chunks: cl.Kernel
    finish: cl.Kernel
    #: clt_<name>_rows where the file has it (argvec: the winners of each row's chunks)
    rows: cl.Kernel | None = None
    #: clt_<name>_cols and clt_<name>_cols_finish where the file has them (argvec: along axis
    #: 0 of a few interleaved columns)
    cols: cl.Kernel | None = None
    cols_finish: cl.Kernel | None = None
    #: clt_<name>_vcols and clt_<name>_vcols_finish where the file has them (normvec: the
    #: variance along axis 0 of a few interleaved columns)
    vcols: cl.Kernel | None = None
    vcols_finish: cl.Kernel | None = None
    #: clt_<name>_rows<kind><L> by (kind, L) where the file has them (normvec: statistics
    #: along short rows; kinds s: sum and mean, n: the L2 norm, v: var and std)
    rows_of: dict[tuple[str, int], cl.Kernel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def warm_launch(owner: object, built: Built, f: Any, q: cl.CommandQueue, inq: bool,
                x: Any, xoff: int, slots: tuple[int, ...]) -> tuple[Any, cl.Event | None]:
    """The one-launch warm call of `built.chunks` while it still holds owner's arguments for
    input offset xoff: x's buffer as argument 0 and a fresh result buffer (from the fast
    ResultFactory f) as each of `slots`, one work-item. Returns (the result, its event), the
    event None where the kernel holds other arguments (the caller then launches in full)."""
    k = built.chunks
    buf = f._alloc(f._nbytes)  # f.buffer(), inline
    wait = pending(x.events, in_order=inq) if x.events else None
    ev = None
    lock = built.lock
    lock.acquire()  # by hand: ~0.1 us less than `with`
    try:
        s = getattr(k, "_cltune_args", None)
        if s is not None and s.owner == (owner, xoff, 0):
            k.set_arg(0, x.base_data)
            for i in slots:
                k.set_arg(i, buf)
            ev = cl.enqueue_nd_range_kernel(q, k, (1,), (1,), None, wait)
    finally:
        lock.release()
    return f.around(buf, [] if ev is None else [ev]), ev


@dataclass(frozen=True, eq=False)
class Kernels:
    """One file of kernels/ that whole-array statistics run on CPU devices: `name` (the file
    kernels/<name>.cl, its kernels clt_<name>_chunks and clt_<name>_finish, its vetting
    name), the `-D` prefix of its integers (CLT_<prefix>_TYPE: the dtype's code in
    `type_codes`, where `typed`; _W the lanes; _U the accumulators), what the warning calls
    it, the module-level `check` it is vetted by (it reaches the worker by reference: called
    with (dtype str, lanes) where `typed`, else (lanes,)), the lanes of a dtype on a device,
    and whether every build needs fp64 (it sums in double) or only float64's."""

    name: str
    prefix: str
    type_codes: Mapping[np.dtype, int]
    accumulators: int
    what: str
    check: Callable[..., str]
    lanes_for: Callable[[cl.Device, DeviceInfo, np.dtype], int]
    typed: bool = True
    needs_fp64: bool = False
    _served: ContextCache[tuple[Built | None, str]] = field(default_factory=ContextCache)

    def source(self) -> str:
        return kernel_file(f"{self.name}.cl")

    def source_hash(self) -> str:
        return text_hash(self.source())

    def build_options(self, dt: np.dtype, lanes: int) -> list[str]:
        """The `-D` integers of a build (house rule 2)."""
        if dt not in self.type_codes or lanes not in (2, 4, 8, 16):
            raise ValueError(f"{self.name} builds no {dt} x {lanes}")
        p = self.prefix
        typ = [f"-DCLT_{p}_TYPE={int(self.type_codes[dt])}"] if self.typed else []
        return [*typ, f"-DCLT_{p}_W={int(lanes)}", f"-DCLT_{p}_U={int(self.accumulators)}"]

    def compile(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, dt: np.dtype,
                lanes: int) -> Built:
        """Build the file for dt and lanes (BuildError with the compiler's words)."""
        prg = compile_program(ctx, dev, self.source(), self.build_options(dt, lanes))
        names = prg.kernel_names.split(";")

        def maybe(kind: str) -> cl.Kernel | None:
            name = f"clt_{self.name}_{kind}"
            return getattr(prg, name) if name in names else None

        head = f"clt_{self.name}_rows"  # clt_<name>_rows<kind letter><L>
        rows_of = {(n[len(head)], int(n[len(head) + 1:])): getattr(prg, n) for n in names
                   if n.startswith(head) and n[len(head) + 1:].isdigit()}
        return Built(dt, lanes, info.compute_units, getattr(prg, f"clt_{self.name}_chunks"),
                     getattr(prg, f"clt_{self.name}_finish"), maybe("rows"), maybe("cols"),
                     maybe("cols_finish"), maybe("vcols"), maybe("vcols_finish"), rows_of)

    def built(self, q: cl.CommandQueue, dt: np.dtype) -> Built | None:
        """The vetted build for dt on q's device, or None where the expression path serves
        (not a CPU, no fp64 where it needs it, vetting or the build failed: warned once)."""
        return self._served.get(q.context, (q.device.int_ptr, dt.str),
                                lambda: self._make(q.context, q.device, dt))[0]

    def _make(self, ctx: cl.Context, dev: cl.Device, dt: np.dtype) -> tuple[Built | None, str]:
        info = info_for(dev)
        if info.type != "cpu":
            return None, f"a {info.type} device (served on CPUs)"
        if (self.needs_fp64 or dt == np.float64) and not info.fp64:
            return None, "the device has no fp64"
        lanes = self.lanes_for(dev, info, dt)
        key = f"{dt.name}/w{lanes}/u{self.accumulators}/{self.source_hash()}"
        args = (dt.str, lanes) if self.typed else (lanes,)
        # stacklevel: the application's call (through ContextCache.get, built, served and
        # cltune.stats.api)
        return vetted(info, self.name, key, self.check, args,
                      lambda: self.compile(ctx, dev, info, dt, lanes),
                      f"{self.what} (kernels/{self.name}.cl, {dt.name})", 8)
