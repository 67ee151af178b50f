"""What `tune_kernel`, `run_kernel` and `PythonKernel` share about one application kernel: the
device (Kernel Tuner's `platform`/`device` indices, or cltune's selectors), the source, the
block size names, the grid divisors, and the job (prepared source, kernel name, launch sizes)
of one set of parameters.

    >>> # Kernel(name, source, problem_size, arguments, ...) .job(params) -> remote.Job
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.device.select import info_for, select
from cltune.user import family, grid, remote, source


class KernelOptionError(ValueError):
    """An option of tune_kernel / run_kernel / PythonKernel that cltune cannot take."""


def open_device(device: Any = 0, platform: Any = 0) -> tuple[DeviceInfo, cl.Device]:  # noqa: ANN401
    """Kernel Tuner's `platform`/`device` (indices into pyopencl's platforms and that
    platform's devices), or cltune's selectors: a `pyopencl.Device`, a `DeviceInfo`, a name
    substring or `P:D` text (as `cltune devices` lists them)."""
    if isinstance(device, cl.Device):
        return info_for(device), device
    if isinstance(device, DeviceInfo):
        return select(str(device.index) if device.index >= 0 else
                      f"{device.platform_index}:{device.device_index}")
    if isinstance(device, str):
        return select(device)
    if isinstance(device, bool) or not isinstance(device, int) or not isinstance(
            platform, int) or isinstance(platform, bool):
        raise KernelOptionError(f"device {device!r:.40} / platform {platform!r:.40}: give "
                                "indices (ints), a pyopencl.Device or a device name")
    plats = cl.get_platforms()
    if not 0 <= platform < len(plats):
        raise KernelOptionError(f"platform {platform} does not exist ({len(plats)} OpenCL "
                                f"platforms)")
    devs = plats[platform].get_devices()
    if not 0 <= device < len(devs):
        raise KernelOptionError(f"device {device} does not exist on platform {platform} "
                                f"({plats[platform].name}: {len(devs)} devices)")
    return info_for(devs[device]), devs[device]


def check_lang(lang: Any, text: str) -> None:  # noqa: ANN401
    if lang is None:
        if "__global__" in text and "__kernel" not in text:
            raise KernelOptionError("this looks like a CUDA kernel; cltune tunes OpenCL kernels")
        return
    if not isinstance(lang, str) or lang.upper() != "OPENCL":
        raise KernelOptionError(f"lang={lang!r:.20}: cltune tunes OpenCL kernels only")


def no_special_memory(smem_args: Any, cmem_args: Any, texmem_args: Any) -> None:  # noqa: ANN401
    for name, v in (("shared", smem_args), ("constant", cmem_args), ("texture", texmem_args)):
        if v is not None:
            raise NotImplementedError(f"PyOpenCL backend does not support {name} memory "
                                      f"arguments (as in Kernel Tuner); declare them in the "
                                      f"kernel")


class Kernel:
    """One application kernel on one device: `job(params)` is what the worker builds and
    launches for a set of parameters."""

    def __init__(self, kernel_name: str, kernel_source: Any, problem_size: Any,  # noqa: ANN401
                 arguments: Sequence[Any], *, grid_div: Sequence[Any] = (None, None, None),
                 block_size_names: Sequence[str] | None = None,
                 tune_params: Mapping[str, Any] | None = None,
                 compiler_options: Sequence[str] | None = None,
                 defines: Mapping[str, Any] | None = None, lang: Any = None,  # noqa: ANN401
                 device: Any = 0, platform: Any = 0, tuning: bool = False) -> None:  # noqa: ANN401
        if not isinstance(kernel_name, str) or not kernel_name.strip():
            raise KernelOptionError("kernel_name must be the name of the __kernel function")
        if not isinstance(arguments, (list, tuple)):
            raise KernelOptionError("arguments must be a list of numpy arrays and scalars")
        if compiler_options is not None and (isinstance(compiler_options, str) or not all(
                isinstance(o, str) for o in compiler_options)):
            raise KernelOptionError("compiler_options must be a list of strings")
        if defines is not None and not isinstance(defines, Mapping):
            raise KernelOptionError("defines must be a dict of name -> value")
        self.name = kernel_name
        self.src = source.read_source(kernel_source)
        check_lang(lang, self.src.text)
        self.problem_size = problem_size
        self.arguments = list(arguments)
        self.grid_div = tuple(grid_div)
        self.block_names = grid.block_names(block_size_names, tune_params or {}, warn=tuning)
        self.compiler_options = list(compiler_options or [])
        self.defines = defines
        self.info, self.dev = open_device(device, platform)
        self.max_threads = int(self.dev.max_work_group_size)
        self.nbytes = sum(int(getattr(a, "nbytes", 0)) for a in self.arguments
                          if not isinstance(a, np.generic))
        if self.src.generator is None:  # (a generator's text is known per set of params)
            source.check_arguments(kernel_name, self.src.text, self.arguments)
        self.digest = self.src.digest(kernel_name, self.compiler_options, defines)
        self.variant = family.variant(_identifier(kernel_name), self.digest)
        self._folders: list[str] = []

    def size_class(self, params: Mapping[str, object]) -> str:
        return family.size_class(grid.problem_dims(self.problem_size, params))

    def job(self, params: Mapping[str, object]) -> remote.Job:
        dims = grid.problem_dims(self.problem_size, params)
        block = grid.block_dims(params, self.block_names)
        g = grid.grid_dims(dims, params, self.grid_div, self.block_names)
        head = source.prefix(params, g, block, self.block_names, self.defines)
        text = head + self.src.text_for(params)
        if self.src.others:
            folder = source.files_folder()
            self._folders.append(folder)
            text = source.files_beside(self.src, text, Path(folder), head)
        gsize = tuple(a * b for a, b in zip(g, block, strict=False))
        return remote.Job(dict(params), text, source.kernel_name_of(self.name, params),
                          gsize, block)

    def cleanup(self) -> None:
        for f in self._folders:
            shutil.rmtree(f, ignore_errors=True)
        self._folders.clear()


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out[:1].isalpha() or out[:1] == "_" else f"k_{out}"
