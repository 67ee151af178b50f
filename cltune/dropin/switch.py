"""One switch for a whole pyopencl application (issue 42): while it is on, every reduction and
scan pyopencl builds is cltune's —

- `pyopencl.reduction.ReductionKernel`, and so the kernels behind `pyopencl.array`'s `sum`,
  `dot`, `vdot`, `subset_dot`, `min`, `max`, `subset_min/max`, `any`, `all` (pyopencl's
  memoized getters construct them by that name: their caches are emptied on the way in and
  out, so no kernel of one kind is served as the other);
- `pyopencl.scan`'s `GenericScanKernel`, `InclusiveScanKernel`, `ExclusiveScanKernel`, and so
  `pyopencl.array.cumsum` and `pyopencl.algorithm`'s `copy_if`, `remove_if`, `partition`,
  `unique` and `ListOfListsBuilder`;
- `pyopencl.algorithm.RadixSort` (cltune.families.scan.radix_sort: its keys once, then
  cltune's stable sort; a RadixSort built before the switch runs its passes on cltune's scan).

    >>> with cltune.use_in_pyopencl():        # a block
    ...     total = cla.sum(x)
    >>> cltune.use_in_pyopencl(globally=True)  # the rest of the process

`CLTUNE_PYOPENCL=1` in the environment turns it on for the whole process when cltune is
imported, and `python -m cltune.dropin app.py [args]` runs an application under it without a
changed line. Switches nest: pyopencl's own classes come back when the outermost block ends (a
global switch never ends). Kernels an application built before the switch stay pyopencl's.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

from cltune.families.expr.api import ReductionKernel
from cltune.families.scan.generic import (
    ExclusiveScanKernel,
    GenericScanKernel,
    InclusiveScanKernel,
)
from cltune.families.scan.radix_sort import RadixSort

#: the environment variable that turns the switch on for the whole process
ENV = "CLTUNE_PYOPENCL"

_lock = threading.RLock()
_depth = 0
_saved: list[tuple[Any, str, Any]] = []  # (object, attribute, pyopencl's value)


def _targets() -> list[tuple[Any, str, Any]]:
    """(object, attribute, cltune's value) for every name the switch replaces."""
    import pyopencl.algorithm as alg  # lazy: the switch alone loads pyopencl's templates (mako)
    import pyopencl.reduction as pred  # lazy: as above
    import pyopencl.scan as pscan  # lazy: as above

    ours = {"GenericScanKernel": GenericScanKernel, "InclusiveScanKernel": InclusiveScanKernel,
            "ExclusiveScanKernel": ExclusiveScanKernel}
    out = [(m, n, ours[n]) for m in (pscan, alg) for n in ours if hasattr(m, n)]
    if hasattr(alg, "RadixSort"):
        out.append((alg, "RadixSort", RadixSort))
    out.append((pred, "ReductionKernel", ReductionKernel))
    # functions that bound pyopencl's GenericScanKernel as a default argument when pyopencl
    # was imported: ScanTemplate.build_inner, RadixSort's constructor (its `scan_kernel=`)
    theirs = pscan.GenericScanKernel if pscan.GenericScanKernel is not GenericScanKernel \
        else None
    for f in (pscan.ScanTemplate.build_inner,
              getattr(getattr(alg, "RadixSort", None), "__init__", None)):
        d = getattr(f, "__defaults__", None)
        if d and theirs is not None:
            out.append((f, "__defaults__",
                        tuple(GenericScanKernel if v is theirs else v for v in d)))
    return out


def _clear() -> None:
    """Empty pyopencl's kernel caches that hold kernels of one kind or the other: its
    context-memoized getters (the reductions behind pyopencl.array; pyopencl empties those
    caches all together, its elementwise kernels too, which it then builds again from its
    binary cache) and the algorithm module's scan templates."""
    import pyopencl.algorithm as alg  # lazy: as in _targets
    import pyopencl.scan as pscan  # lazy: as in _targets
    from pyopencl.tools import clear_first_arg_caches  # lazy: as in _targets

    clear_first_arg_caches()
    for v in vars(alg).values():
        if isinstance(v, pscan.ScanTemplate):
            v.build_cache.clear()


def switch_on() -> None:
    """Enter the switch (nested entries count; `switch_off` leaves one)."""
    global _depth
    with _lock:
        if _depth == 0:
            targets = _targets()
            _saved[:] = [(o, n, getattr(o, n)) for o, n, _ in targets]
            for o, n, v in targets:
                setattr(o, n, v)
            _clear()
        _depth += 1


def switch_off() -> None:
    """Leave one entry of the switch; the last one puts pyopencl's classes back."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0:
            for o, n, v in reversed(_saved):
                setattr(o, n, v)
            _saved.clear()
            _clear()


def is_on() -> bool:
    """Whether pyopencl's reductions and scans are cltune's now."""
    return _depth > 0


class use_in_pyopencl(contextlib.ContextDecorator):  # noqa: N801 - called as a function
    """`with cltune.use_in_pyopencl():` — pyopencl's reductions and scans are cltune's within
    the block (or a function decorated with `@cltune.use_in_pyopencl()`);
    `cltune.use_in_pyopencl(globally=True)` — for the rest of the process."""

    def _recreate_cm(self) -> use_in_pyopencl:  # a decorated function: a block each call
        return use_in_pyopencl(self.globally)

    def __init__(self, globally: bool = False) -> None:
        if not isinstance(globally, bool):
            raise TypeError(f"globally must be True or False, not {globally!r}")
        self.globally = globally
        self._entered = False
        if globally:
            switch_on()

    def __enter__(self) -> use_in_pyopencl:
        if not self.globally:
            if self._entered:
                raise RuntimeError("this use_in_pyopencl() block is already entered; make "
                                   "another one to nest")
            switch_on()
            self._entered = True
        return self

    def __exit__(self, *exc: object) -> bool:
        if not self.globally and self._entered:
            self._entered = False
            switch_off()
        return False


def from_environment() -> bool:
    """Turn the switch on for the whole process when CLTUNE_PYOPENCL asks for it (1, true,
    yes, on); another value than those or 0/false/no/off/empty is one warning. True when on."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value not in ("1", "true", "yes", "on"):
        import warnings  # lazy: only a wrong setting warns

        warnings.warn(f"cltune: {ENV}={os.environ[ENV]!r} is not 1/0 (true/false): pyopencl's "
                      "own kernels are used", stacklevel=2)
        return False
    use_in_pyopencl(globally=True)
    return True
