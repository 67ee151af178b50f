"""cltune: autotuned OpenCL reductions with a persistent tuning database.

    >>> from cltune import get_reducer
    >>> reduce_sum = get_reducer(queue)          # a pyopencl Device, Context or CommandQueue
    >>> total = reduce_sum(x)                    # 0-d pyopencl Array, like pyopencl.array.sum

The public API is `__all__`, imported lazily (module `__getattr__`): `import cltune` loads
neither pyopencl nor the database, so `cltune.tuning_db` and `cltune --help` stay cheap.
"""

from __future__ import annotations

import importlib
import os as _os
from importlib.util import find_spec as _find_spec
from pathlib import Path as _Path
from typing import Any

from .device.icd import register as _register_icd
from .version import __version__ as __version__

if _find_spec("cltune.tuning_db") is None:  # kernels/ and tuning_db/ install into cltune.*
    _root = _Path(__file__).resolve().parent.parent
    raise ImportError(
        f"cltune was imported from the source checkout {_root} without being installed: run "
        f"`pip install -e {_root}` (or run from another directory than the checkout)"
        if (_root / "tuning_db").is_dir() else
        f"cltune at {_root} is installed without cltune.tuning_db: reinstall it")

_register_icd()  # before anything asks pyopencl for platforms: Intel's runtime from pip

#: public name -> the module that defines it
_API = {
    "Config": "cltune.families.reduce.config", "ConfigError": "cltune.core.config",
    "DeviceError": "cltune.device.select", "Explanation": "cltune.core.serving",
    "CltuneWarning": "cltune.core.serving", "NoConfigRuns": "cltune.isolation.vetting",
    "Reducer": "cltune.families.reduce.api", "ReductionKernel": "cltune.families.expr.api",
    "clear_caches": "cltune.opencl.caches", "get_reducer": "cltune.stats.reducers",
    "norm_many": "cltune.families.many.api",
    **{name: "cltune.families.hist.api" for name in
       ("Histogrammer", "bincount", "get_histogrammer", "histogram", "unique_counts")},
    **{name: "cltune.families.topk.api" for name in ("Selector", "get_selector", "topk")},
    **{name: "cltune.families.scan.api" for name in
       ("Scanner", "cummax", "cummin", "cumprod", "cumsum", "get_scanner")},
    **{name: "cltune.families.scan.compact" for name in
       ("copy_if", "partition", "remove_if", "unique")},
    "nonzero": "cltune.families.scan.nonzero",
    **{name: "cltune.families.scan.sort" for name in ("argsort", "sort", "sort_by_key")},
    "RadixSort": "cltune.families.scan.radix_sort",
    **{name: "cltune.families.scan.generic" for name in
       ("ExclusiveScanKernel", "GenericScanKernel", "InclusiveScanKernel")},
    "use_in_pyopencl": "cltune.dropin.switch",
    "tune_kernel": "cltune.user.tune", "run_kernel": "cltune.user.run",
    "PythonKernel": "cltune.user.runtime",
    **{name: "cltune.stats.api" for name in
       ("all", "any", "argmax", "argmin", "count_nonzero", "mean", "norm", "std", "var")},
}

__all__ = sorted([*_API, "__version__"])


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'cltune' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value  # once: later lookups never reach __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


# CLTUNE_PYOPENCL=1: pyopencl's reductions and scans are cltune's for the whole process (the
# only case in which `import cltune` loads pyopencl: the application asked for it)
if _os.environ.get("CLTUNE_PYOPENCL", "").strip():
    try:
        importlib.import_module("cltune.dropin.switch").from_environment()
    except Exception as _e:  # noqa: BLE001 - an opt-in must not break `import cltune`
        import warnings as _warnings

        _warnings.warn(f"cltune: CLTUNE_PYOPENCL is set but pyopencl's kernels stay "
                       f"pyopencl's: {type(_e).__name__}: {_e}", stacklevel=2)
