"""OpenCL device enumeration in cltune's order, selection, and the health verdicts applied.

Devices are listed in a stable order: fully working devices first, then devices usable with
restrictions, then unusable ones (`health.py` says which); within each, by platform name, a
newer implementation of a platform before an older one (PoCL 3.1 before 3.0-rc2), then the
platforms' and devices' own order. So index 0 is a device on which tuning and the runtime work
whenever there is one, and an index means the same device across runs as long as the
verdicts do not change. A selector is an index, `P:D` as in `PYOPENCL_CTX` (the platforms' and
devices' own order), or a case-insensitive name substring. The `DeviceInfo` of a listed device
carries its health's restrictions (`max_vector_bytes`).
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pyopencl as cl

from cltune.device.health import Health, cached, health, restricted
from cltune.device.info import DeviceInfo, describe, platform_devices


class DeviceError(LookupError):
    """No device matches a selector, or the device is unusable (its probe kernel failed); the
    message gives the reason, the fix and the devices there are, on one line."""


_listing_lock = threading.Lock()
_listed: tuple[tuple[DeviceInfo, cl.Device, Health], ...] | None = None


def _enumerate(recheck: bool = False) -> tuple[tuple[DeviceInfo, cl.Device, Health], ...]:
    """Every device with its health, in the stable cltune order: usable devices first, then by
    platform name and version, then the platforms' and devices' own order."""
    global _listed
    with _listing_lock:
        if _listed is not None and not recheck:
            return _listed
        found = [(describe(dev, -1, p, d), dev) for p, d, dev in platform_devices()]
        verdicts = _verdicts(found, recheck)
        rows = [(restricted(info, h), dev, h) for (info, dev), h in zip(found, verdicts,
                                                                        strict=True)]
        rows.sort(key=lambda r: order_key(r[0], r[2]))
        _listed = tuple((replace(info, index=i), dev, h) for i, (info, dev, h) in enumerate(rows))
        return _listed


def _verdicts(found: list[tuple[DeviceInfo, cl.Device]], recheck: bool) -> list[Health]:
    """Each device's health, the unknown ones probed side by side: every probe runs in a worker
    process of its own, so a machine whose drivers need probing waits for its slowest probe,
    not for their sum (a driver that hangs until the probe's deadline beside two that build)."""
    hits: list[Health | None] = [None if recheck else cached(info) for info, _ in found]
    todo = [i for i, h in enumerate(hits) if h is None]

    def one(i: int) -> Health:
        return health(found[i][1], found[i][0], recheck=recheck)

    if len(todo) > 1:
        with ThreadPoolExecutor(len(todo), thread_name_prefix="cltune-probe") as pool:
            for i, h in zip(todo, pool.map(one, todo), strict=True):
                hits[i] = h
    else:
        for i in todo:
            hits[i] = one(i)
    return [h for h in hits if h is not None]


def _release_numbers(info: DeviceInfo) -> tuple[int, ...]:
    """The implementation's version as numbers (`3.1+debian` -> (3, 1); `3.0-rc2` -> (3, 0, -1,
    2): a release candidate sorts before its release)."""
    nums: list[int] = []
    for part in re.findall(r"\d+|rc|alpha|beta|pre", info.release.lower()):
        nums.append(-1 if not part.isdigit() else int(part))
    return tuple(nums)


def order_key(info: DeviceInfo, h: Health) -> tuple:
    """Where a device sorts: working, restricted, unusable; platform name; newer release
    first; the loader's own order."""
    newer_first = tuple(-n for n in _release_numbers(info)) + (1,)
    return (h.rank, info.platform, newer_first, info.platform_index, info.device_index)


def list_devices(*, recheck: bool = False) -> list[DeviceInfo]:
    """All OpenCL devices in the stable cltune order (usable ones first; see `_enumerate`).
    `recheck` probes every device again instead of trusting the cached verdicts."""
    return [info for info, _, _ in _enumerate(recheck)]


def device_health(info: DeviceInfo) -> Health:
    """The probe's verdict on a listed device."""
    for i, _, h in _enumerate():
        if i.fingerprint == info.fingerprint:
            return h
    return health(info.cl_device(), info)


def _name(i: DeviceInfo) -> str:
    return f"{i.index} [{i.platform_index}:{i.device_index}] {i.name} ({i.platform} {i.release})"


def _listing() -> str:
    """The devices on one line, for error messages."""
    rows = [f"{_name(i)}: {h.status}" for i, _, h in _enumerate()]
    return "; ".join(rows) if rows else "no OpenCL devices found (is an OpenCL runtime installed?)"


def _usable_line() -> str:
    ok = [_name(i) for i, _, h in _enumerate() if h.ok]
    return ("usable: " + "; ".join(ok)) if ok else "no usable device"


def _unusable(info: DeviceInfo, h: Health, what: str) -> DeviceError:
    return DeviceError(f"{what} {_name(info)} is unusable: {h.message}; fix: {h.fix}; "
                       + _usable_line())


def select(selector: str | int) -> tuple[DeviceInfo, cl.Device]:
    """Resolve an index, `P:D` or a name substring to one usable device. A device whose probe
    failed (or no usable device at all) is refused with the reason, the fix and the
    alternatives."""
    devs = _enumerate()
    if devs and not any(h.ok for _, _, h in devs):
        detail = "; ".join(f"{_name(i)}: {h.message} (fix: {h.fix})" for i, _, h in devs)
        raise DeviceError(f"no usable OpenCL device: {detail}")
    sel = str(selector).strip()
    hits: list[tuple[DeviceInfo, cl.Device, Health]] = []
    if re.fullmatch(r"\d+", sel):
        hits = [r for r in devs if r[0].index == int(sel)]
    elif re.fullmatch(r"\d+:\d+", sel):
        p, d = (int(v) for v in sel.split(":"))
        hits = [r for r in devs if (r[0].platform_index, r[0].device_index) == (p, d)]
    elif sel:
        hits = [r for r in devs if sel.lower() in f"{r[0].name} {r[0].platform}".lower()]
        if len(hits) > 1:
            ok = [r for r in hits if r[2].ok]
            hits = ok if len(ok) == 1 else hits
        if len(hits) > 1:  # a device's whole name over names that hold it (on Intel hosts
            # PoCL's "pthread-Intel(R) Xeon(R) ..." holds Intel's runtime's device name)
            whole = [r for r in hits if r[0].name.strip().lower() == sel.lower()]
            hits = whole if len(whole) == 1 else hits
        if len(hits) > 1:
            raise DeviceError(f"device {sel!r} is ambiguous; devices: {_listing()}")
    if len(hits) != 1:
        raise DeviceError(f"no device matches {sel!r}; devices: {_listing()}")
    info, dev, h = hits[0]
    if not h.ok:
        raise _unusable(info, h, "device")
    return info, dev


def select_many(selector: str) -> list[tuple[DeviceInfo, cl.Device]]:
    """Several devices for one parallel run: `0,1,2` (each as `select` takes it, each once) or
    `all` (every usable device with the first usable one's fingerprint: a node's identical
    GPUs). One selector without a comma is `[select(selector)]`."""
    sel = str(selector).strip()
    if sel.lower() == "all":
        devs = [(i, d) for i, d, h in _enumerate() if h.ok]
        if not devs:
            raise DeviceError(f"no usable OpenCL device; devices: {_listing()}")
        first = devs[0][0].fingerprint
        return [(i, d) for i, d in devs if i.fingerprint == first]
    out: list[tuple[DeviceInfo, cl.Device]] = []
    for part in sel.split(","):
        if not part.strip():
            raise DeviceError(f"empty device in {sel!r} (use e.g. 0,1,2)")
        info, dev = select(part)
        if any(i.index == info.index for i, _ in out):
            raise DeviceError(f"device {info.index} is named twice in {sel!r}")
        out.append((info, dev))
    return out


def info_for(dev: cl.Device) -> DeviceInfo:
    """The DeviceInfo of a pyopencl device (platform and device index from the loader's order;
    the cltune index only once the devices were listed, else -1), with the restrictions of its
    health verdict where one is known. Probes nothing."""
    if _listed is not None:
        for info, d, _ in _listed:
            if d == dev:
                return info
    for p, di, d in platform_devices():
        if d == dev:
            info = describe(dev, -1, p, di)
            return restricted(info, cached(info))
    info = describe(dev)
    return restricted(info, cached(info))


def require_usable(dev: cl.Device, info: DeviceInfo) -> DeviceInfo:
    """`info` with its verdict's restrictions; DeviceError unless the device is usable
    (cached verdict, else one health check of this device only)."""
    h = health(dev, info)
    if not h.ok:
        raise DeviceError(f"device {info.name} ({info.platform} {info.release}) is unusable: "
                          f"{h.message}; fix: {h.fix}")
    return restricted(info, h)
