"""OpenCL device enumeration, selection and capabilities, and the device fingerprint.

Devices are listed in a stable order: usable devices first (a probe kernel built and gave the
right answer, see `health.py`), then by platform name and version, then the platforms' own
device order. So index 0 is a usable device whenever there is one, and an index means the same
device across runs as long as the set of usable devices does not change. A selector is an
index, `P:D` as in `PYOPENCL_CTX` (the platforms' and devices' own order), or a
case-insensitive name substring.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import pyopencl as cl

from .health import Health, health

#: Vendor-name normalisation is data: (pattern, canonical vendor).
VENDOR_ALIASES: tuple[tuple[str, str], ...] = (
    (r"nvidia", "nvidia"),
    (r"advanced micro devices|\bamd\b|\bati\b", "amd"),
    (r"intel", "intel"),
    (r"apple", "apple"),
    (r"arm\b|\bmali\b", "arm"),
    (r"qualcomm", "qualcomm"),
    (r"portable computing language|pocl", "pocl"),
    (r"oclgrind", "oclgrind"),
)
#: Prefixes some runtimes put before the hardware name (PoCL: "pthread-", "cpu-").
NAME_PREFIXES: tuple[str, ...] = ("pthread-", "cpu-", "basic-")


class DeviceError(LookupError):
    """No device matches a selector, or the device is unusable (its probe kernel failed); the
    message gives the reason, the fix and the devices there are, on one line."""


@dataclass(frozen=True)
class DeviceInfo:
    """What cltune needs to know about one device; plain data, no OpenCL handles."""

    index: int
    platform_index: int
    device_index: int
    platform: str
    platform_version: str
    vendor: str
    name: str
    type: str
    driver: str
    version: str
    opencl_c: str
    compute_units: int
    local_mem: int
    max_wg: int
    global_mem: int
    fp64: bool
    fp16: bool
    subgroups: bool
    warp_size: int  # CL_DEVICE_WARP_SIZE_NV / CL_DEVICE_WAVEFRONT_WIDTH_AMD, 0 if none
    int64_atomics: bool = False  # cl_khr_int64_base_atomics (single pass, 64-bit partials)

    @property
    def model(self) -> str:
        """Hardware name with runtime prefixes and extra spaces removed."""
        name = self.name.strip()
        for p in NAME_PREFIXES:
            if name.lower().startswith(p):
                name = name[len(p):]
        return re.sub(r"\s+", " ", name)

    @property
    def release(self) -> str:
        """A version tag that tells implementations with one platform name apart (PoCL's
        '3.0-rc2' vs '3.1+debian'); else the driver version."""
        m = re.search(r"PoCL\s+(\S+)", self.platform_version)
        return m.group(1) if m else self.driver

    @property
    def is_nvidia(self) -> bool:
        return self.vendor == "nvidia" and "nvidia" in self.platform.lower()

    #: what the hardware is (`hardware_key`), and what runs it besides (with it: `fingerprint`)
    HARDWARE_FIELDS = ("vendor", "type", "model", "compute_units", "local_mem", "max_wg")
    SETUP_FIELDS = ("platform", "platform_version", "driver", "opencl_c")

    def hardware_parts(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.HARDWARE_FIELDS}

    def fingerprint_parts(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.HARDWARE_FIELDS + self.SETUP_FIELDS}

    @property
    def fingerprint(self) -> str:
        blob = json.dumps(self.fingerprint_parts(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def hardware_key(self) -> str:
        blob = json.dumps(self.hardware_parts(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["model"] = self.model
        d["fingerprint"] = self.fingerprint
        return d

    def cl_device(self) -> cl.Device:
        return cl.get_platforms()[self.platform_index].get_devices()[self.device_index]


def normalise_vendor(*names: str) -> str:
    text = " ".join(names).lower()
    for pattern, vendor in VENDOR_ALIASES:
        if re.search(pattern, text):
            return vendor
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def _type_name(t: int) -> str:
    for flag, name in (
        (cl.device_type.GPU, "gpu"),
        (cl.device_type.CPU, "cpu"),
        (cl.device_type.ACCELERATOR, "accelerator"),
    ):
        if t & flag:
            return name
    return "other"


def _safe(get, default):  # noqa: ANN001 - tiny helper for optional queries
    try:
        return get()
    except (cl.Error, AttributeError, cl.LogicError):
        return default


def describe(dev: cl.Device, index: int = -1, pidx: int = -1, didx: int = -1) -> DeviceInfo:
    plat = dev.platform
    ext = dev.extensions.split()
    warp = _safe(lambda: dev.warp_size_nv, 0) or _safe(lambda: dev.wavefront_width_amd, 0) or 0
    sg = "cl_khr_subgroups" in ext or _safe(lambda: dev.max_num_sub_groups, 0) > 0
    return DeviceInfo(
        index=index,
        platform_index=pidx,
        device_index=didx,
        platform=plat.name.strip(),
        platform_version=plat.version.strip(),
        vendor=normalise_vendor(dev.vendor, plat.name),
        name=dev.name.strip(),
        type=_type_name(dev.type),
        driver=dev.driver_version.strip(),
        version=dev.version.strip(),
        opencl_c=_safe(lambda: dev.opencl_c_version, "").strip(),
        compute_units=int(dev.max_compute_units),
        local_mem=int(dev.local_mem_size),
        max_wg=int(dev.max_work_group_size),
        global_mem=int(dev.global_mem_size),
        fp64="cl_khr_fp64" in ext or _safe(lambda: dev.double_fp_config, 0) != 0,
        fp16="cl_khr_fp16" in ext,
        subgroups=bool(sg),
        warp_size=int(warp),
        int64_atomics="cl_khr_int64_base_atomics" in ext,
    )


@lru_cache(maxsize=1)
def platform_devices() -> tuple[tuple[int, int, cl.Device], ...]:
    """(platform index, device index, device) of every device pyopencl's loader lists."""
    found = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    for pidx, plat in enumerate(platforms):
        try:
            devs = plat.get_devices()
        except cl.Error:
            continue
        for didx, dev in enumerate(devs):
            found.append((pidx, didx, dev))
    return tuple(found)


