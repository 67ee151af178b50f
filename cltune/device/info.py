"""What cltune knows about one OpenCL device, as plain data: its capabilities, its
fingerprint (hardware plus driver) and hardware key, read from pyopencl (`describe`), and the
devices pyopencl's loader lists (`platform_devices`). No probing, ordering or selection here
(`devices.py`)."""

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
    #: the widest vector (bytes) that works here; 0: no limit known. Set from the device's
    #: health verdict (health.py), never part of the fingerprint
    max_vector_bytes: int = 0

    def vector_cap(self, element_bytes: int, want: int = 16) -> int:
        """The widest power-of-two vector width <= `want` of `element_bytes` lanes allowed."""
        if not self.max_vector_bytes:
            return want
        v = 1
        while v * 2 <= want and v * 2 * element_bytes <= self.max_vector_bytes:
            v *= 2
        return v

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
