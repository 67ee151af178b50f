"""cltune: autotuned OpenCL reductions with a persistent tuning database."""

from __future__ import annotations

from pathlib import Path as _Path

# Running from a source checkout: `kernels/` and `tuning_db/` sit beside `cltune/` and install as
# `cltune.kernels` / `cltune.tuning_db`; make them importable the same way here.
_root = _Path(__file__).resolve().parent.parent
if (_root / "tuning_db").is_dir() and (_root / "kernels" / "reduce.cl").is_file():
    if not (_Path(__file__).parent / "tuning_db").exists():
        __path__.append(str(_root))  # type: ignore[name-defined]

__version__ = "0.1.0"
__all__ = ["__version__"]
