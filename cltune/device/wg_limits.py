"""The work-group limit (CL_KERNEL_WORK_GROUP_SIZE) of a probe build, kept per driver on disk
next to the vetting verdicts: the expression families cap their tuning spaces at what their
heaviest kernel takes, and that one build can cost NVIDIA's compiler 20-50 s (a float64 `var`
along an axis). The key is the device, the driver and a hash of the source and the build
options, so a changed kernel or option is probed again; a build that fails is never kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

from cltune.device.driver_cache import add_verdicts, cache_dir, read_verdicts
from cltune.device.info import DeviceInfo

VERSION = 1
_FILE = "wg-limits.json"
_VKEY = "wg_limits_version"
_lock = threading.Lock()
_memo: dict[str, int] = {}


def _parse(v: dict) -> int | None:
    w = v.get("wg")
    return w if isinstance(w, int) and not isinstance(w, bool) and w >= 1 else None


def key_of(info: DeviceInfo, source: str, options: Sequence[str]) -> str:
    h = hashlib.sha256("\0".join([source, *options]).encode()).hexdigest()[:24]
    return f"{info.fingerprint}:{info.driver}:{h}"


def kept_limit(info: DeviceInfo, source: str, options: Sequence[str],
               probe: Callable[[], int]) -> int:
    """`probe()` (a build's CL_KERNEL_WORK_GROUP_SIZE) once per device, driver, source and
    options on this machine; its exceptions pass through, and nothing is kept then."""
    key = key_of(info, source, options)
    path = cache_dir() / _FILE
    with _lock:
        hit = _memo.get(key)
        if hit is None:
            hit = read_verdicts(path, _VKEY, VERSION, _parse).get(key)
            if hit is not None:
                _memo[key] = hit
    if hit is not None:
        return hit
    limit = int(probe())
    with _lock:
        _memo[key] = limit
    add_verdicts(path, _VKEY, VERSION, _parse, lambda w: {"wg": w}, {key: limit})
    return limit


def forget() -> None:
    """Drop what this process keeps (the file stays)."""
    with _lock:
        _memo.clear()
