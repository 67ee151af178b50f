"""How many evaluation workers judge an application's configs at once, and the lock that keeps
their checks and timings one at a time.

A build of a user's kernel is mostly the driver's compiler on the host, and NVIDIA's driver
builds one program at a time per process (threads do not overlap: `scripts/experiments/
build_threads.py`). So on a device that is not the host's CPU, a tune whose order of configs
is known (brute force, random sample) builds several configs at once, each in a worker of its
own (`worker_for(info, slot)`), while a file lock lets one worker at a time check and time its
config on the device: timings are taken as alone. A crash or hang stays its own worker's and
its own config's. On a CPU device the cores a build would take are the ones a timed kernel
needs: one worker.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from cltune.device.info import DeviceInfo

#: the most workers one tune starts on a device
MAX_LANES = 8
#: the share of the device's (and the host's) memory the workers' copies of the arguments may
#: take together
MEMORY_SHARE = 0.5


def lanes_for(info: DeviceInfo, arguments: Sequence[object]) -> int:
    """Workers for a tune of a kernel with these arguments: CLTUNE_KERNEL_WORKERS when set
    (>= 1), else 1 on CPUs and min(MAX_LANES, the cores this process may use - 1) elsewhere,
    fewer where the workers' copies of the arguments would take more than MEMORY_SHARE of the
    device's or the host's memory."""
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
    if info.type == "cpu":
        return 1
    n = min(MAX_LANES, max(1, _cores() - 1))
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


@contextmanager
def held(path: str) -> Iterator[None]:
    """The timing lock of a tune's workers (`path`; '' for none) held: released when the
    block ends or the process dies."""
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
