"""What the whole-array kernels of cltune.stats that run on CPU devices in vector registers
(cltune.stats.argvec: argmax/argmin, cltune.stats.normvec: the L2 norm) share: the vector
width from the device's info, the cut of n elements into one contiguous chunk per work-item
(`Plan`, `cut`), their vetting in the device's worker with the warning when it failed
(`vetted`), and the scratch of the chunks' partial results (`partials`).

Both kernels are a work-item per contiguous chunk (an explicit-vector loop with several
independent accumulators) and a one-work-item finish on the device that combines the
chunks' partials (skipped with one chunk), so a call is as asynchronous as the expression
path's; their plan comes from the device's info, not from tuning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyopencl as cl

from cltune.core.serving import CltuneWarning
from cltune.device.info import DeviceInfo
from cltune.isolation.vetting import checked
from cltune.opencl.build import BuildError

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
