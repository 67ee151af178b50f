"""cltune: autotuned OpenCL reductions with a persistent tuning database.

    >>> from cltune import get_reducer
    >>> reduce_sum = get_reducer(queue)          # a pyopencl Device, Context or CommandQueue
    >>> total = reduce_sum(x)                    # 0-d pyopencl Array, like pyopencl.array.sum
"""

from __future__ import annotations

from importlib.util import find_spec as _find_spec
from pathlib import Path as _Path

if _find_spec("cltune.tuning_db") is None:  # kernels/ and tuning_db/ install into cltune.*
    _root = _Path(__file__).resolve().parent.parent
    raise ImportError(
        f"cltune was imported from the source checkout {_root} without being installed: run "
        f"`pip install -e {_root}` (or run from another directory than the checkout)"
        if (_root / "tuning_db").is_dir() else
        f"cltune at {_root} is installed without cltune.tuning_db: reinstall it")

from .icd import register as _register_icd  # noqa: E402
from .version import __version__

_register_icd()  # before anything asks pyopencl for platforms: Intel's runtime from pip

from .config import Config, ConfigError  # noqa: E402
from .devices import DeviceError  # noqa: E402
from .reducers import get_reducer  # noqa: E402
from .reduction_kernel import ReductionKernel  # noqa: E402
from .runtime import Explanation, Reducer, clear_caches  # noqa: E402
from .stats import all, any, argmax, argmin, count_nonzero, mean, norm, std, var  # noqa: E402

__all__ = ["Config", "ConfigError", "DeviceError", "Explanation", "Reducer", "ReductionKernel",
           "__version__", "all", "any", "argmax", "argmin", "clear_caches", "count_nonzero",
           "get_reducer", "mean", "norm", "std", "var"]
