"""cltune: autotuned OpenCL reductions with a persistent tuning database.

    >>> from cltune import get_reducer
    >>> reduce_sum = get_reducer(queue)          # a pyopencl Device, Context or CommandQueue
    >>> total = reduce_sum(x)                    # 0-d pyopencl Array, like pyopencl.array.sum
"""

from __future__ import annotations

from .icd import register as _register_icd  # noqa: E402
from .version import __version__

_register_icd()  # before anything asks pyopencl for platforms: Intel's runtime from pip

from .config import Config, ConfigError  # noqa: E402
from .devices import DeviceError  # noqa: E402
from .runtime import Explanation, Reducer, clear_caches, get_reducer  # noqa: E402

__all__ = ["Config", "ConfigError", "DeviceError", "Explanation", "Reducer", "__version__",
           "clear_caches", "get_reducer"]
