"""`cltune.run_kernel`: Kernel Tuner's `run_kernel` — one launch of an application's kernel
with one set of parameters, its arguments' values after it — run in the device's evaluation
worker, so a kernel that crashes the driver or never returns raises here instead of taking
the application with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cltune.isolation.worker import WorkerFailure
from cltune.user import remote
from cltune.user.kernel import Kernel, KernelOptionError, no_special_memory
from cltune.user.session import Session


class KernelRunError(RuntimeError):
    """The kernel did not build, or its launch failed, crashed or hung (the reason said)."""


def run_kernel(kernel_name: str, kernel_source: Any, problem_size: Any,  # noqa: ANN401
               arguments: Sequence[Any], params: Mapping[str, Any],
               grid_div_x: Any = None, grid_div_y: Any = None, grid_div_z: Any = None,  # noqa: ANN401
               lang: Any = None, device: Any = 0, platform: Any = 0,  # noqa: ANN401
               smem_args: Any = None, cmem_args: Any = None, texmem_args: Any = None,  # noqa: ANN401
               compiler: Any = None, compiler_options: Sequence[str] | None = None,  # noqa: ANN401
               defines: Mapping[str, Any] | None = None,
               block_size_names: Sequence[str] | None = None, quiet: bool = False,
               log: Any = None) -> list:  # noqa: ANN401
    """Run the kernel once; one entry per argument: arrays as they are after the launch (new
    numpy arrays), scalars as given.

        >>> c, a, b, n = cltune.run_kernel("vector_add", src, n, [c, a, b, n],
        ...                                {"block_size_x": 128})
    """
    no_special_memory(smem_args, cmem_args, texmem_args)
    if not isinstance(params, Mapping):
        raise KernelOptionError("params must be a dict of parameter name -> value")
    k = Kernel(kernel_name, kernel_source, problem_size, arguments,
               grid_div=(grid_div_x, grid_div_y, grid_div_z),
               block_size_names=block_size_names, tune_params=params,
               compiler_options=compiler_options, defines=defines, lang=lang, device=device,
               platform=platform)
    try:
        job = k.job(dict(params))
        wg = job.lsize[0] * job.lsize[1] * job.lsize[2]
        if wg > k.max_threads:
            raise KernelOptionError(f"a work-group of {wg} work-items is more than "
                                    f"{k.dev.name} allows ({k.max_threads})")
        spec = remote.Spec(k.arguments, None, None, 0.0, 1, k.compiler_options)
        s = Session(k.info, spec, k.variant, planned=0)
        try:
            return s.run_once(job)
        except WorkerFailure as e:
            raise KernelRunError(f"{kernel_name}: {e.reason}") from None
    finally:
        k.cleanup()
