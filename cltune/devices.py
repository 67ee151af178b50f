"""OpenCL device enumeration, selection and capabilities, and the device fingerprint.

Devices are listed in a stable order (sorted by platform name/version, then the platform's own
device order) so an index means the same device across runs. A selector is an index, `P:D` as in
`PYOPENCL_CTX` (the platforms' and devices' own order), or a case-insensitive name substring.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from functools import lru_cache

import pyopencl as cl

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
    """No device matches a selector; the message lists the devices there are."""


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
    def is_nvidia(self) -> bool:
        return self.vendor == "nvidia" and "nvidia" in self.platform.lower()

    def hardware_parts(self) -> dict[str, object]:
        return {
            "vendor": self.vendor,
            "type": self.type,
            "model": self.model,
            "compute_units": self.compute_units,
            "local_mem": self.local_mem,
            "max_wg": self.max_wg,
        }

    def fingerprint_parts(self) -> dict[str, object]:
        return {
            **self.hardware_parts(),
            "platform": self.platform,
            "platform_version": self.platform_version,
            "driver": self.driver,
            "opencl_c": self.opencl_c,
        }

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
def _enumerate() -> tuple[tuple[DeviceInfo, cl.Device], ...]:
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
    found.sort(key=lambda t: (t[2].platform.name, t[2].platform.version, t[0], t[1]))
    return tuple((describe(d, i, p, di), d) for i, (p, di, d) in enumerate(found))


def list_devices() -> list[DeviceInfo]:
    """All OpenCL devices in the stable cltune order."""
    return [info for info, _ in _enumerate()]


def _listing() -> str:
    rows = [f"  {i.index}  [{i.platform_index}:{i.device_index}] {i.name} ({i.platform})"
            for i in list_devices()]
    return "\n".join(rows) if rows else "  (no OpenCL devices found: is an ICD installed?)"


def select(selector: str | int) -> tuple[DeviceInfo, cl.Device]:
    """Resolve an index, `P:D` or a name substring to one device."""
    devs = _enumerate()
    sel = str(selector).strip()
    if re.fullmatch(r"\d+", sel):
        for info, dev in devs:
            if info.index == int(sel):
                return info, dev
    elif re.fullmatch(r"\d+:\d+", sel):
        p, d = (int(v) for v in sel.split(":"))
        for info, dev in devs:
            if (info.platform_index, info.device_index) == (p, d):
                return info, dev
    elif sel:
        hits = [(i, d) for i, d in devs if sel.lower() in f"{i.name} {i.platform}".lower()]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise DeviceError(f"device {sel!r} is ambiguous; devices:\n{_listing()}")
    raise DeviceError(f"no device matches {sel!r}; devices:\n{_listing()}")


def info_for(dev: cl.Device) -> DeviceInfo:
    """The DeviceInfo of a pyopencl device (index from the stable order when found)."""
    for info, d in _enumerate():
        if d == dev:
            return info
    return describe(dev)
