"""`cltune.PythonKernel`: Kernel Tuner's `PythonKernel` — an application's kernel as a Python
function — with its parameters from cltune's database.

The parameters are `params` where given; the others come from the best stored config of this
kernel (its name and the hash of its source, options and defines) on this device for the
problem size (exact, else the nearest tuned one: log distance over the dimensions), along
the database's fallback chain (this device and driver, the same device under another driver
or setup, shipped results, the vendor's most chosen config); a `results_file` (Kernel Tuner's
`store_results` JSON) is read as Kernel Tuner reads it. Nothing tuned: the kernel runs with
`params` and, where `tune_params=` (and `restrictions=`) name its space, the first config of
that space that keeps them (else its `#ifndef` defaults, a work-group of 256), run once in the
worker first; a `CltuneWarning` says so.
`k.params` holds what it uses, `k.explain()` where each came from.

A config that did not run in the tuner's worker on this device and driver (any level but
`exact`, a row imported from a Kernel Tuner cache file, a results file, parameters given by
the caller, the defaults) runs once in the device's evaluation worker before this
process builds it (`isolation.vetting.checked`, the verdict kept): one that crashes, hangs or
fails there raises `KernelRunError` with the reason instead of taking the process down.

First-use tuning (`tune="first-use"` with `tune_params=`, and `answer=`/`tune_options=` for
`tune_kernel`): a kernel nothing is stored for starts with its defaults while its space is
tuned in a background thread (every config judged in the worker, the results stored); the first
call after that runs the best (`k.wait_tuned()` waits for it; `k.level` is then `tuned`).

Calls: `k(*args)` / `k.run_kernel(args)` copy the inputs in, launch, and return the outputs as
numpy arrays (Kernel Tuner's contract); `k.launch(*args, queue=, wait_for=)` takes pyopencl
arrays, buffers and numpy scalars as they are and returns the launch's event (no copies).
"""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.serving import CltuneWarning
from cltune.isolation.vetting import checked
from cltune.opencl.kernel_args import setter
from cltune.user import family, remote
from cltune.user.interop import IMPORTED
from cltune.user.kernel import Kernel
from cltune.user.run import KernelRunError
from cltune.user.source import DEFAULT_BLOCK_NAMES
from cltune.user.space import Space


def nearest(size: tuple[int, ...], rows: Sequence[Any]) -> Any | None:  # noqa: ANN401
    """The row whose size class is `size`, else the nearest (sum of |log2| differences over
    the dimensions; ties: the larger problem)."""
    best, key = None, None
    want = [*size, 1, 1][:3]
    for r in rows:
        try:
            have = [*family.size_of(r.size_class), 1, 1][:3]
        except ValueError:
            continue
        d = sum(abs(math.log2(a) - math.log2(b)) for a, b in zip(want, have, strict=True))
        k = (d, -math.prod(have))
        if key is None or k < key:
            best, key = r, k
    return best


def _from_results_file(path: Any, device_name: str, problem_size: str) -> dict:  # noqa: ANN401
    """Kernel Tuner's `store_results` file: the best of this device and size, else the config
    best most often over the sizes (ties: the smaller summed objective)."""
    data = json.loads(Path(path).read_text())
    obj = data.get("objective", "time")
    hib = bool(data.get("objective_higher_is_better", False))
    dev = re.sub("[^0-9a-zA-Z]+", "_", device_name.strip())
    rows = [d for d in data.get("data", ()) if isinstance(d, dict)]
    mine = [d for d in rows if d.get("device_name") == dev] or rows
    exact = [d for d in mine if d.get("problem_size") == problem_size]
    pick = exact or mine
    if not pick:
        return {}
    counts: dict[str, list] = {}
    for d in pick:
        k = json.dumps(d.get("tunable_parameters", {}), sort_keys=True)
        counts.setdefault(k, []).append(float(d.get(obj, 0) or 0))
    k = max(counts, key=lambda c: (len(counts[c]), -sum(counts[c]) if not hib
                                   else sum(counts[c])))
    return dict(json.loads(k))


