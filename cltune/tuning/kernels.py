"""Tuning an application's kernels: `knl.tune(...)`, opt-in tuning at first use (a background
thread on a private queue), and the library side of `cltune tune --kernel module:attribute`,
for `cltune.ReductionKernel` (family `expr`, `expr_axis` along axes) and
`cltune.GenericScanKernel` (family `gscan`).

All drive the family-agnostic tuner (`tuner.Tuner`) with the kernel's fingerprint as the
variant and the kernel object as a target option; results go to the same database and
fallback chain as every other family.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import VectorArg

from cltune.core import family
from cltune.core.buckets import MAX_BUCKET, MIN_BUCKET, bucket_of
from cltune.core.serving import CltuneWarning
from cltune.core.shapes import class_of_view, geometry
from cltune.device.select import info_for
from cltune.opencl.expression import ExprSpec
from cltune.opencl.samples import random_args
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store, default_storage_url

log = logging.getLogger(__name__)


#: the families a ReductionKernel's results are stored under (whole, along an axis), and a
#: GenericScanKernel's
EXPR, EXPR_AXIS, GSCAN = "expr", "expr_axis", "gscan"


def synthetic_args(spec: ExprSpec, queue: cl.CommandQueue, n: int,
                   seed: int = 0) -> tuple[Any, ...]:
    """Random vectors of n elements (floats in [0, 1), integers 0..99, booleans, structs
    zeroed) and zero scalars, in the order of the kernel's arguments."""
    return random_args(spec.arguments, queue, n, seed)


def _storage_for(db: str | None, storage: str | None) -> str:
    """Optuna's storage: `storage`, else `tuning_db.default_storage_url(db)`."""
    return storage or default_storage_url(db)


def _tune(q: cl.CommandQueue, opts: TuneOptions, db: str | None, storage: str | None,
          progress: Any) -> list[Any]:
    """The tuner on q's device with `opts`, its results stored in `db`."""
    store = Store.open(db)
    try:
        return Tuner(q.context, q.device, info_for(q.device), store, _storage_for(db, storage),
                     opts, progress).run()
    finally:
        store.close()


def tune_kernel(knl: Any, sample_args: tuple[Any, ...], *, trials: int = 30,
                timeout: float = 120.0, queue: cl.CommandQueue | None = None,
                db: str | None = None, storage: str | None = None, seed: int = 0,
                progress: Any = None, n: int | None = None) -> list[Any]:
    """Tune `knl` on `sample_args` (its size class is the nearest 2^k to their length, or to
    `n` for a kernel without vector arguments) on the queue's device (default: the first
    vector's queue); store the best in `db`."""
    vecs = [a for a, t in zip(sample_args, knl.spec.arguments, strict=False)
            if isinstance(t, VectorArg)]
    if len(sample_args) != len(knl.spec.arguments):
        raise TypeError(f"tune takes the kernel's {len(knl.spec.arguments)} arguments, "
                        f"got {len(sample_args)}")
    if not vecs and n is None:
        raise TypeError("a kernel without vector arguments is tuned at an element count: "
                        "knl.tune(*args, n=..., queue=...)")
    size = vecs[0].size if vecs else int(n)  # type: ignore[arg-type]
    if size < 1:
        raise ValueError("tune needs sample arguments with at least one element")
    q = queue if queue is not None else (vecs[0].queue if vecs else None)
    if q is None:
        raise TypeError("no queue: pass queue= or arrays that have one")
    bucket = min(MAX_BUCKET, max(MIN_BUCKET, bucket_of(size)))
    opts = TuneOptions(family=EXPR, variant=knl.fingerprint, buckets=(bucket,),
                       trials=trials, timeout_s=timeout, seed=seed,
                       target_options={"kernel": knl, "sample_args": tuple(sample_args),
                                       "db": db})
    return _tune(q, opts, db, storage, progress)


def start_background(knl: Any, dev: cl.Device, n: int, budget_s: float,
                     shape: tuple[int, ...] | None = None, order: str = "C",
                     axis: Any = None) -> threading.Thread:
    """Tune `knl` for inputs like n elements (with `axis`: along that axis of arrays of
    `shape` and memory `order`) in a daemon thread, on a private queue, within about
    `budget_s` seconds; the kernel re-reads the database when it is done. Failures are
    logged and warned about, never raised into the application."""
    def work(q: cl.CommandQueue, storage: str) -> None:
        args = knl.sample_args(q, max(1, n))
        if axis is None:
            tune_kernel(knl, args, trials=100_000, timeout=budget_s, queue=q, db=knl.db,
                        storage=storage, n=max(1, n))
        else:
            args = tuple(a.reshape(shape, order=order) if isinstance(a, cla.Array) else a
                         for a in args)
            knl.tune(*args, axis=axis, trials=100_000, timeout=budget_s, queue=q,
                     db=knl.db, storage=storage)

    return _in_background(knl, dev, work)


