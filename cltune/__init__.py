"""cltune: autotuned OpenCL reductions with a persistent tuning database.

    >>> from cltune import get_reducer
    >>> reduce_sum = get_reducer(queue)          # a pyopencl Device, Context or CommandQueue
    >>> total = reduce_sum(x)                    # 0-d pyopencl Array, like pyopencl.array.sum
"""

from __future__ import annotations

from pathlib import Path as _Path

# Running from a source checkout: `kernels/` and `tuning_db/` sit beside `cltune/` and install as
# `cltune.kernels` / `cltune.tuning_db`; make them importable under the same names here.
_root = _Path(__file__).resolve().parent.parent
if (_root / "tuning_db").is_dir() and (_root / "kernels" / "reduce.cl").is_file():
    if not (_Path(__file__).parent / "tuning_db").exists() and str(_root) not in __path__:
        __path__.append(str(_root))  # type: ignore[name-defined]

__version__ = "0.1.0"

from .icd import register as _register_icd  # noqa: E402

_register_icd()  # before anything asks pyopencl for platforms: Intel's runtime from pip

from .config import Config, ConfigError  # noqa: E402
from .devices import DeviceError  # noqa: E402
from .runtime import Explanation, Reducer, get_reducer  # noqa: E402

__all__ = ["Config", "ConfigError", "DeviceError", "Explanation", "Reducer", "__version__",
           "get_reducer"]
