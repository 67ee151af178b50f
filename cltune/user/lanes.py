"""How many evaluation workers judge an application's configs at once, and the lock that keeps
their checks and timings one at a time.

A build of a user's kernel is mostly the driver's compiler on the host, and NVIDIA's driver
builds one program at a time per process (threads do not overlap: `scripts/experiments/
build_threads.py`). So on a device that is not the host's CPU, a tune whose order of configs
is known (brute force, random sample) builds several configs at once, each in a worker of its
own (`worker_for(info, slot)`), while a file lock lets one worker at a time check and time its
config on the device: timings are taken as alone. A crash or hang stays its own worker's and
its own config's.

On a CPU device the cores a build takes are the ones a timed kernel needs, so there the lock
is a readers-writer one (`held(path, shared=True)`): the workers build, make and check their
configs at once (a build per core) holding it shared, and each takes it alone for its timed
launches only, so that no build, check or other launch runs beside a timing. A timing that
waits keeps new builds from starting (a gate lock), so the timings are never starved.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from cltune.device.info import DeviceInfo

#: the most workers one tune starts on a device
MAX_LANES = 8
#: configs in a known order a worker past the first must have to judge: its start (a process,
#: an OpenCL context, the arguments copied) costs about as much as a few builds (on this
#: repository's 2-core CPU hosts, 4 configs in 2 workers took as long as in one, 8 and 16
#: took 0.72-0.85x)
CONFIGS_PER_LANE = 4
#: the share of the device's (and the host's) memory the workers' copies of the arguments may
#: take together
MEMORY_SHARE = 0.5


def lanes_for(info: DeviceInfo, arguments: Sequence[object], planned: int | None = None,
              ) -> int:
    """Workers for a tune of a kernel with these arguments: CLTUNE_KERNEL_WORKERS when set
    (>= 1), else min(MAX_LANES, the cores this process may use) on CPUs (a build per core,
    timings alone) and min(MAX_LANES, those cores - 1) elsewhere (a core left for the
    driver's launches), fewer where the workers' copies of the arguments would take more than
    MEMORY_SHARE of the device's or the host's memory, and one per CONFIGS_PER_LANE of the
    `planned` configs whose order is known (None: not limited; 0: a search that picks each
    config from the ones before, judged one at a time in one worker)."""
    env = os.environ.get("CLTUNE_KERNEL_WORKERS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"CLTUNE_KERNEL_WORKERS must be a whole number of workers, "
                             f"not {env!r}") from None
        if n < 1:
            raise ValueError(f"CLTUNE_KERNEL_WORKERS must be at least 1, not {n}")
        return n
    n = min(MAX_LANES, max(1, _cores() - (info.type != "cpu")))
    if planned is not None:
        n = min(n, max(1, planned // CONFIGS_PER_LANE))
    nbytes = sum(int(getattr(a, "nbytes", 0) or 0) for a in arguments)
    if nbytes:
        room = min(int(info.global_mem), _host_memory() or int(info.global_mem))
        n = min(n, max(1, int(MEMORY_SHARE * room // nbytes)))
    return n


def _cores() -> int:
    """The cores this process may run on (its affinity: a container's share), else the host's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def gate_of(path: str) -> str:
    """The gate lock beside a timing lock: held by a worker that waits to take it alone."""
    return path + ".gate"


@contextmanager
def held(path: str, shared: bool = False) -> Iterator[None]:
    """The timing lock of a tune's workers (`path`; '' for none) held, alone or `shared`:
    released when the block ends or the process dies. Both kinds pass through the gate first,
    and one waiting to hold it alone keeps the gate until it does: shared holders that come
    later wait behind it."""
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        gate = os.open(gate_of(path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        finally:
            os.close(gate)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