_listing_lock = threading.Lock()
_listed: tuple[tuple[DeviceInfo, cl.Device, Health], ...] | None = None


def _enumerate(recheck: bool = False) -> tuple[tuple[DeviceInfo, cl.Device, Health], ...]:
    """Every device with its health, in the stable cltune order: usable devices first, then by
    platform name and version, then the platforms' and devices' own order."""
    global _listed
    with _listing_lock:
        if _listed is not None and not recheck:
            return _listed
        rows = []
        for p, d, dev in platform_devices():
            info = describe(dev, -1, p, d)
            rows.append((info, dev, health(dev, info.fingerprint, recheck=recheck)))
        rows.sort(key=lambda r: (not r[2].ok, r[0].platform, r[0].platform_version,
                                 r[0].platform_index, r[0].device_index))
        _listed = tuple((replace(info, index=i), dev, h) for i, (info, dev, h) in enumerate(rows))
        return _listed


def list_devices(*, recheck: bool = False) -> list[DeviceInfo]:
    """All OpenCL devices in the stable cltune order (usable ones first; see `_enumerate`).
    `recheck` probes every device again instead of trusting the cached verdicts."""
    return [info for info, _, _ in _enumerate(recheck)]


def device_health(info: DeviceInfo) -> Health:
    """The probe's verdict on a listed device."""
    for i, _, h in _enumerate():
        if i.fingerprint == info.fingerprint:
            return h
    return health(info.cl_device(), info.fingerprint)


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
        if len(hits) > 1:
            raise DeviceError(f"device {sel!r} is ambiguous; devices: {_listing()}")
    if len(hits) != 1:
        raise DeviceError(f"no device matches {sel!r}; devices: {_listing()}")
    info, dev, h = hits[0]
    if not h.ok:
        raise _unusable(info, h, "device")
    return info, dev


def info_for(dev: cl.Device) -> DeviceInfo:
    """The DeviceInfo of a pyopencl device (platform and device index from the loader's order;
    the cltune index only once the devices were listed, else -1). Probes nothing."""
    if _listed is not None:
        for info, d, _ in _listed:
            if d == dev:
                return info
    for p, di, d in platform_devices():
        if d == dev:
            return describe(dev, -1, p, di)
    return describe(dev)


def require_usable(dev: cl.Device, info: DeviceInfo) -> None:
    """Raise DeviceError unless the probe passes on `dev` (cached verdict, else one probe of
    this device only)."""
    h = health(dev, info.fingerprint)
    if not h.ok:
        raise DeviceError(f"device {info.name} ({info.platform} {info.release}) is unusable: "
                          f"{h.message}; fix: {h.fix}")