def _in_background(knl: Any, dev: cl.Device,
                   work: Callable[[cl.CommandQueue, str], None]) -> threading.Thread:
    """Run `work(queue, storage)` (a private queue of dev, Optuna's storage in a temporary
    folder) in a daemon thread, then make `knl` read the database again; a failure is kept
    in `knl.background_error`, logged and warned about, never raised into the application."""
    def run() -> None:
        try:
            q = cl.CommandQueue(knl.context, dev)
            with tempfile.TemporaryDirectory(prefix="cltune-first-use-") as tmp:
                work(q, f"sqlite:///{Path(tmp) / 'studies.db'}")
            knl.reload()
            knl.background_error = None
        except Exception as e:  # noqa: BLE001 - a background failure must not crash the app
            knl.background_error = e
            log.warning("cltune: first-use tuning of %s failed: %s", knl.name, e)
            warnings.warn(f"cltune: first-use tuning of {knl.name} failed: {e}", CltuneWarning,
                          stacklevel=1)

    t = threading.Thread(target=run, name=f"cltune-first-use-{knl.fingerprint[:8]}",
                         daemon=True)
    t.start()
    return t


def tune_along(knl: Any, sample_args: tuple[Any, ...], axis: Any, *, trials: int = 30,
               timeout: float = 120.0, queue: cl.CommandQueue | None = None,
               db: str | None = None, storage: str | None = None, seed: int = 0,
               progress: Any = None) -> list[Any]:
    """Tune `knl` along `axis` of `sample_args` (as a call takes them: its vectors of one
    shape and memory order, C- or F-contiguous) on the queue's device; the size class is the
    one nearest to their (outer, r, inner) view. The best goes to `db`; the kernel's reducers
    along axes read the database again."""
    axis_reducer = family.entry("expr_axis", "api").axis_reducer

    spec: ExprSpec = knl.spec
    if len(sample_args) != len(spec.arguments):
        raise TypeError(f"tune takes the kernel's {len(spec.arguments)} arguments, "
                        f"got {len(sample_args)}")
    vecs = [a for a, t in zip(sample_args, spec.arguments, strict=True)
            if isinstance(t, VectorArg)]
    if not vecs or not all(isinstance(v, cla.Array) for v in vecs):
        raise TypeError("tune along an axis takes pyopencl Arrays for the vector arguments")
    x = vecs[0]
    if any(v.shape != x.shape or v.strides != x.strides for v in vecs) or not x.flags.forc:
        raise ValueError("the vector arguments must be contiguous arrays of one shape and "
                         "memory order")
    g = geometry(tuple(x.shape), bool(x.flags.c_contiguous), axis, False)
    if not g.mem or g.r == 0 or g.outer * g.inner <= 1:
        raise ValueError(f"nothing to tune along axis={axis!r} of shape {x.shape}: one output "
                         "is the 1-D kernel's job (knl.tune(x) tunes that), no element none")
    view = (g.outer, g.r, g.inner)
    layout, key = class_of_view(*view)
    q = queue if queue is not None else x.queue
    if q is None:
        raise TypeError("no queue: pass queue= or arrays that have one")
    dev = q.device
    opts = TuneOptions(family=EXPR_AXIS, variant=f"{spec.fingerprint}/{layout}",
                       buckets=(key,), trials=trials, timeout_s=timeout, seed=seed,
                       target_options={"kernel": knl, "sample_args": tuple(sample_args),
                                       "sample_view": view, "db": db})
    res = _tune(q, opts, db, storage, progress)
    for d in dict.fromkeys((db, knl.db)):
        axis_reducer(q.context, dev, spec, d).reload()
    return res


def tune_scan_kernel(knl: Any, sample_args: tuple[Any, ...], *, trials: int = 30,
                     timeout: float = 120.0, queue: cl.CommandQueue | None = None,
                     db: str | None = None, storage: str | None = None, seed: int = 0,
                     size: int | None = None, progress: Any = None) -> list[Any]:
    """Tune the GenericScanKernel `knl` on `sample_args` (as a call takes them; its size class
    is the nearest 2^k to their first array's length, or to `size`) on the queue's device
    (default: the first array's queue); store the best in `db`."""
    if len(sample_args) != len(knl.parsed_args):
        raise TypeError(f"tune takes the kernel's {len(knl.parsed_args)} arguments, "
                        f"got {len(sample_args)}")
    first = sample_args[knl.first_array_idx]
    if not isinstance(first, cla.Array):
        raise TypeError("tune takes pyopencl Arrays for the kernel's array arguments")
    n = int(size) if size is not None else int(first.shape[0])
    if n < 1:
        raise ValueError("tune needs sample arguments with at least one element")
    q = queue if queue is not None else first.queue
    if q is None:
        raise TypeError("no queue: pass queue= or arrays that have one")
    bucket = min(MAX_BUCKET, max(MIN_BUCKET, bucket_of(n)))
    opts = TuneOptions(family=GSCAN, variant=knl.fingerprint, buckets=(bucket,),
                       trials=trials, timeout_s=timeout, seed=seed,
                       target_options={"kernel": knl, "sample_args": tuple(sample_args),
                                       "sample_size": n, "db": db})
    return _tune(q, opts, db, storage, progress)


def start_background_scan(knl: Any, dev: cl.Device, n: int, budget_s: float,
                          ) -> threading.Thread:
    """Tune the GenericScanKernel `knl` for calls of n elements in a daemon thread, on a
    private queue, within about `budget_s` seconds, on its `sample_args` (the application's
    own arrays are never touched); the kernel re-reads the database when it is done.
    Failures are logged and warned about, never raised into the application."""
    def work(q: cl.CommandQueue, storage: str) -> None:
        tune_scan_kernel(knl, knl.sample_args(q, max(1, n)), trials=100_000,
                         timeout=budget_s, queue=q, db=knl.db, storage=storage,
                         size=max(1, n))

    return _in_background(knl, dev, work)