class PythonKernel:
    """An application's kernel as a function, its parameters from cltune's database.

        >>> k = cltune.PythonKernel("vector_add", src, n, [c, a, b, np.int32(n)])
        >>> c_out, = k(c, a, b, np.int32(n))      # outputs as numpy arrays
        >>> k.params, k.explain()
    """

    def __init__(self, kernel_name: str, kernel_string: Any, problem_size: Any,  # noqa: ANN401
                 arguments: Sequence[Any], params: Mapping[str, Any] | None = None,
                 inputs: Sequence[bool] | None = None, outputs: Sequence[bool] | None = None,
                 device: Any = 0, platform: Any = 0,  # noqa: ANN401
                 block_size_names: Sequence[str] | None = None, grid_div_x: Any = None,  # noqa: ANN401
                 grid_div_y: Any = None, grid_div_z: Any = None, verbose: bool = True,  # noqa: ANN401
                 lang: Any = None, results_file: Any = None, *, db: Any = None,  # noqa: ANN401
                 compiler_options: Sequence[str] | None = None,
                 defines: Mapping[str, Any] | None = None,
                 queue: cl.CommandQueue | None = None, tune_params: Any = None,  # noqa: ANN401
                 tune: str | None = None, answer: Sequence[Any] | None = None,
                 tune_options: Mapping[str, Any] | None = None,
                 restrictions: Any = None) -> None:  # noqa: ANN401
        given = dict(params or {})
        if queue is not None:  # the application's queue: its device and context
            device = queue.device
        self._k = k = Kernel(kernel_name, kernel_string, problem_size, arguments,
                             grid_div=(grid_div_x, grid_div_y, grid_div_z),
                             block_size_names=block_size_names, tune_params=given,
                             compiler_options=compiler_options, defines=defines, lang=lang,
                             device=device, platform=platform)
        size = k.size_class(given)
        self.level, self.why, self.source_of = "given", "", dict.fromkeys(given, "params")
        self.ran_here = False  # the config ran in cltune's tuner on this device and driver
        stored: dict = {}
        if results_file is not None:
            stored = _from_results_file(results_file, k.dev.name, size)
            self.level, self.why = "results_file", str(results_file)
        else:
            stored = self._from_db(db, size)
        for name, v in stored.items():
            if name not in given:
                given[name] = v
                self.source_of[name] = self.level
        family.KernelParams(given)  # every value checked before it reaches the compiler
        self.params = given
        if not stored and self.level != "results_file" and tune_params:
            # the first config of the space (Kernel Tuner's order) that keeps the given
            # params, within the restrictions and the device's work-group limit
            space = Space(tune_params, restrictions, k.max_threads)
            for cfg in space.configs:
                if all(cfg.get(n, v) == v for n, v in given.items()):
                    for n, v in cfg.items():
                        if n not in given:
                            given[n] = v
                            self.source_of[n] = "space default"
                    break
        if not stored and self.level != "results_file":
            self.level = "defaults"
            self.why = "not tuned on this device (no stored config for this kernel)"
            warnings.warn(f"cltune: {kernel_name}: {self.why}; running with "
                          f"{family.KernelParams(given).short()}", CltuneWarning, stacklevel=2)
        self.verbose = verbose
        n = len(k.arguments)
        self.inputs = list(inputs) if inputs is not None else [True] * n
        self.outputs = list(outputs) if outputs is not None else [True] * n
        if queue is None:  # the context kept beside its queue: Intel's CPU runtime (2026.22)
            # frees a context whose last handle the application dropped, queues or not
            self.ctx = cl.Context([k.dev])
            self.queue = cl.CommandQueue(self.ctx, k.dev)
        else:
            self.queue, self.ctx = queue, queue.context
        self._types = tuple(type(a) if isinstance(a, np.generic) else None
                            for a in k.arguments)
        self._lock = threading.Lock()
        self._pending: dict | None = None
        self._tuner: threading.Thread | None = None
        self._install(given)
        self.gpu_args = [cla.to_device(self.queue, np.ascontiguousarray(a)).data
                         if isinstance(a, np.ndarray) else a for a in k.arguments]
        if tune == "first-use" and self.level == "defaults":
            opts = dict(tune_options or {})
            if restrictions is not None:
                opts.setdefault("restrictions", restrictions)
            self._tune_in_background(kernel_string, tune_params, db, answer, opts)
        elif tune not in (None, "first-use"):
            raise ValueError(f"tune={tune!r:.20}: None or 'first-use'")

    def _install(self, params: dict) -> None:
        """Build `params` here (after a run in the worker unless the tuner ran it on this
        device and driver) and make it the one launched."""
        k = self._k
        job = k.job(params)
        if not self.ran_here or any(self.source_of.get(n) == "params" for n in params):
            spec = remote.Spec(k.arguments, None, None, 0.0, 1, k.compiler_options)
            v = checked(k.info, "kernel", f"{k.variant}:{family.KernelParams(params).key()}:"
                        f"{job.gsize}", remote.vet, spec, job)
            if not v.ok:
                raise KernelRunError(f"{k.name} with {family.KernelParams(params).short()} "
                                     f"did not run on {k.dev.name}: {v.reason}")
        prg = cl.Program(self.ctx, job.text).build(options=k.compiler_options)
        self.kernel = getattr(prg, job.name)
        self.job, self.params = job, params
        self._setter = setter(self.kernel, self._types)

    def _tune_in_background(self, source_arg: Any, tune_params: Any, db: Any,  # noqa: ANN401
                            answer: Any, options: dict) -> None:  # noqa: ANN401
        """First-use tuning: the space tuned in a thread (its configs judged in the worker),
        the best launched from the first call after it finished."""
        if not tune_params:
            raise ValueError("tune='first-use' needs tune_params (the space to tune)")
        from cltune.user.tune import tune_kernel  # lazy: the tuner, only when tuning

        k = self._k
        args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in k.arguments]
        given = {n: v for n, v in self.params.items() if self.source_of.get(n) == "params"}
        names = None if tuple(k.block_names) == DEFAULT_BLOCK_NAMES else list(k.block_names)
        self.why += "; tuning at first use in the background"

        def run() -> None:
            try:
                _, env = tune_kernel(k.name, source_arg, k.problem_size, args, tune_params,
                                     *k.grid_div, device=k.dev, db=db, answer=answer,
                                     quiet=True, compiler_options=k.compiler_options,
                                     defines=k.defines, block_size_names=names, **options)
            except Exception as e:  # noqa: BLE001 - the application goes on with its config
                warnings.warn(f"cltune: first-use tuning of {k.name} failed: {e}",
                              CltuneWarning, stacklevel=1)
                return
            best = env.get("best_config")
            if best is not None:
                with self._lock:
                    self._pending = {**{n: best[n] for n in tune_params}, **given}

        self._tuner = threading.Thread(target=run, name=f"cltune-first-use-{k.name[:20]}",
                                       daemon=True)
        self._tuner.start()

    def wait_tuned(self, timeout: float | None = None) -> bool:
        """Wait for first-use tuning (if any); whether its best now serves."""
        if self._tuner is not None:
            self._tuner.join(timeout)
        self._swap()
        return self.level == "tuned"

    def _swap(self) -> None:
        if self._pending is None:
            return
        with self._lock:
            params, self._pending = self._pending, None
        if params is None:
            return
        self.ran_here = True
        self.source_of = {n: "tuned" for n in params}
        self._install(params)
        self.level, self.why = "tuned", "tuned at first use on this device"

    def _from_db(self, db: Any, size: str) -> dict:  # noqa: ANN401
        from cltune.tuning_db.answer import answer  # lazy: the database layer, when serving

        ans = answer(self._k.info, db, family.NAME, self._k.variant, stacklevel=4)
        rows = []
        for r in ans.rows:
            try:
                family.KernelParams(r.config)
            except ValueError:  # nothing stored that does not validate reaches the compiler
                continue
            rows.append(r)
        r = nearest(family.size_of(size), rows)
        if r is None:
            return {}
        self.level = ans.level
        self.ran_here = ans.level == "exact" and r.cltune_version != IMPORTED
        self.why = f"{ans.why}; problem size {r.size_class}" + (
            "" if r.size_class == size else f" (nearest to {size})")
        return dict(r.config)

    def explain(self) -> str:
        """Where the parameters came from."""
        parts = ", ".join(f"{k}={v} ({self.source_of.get(k, '?')})"
                          for k, v in self.params.items()) or "(none)"
        return f"{self._k.name} on {self._k.dev.name}: {parts} [{self.level}: {self.why}]"

    def update_gpu_args(self, args: Sequence[Any]) -> list:
        for i, a in enumerate(args):
            if not self.inputs[i]:
                continue
            if isinstance(a, np.ndarray) and isinstance(self.gpu_args[i], cl.Buffer):
                cl.enqueue_copy(self.queue, self.gpu_args[i], np.ascontiguousarray(a))
            else:
                self.gpu_args[i] = a
        return self.gpu_args

    def get_gpu_result(self, args: Sequence[Any]) -> list:
        out = []
        for i, a in enumerate(args):
            if self.outputs[i] and isinstance(a, np.ndarray):
                r = np.zeros_like(a)
                cl.enqueue_copy(self.queue, r, self.gpu_args[i])
                out.append(r)
        self.queue.finish()
        return out

    def run_kernel(self, args: Sequence[Any]) -> list:
        if self._pending is not None:
            self._swap()
        self.update_gpu_args(args)
        self.kernel(self.queue, self.job.gsize, self.job.lsize, *self.gpu_args)
        return self.get_gpu_result(args)

    def __call__(self, *args: Any) -> list:  # noqa: ANN401
        return self.run_kernel(args)

    def launch(self, *args: Any, queue: cl.CommandQueue | None = None,  # noqa: ANN401
               wait_for: Sequence[cl.Event] | None = None) -> cl.Event:
        """One launch on device data as it is (pyopencl arrays, buffers, numpy scalars) on
        `queue` (this kernel's queue when None: the one given to the constructor, else its
        own). Buffers are set on every call, scalars only when they changed (the families'
        warm-launch path, `opencl.kernel_args.ArgSetter`)."""
        if self._pending is not None:
            self._swap()
        vals = [a.data if type(a) is cla.Array else a for a in args]
        if len(vals) != len(self._types):
            raise TypeError(f"{self._k.name} takes {len(self._types)} arguments, "
                            f"{len(vals)} given")
        return self._setter.launch(queue or self.queue, self.job.gsize, self.job.lsize, vals,
                                   wait_for)
