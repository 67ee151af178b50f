"""Source + build options -> a built program, the one way every family builds: the compiler's
log tail in the error, the kernels' real limits checked after the build (a config that breaks
`CL_KERNEL_WORK_GROUP_SIZE` or the local memory is refused with a reason instead of being
launched), `-cl-std` from the device's OpenCL C version, and the probe kernel each build
carries. pyopencl keeps built binaries in its on-disk cache, so a second process skips the
compiler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo


class BuildError(RuntimeError):
    """A config that does not build, or whose kernel limits it breaks, on this device."""


def compile_program(ctx: cl.Context, dev: cl.Device, source: str,
                    options: Sequence[str]) -> cl.Program:
    """Build `source` for `dev`; BuildError with the tail of the compiler's log."""
    try:
        return cl.Program(ctx, source).build(options=list(options), devices=[dev])
    except cl.Error as e:  # RuntimeError subclasses: build failure with the log
        msg = str(e).strip().splitlines()
        raise BuildError("build failed: " + " | ".join(msg[-8:])[:1200]) from None


def check_limits(kernel: cl.Kernel, dev: cl.Device, info: DeviceInfo, wg: int,
                 local_bytes: int = 0) -> None:
    """BuildError where `wg` work-items or `local_bytes` of dynamic __local (beside the
    kernel's static __local) are more than the built kernel may take on `dev`."""
    kwg = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
    if wg > kwg:
        raise BuildError(f"wg={wg} exceeds the kernel's CL_KERNEL_WORK_GROUP_SIZE={kwg}")
    static = kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev)
    if static + local_bytes > info.local_mem:
        raise BuildError(f"local memory {static} static + {local_bytes} tile bytes exceeds "
                         f"CL_DEVICE_LOCAL_MEM_SIZE={info.local_mem}")


def std_options(info: DeviceInfo) -> list[str]:
    """`-cl-std=CL3.0` where the device's OpenCL C is 3.x (compilers default to 1.2, which
    hides `__opencl_c_subgroups`); the version is parsed to numbers, never passed as text."""
    m = re.search(r"OpenCL C (\d+)\.(\d+)", info.opencl_c)
    if m and int(m.group(1)) >= 3:
        return ["-cl-std=CL3.0"]
    return []


def run_probe(ctx: cl.Context, dev: cl.Device, kernel: cl.Kernel, slots: int) -> np.ndarray:
    """Run a build's one-work-item probe kernel, which writes `slots` int flags (which
    feature paths the compiler really took)."""
    q = cl.CommandQueue(ctx, dev)
    flags = np.zeros(slots, np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, flags.nbytes)
    kernel(q, (1,), (1,), buf)
    cl.enqueue_copy(q, flags, buf)
    q.finish()
    return flags
