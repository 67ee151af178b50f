"""`cltune.tune_kernel`: Kernel Tuner's `tune_kernel` for OpenCL on cltune's worker and
database.

Kernel Tuner's signature and meanings (kernel_tuner 1.4; see docs/own-kernels.md), so that its
users change one import. What differs, on purpose: every config is built, checked and timed in
the device's evaluation worker, so a config that does not compile, is refused at launch,
answers wrong, crashes the driver or hangs is a failed config with its reason and the search
goes on (Kernel Tuner stops at a wrong answer or a compiler error); `results` hold the configs
that ran right, and `env["failed"]` the others (their params, `__error__`, `step`, `reason`);
every config judged goes into cltune's database (`db`: a SQLAlchemy URL or path, None for the
default database, False for none) for this device, kernel and problem size, the best by the
objective marked, so that `PythonKernel` serves it later and a rerun re-measures nothing
(`resume=False` measures again).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from cltune.user import cachefile, remote, results, strategies
from cltune.user.answers import check_answer
from cltune.user.family import KernelParams
from cltune.user.kernel import Kernel, no_special_memory
from cltune.user.session import Session
from cltune.user.source import DEFAULT_BLOCK_NAMES, KernelSourceError
from cltune.user.space import Space
from cltune.user.store import KernelResults

#: Kernel Tuner's names of a failed config's class, by the step that stopped it
ERROR_CLASS = {"build": "CompilationFailedConfig", "launch": "RuntimeFailedConfig",
               "validate": "RuntimeFailedConfig", "crashed": "RuntimeFailedConfig",
               "hung": "RuntimeFailedConfig", "error": "RuntimeFailedConfig"}


def _observers(observers: Any) -> list:  # noqa: ANN401
    """Kernel Tuner's `observers`: a list of objects with `get_results()` (and any of
    `register_device`, `register_configuration`, `before_start`, `after_start`, `during`,
    `after_finish`), run in the worker around each timed launch."""
    if not observers:
        return []
    if not isinstance(observers, (list, tuple)) or not all(
            callable(getattr(o, "get_results", None)) for o in observers):
        raise ValueError("observers must be a list of benchmark observers (objects with "
                         "get_results(), as Kernel Tuner's BenchmarkObserver)")
    return list(observers)


def tune_kernel(kernel_name: str, kernel_source: Any, problem_size: Any,  # noqa: ANN401, PLR0913
                arguments: Sequence[Any], tune_params: Mapping[str, Sequence[Any]],
                grid_div_x: Any = None, grid_div_y: Any = None, grid_div_z: Any = None,  # noqa: ANN401
                restrictions: Any = None, answer: Sequence[Any] | None = None,  # noqa: ANN401
                atol: float = 1e-6, verify: Any = None, verbose: bool = False,  # noqa: ANN401
                lang: Any = None, device: Any = 0, platform: Any = 0,  # noqa: ANN401
                smem_args: Any = None, cmem_args: Any = None, texmem_args: Any = None,  # noqa: ANN401
                compiler: Any = None, compiler_options: Sequence[str] | None = None,  # noqa: ANN401
                defines: Mapping[str, Any] | None = None, log: Any = None,  # noqa: ANN401
                iterations: int = 7, block_size_names: Sequence[str] | None = None,
                quiet: bool = False, strategy: str | None = None,
                strategy_options: Mapping[str, Any] | None = None, cache: Any = None,  # noqa: ANN401
                metrics: Mapping[str, Any] | None = None, simulation_mode: Any = None,  # noqa: ANN401
                parallel: Any = None, observers: Any = None, objective: str | None = None,  # noqa: ANN401
                objective_higher_is_better: bool | None = None, objectives: Any = None,  # noqa: ANN401
                seed: int | None = None, *, db: Any = None, resume: bool = True,  # noqa: ANN401
                ) -> tuple[list[dict], dict]:
    """Tune `kernel_name` over `tune_params` on an OpenCL device; (results, env) as Kernel
    Tuner returns them.

        >>> results, env = cltune.tune_kernel("vector_add", src, n, [c, a, b, np.int32(n)],
        ...                                   {"block_size_x": [64, 128, 256]})
        >>> env["best_config"]["block_size_x"]
    """
    t_start = time.perf_counter()
    no_special_memory(smem_args, cmem_args, texmem_args)
    if parallel:
        raise NotImplementedError("parallel=: cltune tunes an application kernel with one "
                                  "worker per device")
    observers = _observers(observers)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError("iterations must be a positive int")
    space_params = dict(tune_params) if isinstance(tune_params, Mapping) else tune_params
    k = Kernel(kernel_name, kernel_source, problem_size, arguments,
               grid_div=(grid_div_x, grid_div_y, grid_div_z), block_size_names=block_size_names,
               tune_params=space_params if isinstance(space_params, Mapping) else None,
               compiler_options=compiler_options, defines=defines, lang=lang, device=device,
               platform=platform, tuning=True)
    try:
        checked_answer = check_answer(answer, k.arguments, verify is None)
        return _tune(k, space_params, restrictions, checked_answer, atol,
                     verify, verbose, iterations, quiet, strategy, strategy_options, cache,
                     metrics, bool(simulation_mode), objective, objective_higher_is_better,
                     objectives, seed, db, resume, block_size_names, t_start, observers)
    finally:
        k.cleanup()


def _tune(k: Kernel, tune_params: Any, restrictions: Any, answer: list | None,  # noqa: ANN401, PLR0913
          atol: float, verify: Any, verbose: bool, iterations: int, quiet: bool,  # noqa: ANN401
          strategy: str | None, strategy_options: Any, cache: Any, metrics_in: Any,  # noqa: ANN401
          simulation: bool, objective_in: Any, higher_in: Any, objectives: Any,  # noqa: ANN401
          seed: int | None, db: Any, resume: bool, block_size_names: Any,  # noqa: ANN401
          t_start: float, observers: list) -> tuple[list[dict], dict]:
    metrics = results.check_metrics(metrics_in)
    objective, higher = results.objective_of(objective_in, higher_in, objectives, metrics)
    name, opts = strategies.check(strategy, strategy_options)
    default_names = tuple(k.block_names) == DEFAULT_BLOCK_NAMES or block_size_names is None
    space = Space(tune_params, restrictions, k.max_threads if default_names else None)
    if verbose:
        print(f"Searchspace has {len(space)} configurations after restrictions.")
    if not quiet:
        print("Using: " + k.dev.name)
    cfile = cachefile.CacheFile(cache, device_name=k.dev.name, kernel_name=k.name,
                                problem_size=k.problem_size, tune_params=space.tune_params,
                                objective=objective, simulation=simulation) if cache else None
    if simulation and cfile is None:
        raise ValueError("simulation_mode needs a cache file (cache=)")
    spec = remote.Spec(k.arguments, answer, verify, float(atol), iterations, k.compiler_options,
                       observers)
    session = None if simulation else Session(
        k.info, spec, k.variant, strategies.planned(name, opts, len(space)))
    stores: dict[str, KernelResults] = {}
    known: dict[str, dict] = {}
    out: list[dict] = []
    failed: list[dict] = []
    ids: dict[str, int | None] = {}
    steps_ms = 0.0
    in_cost = 0.0
    show = [*space.names, "time", *metrics]

    def store_for(cfg: Mapping[str, object]) -> KernelResults:
        sc = k.size_class(cfg)
        if sc not in stores:
            stores[sc] = KernelResults(db, k.info, k.variant, sc, k.digest, k.nbytes)
            known[sc] = stores[sc].known() if resume else {}
        return stores[sc]

    def failure(cfg: dict, o: Mapping[str, Any]) -> float:
        cls = o.get("error") or ERROR_CLASS.get(o.get("step", ""), "RuntimeFailedConfig")
        f = {**cfg, "__error__": cls, "step": o.get("step", ""), "reason": o.get("reason", "")}
        failed.append(f)
        if verbose:
            print(f"skipping config {'_'.join(str(v) for v in cfg.values())} reason: "
                  f"{f['reason']}")
        return strategies.WORST

    def cost(cfg: dict, upcoming: Sequence[dict] = ()) -> float:
        nonlocal steps_ms, in_cost
        t0 = time.perf_counter()
        try:
            return _cost(cfg, upcoming)
        finally:
            in_cost += time.perf_counter() - t0

    def _cost(cfg: dict, upcoming: Sequence[dict]) -> float:
        nonlocal steps_ms
        key = space.key(cfg)
        entry = cfile.entries.get(key) if cfile is not None else None
        if entry is not None:
            if "__error__" in entry:
                return failure(cfg, {"error": entry["__error__"], "step": "cache",
                                     "reason": entry.get("reason", "failed (cache file)")})
            r = results.from_cache(cfg, entry, metrics)
            out.append(r)
            return results.score(r, objective, higher)
        if session is None:  # simulation: only what the cache holds
            return strategies.WORST
        st = store_for(cfg)
        row = known[st.size_class].get(KernelParams(cfg).key())
        if row is not None:
            return _resumed(cfg, row, st)
        o = session.evaluate(k.job(cfg), _ahead(upcoming))
        steps_ms += sum(float(o.get(t) or 0.0) for t in results.TIMING_KEYS)
        if o["step"] == "usage":
            raise KernelSourceError(o["reason"])
        if o["step"] != "timed":
            st.record(cfg, None, f"{o['step']}: {o.get('reason', '')}")
            if cfile is not None:
                cfile.add(key, {**cfg, "__error__": o.get("error") or ERROR_CLASS.get(
                    o["step"], "RuntimeFailedConfig"), "reason": o.get("reason", ""),
                    **{t: o.get(t) or 0 for t in results.TIMING_KEYS},
                    "timestamp": results.now()})
            return failure(cfg, o)
        r = results.make_result(cfg, o, metrics)
        ids[key] = st.record(cfg, r["time"])
        if cfile is not None:
            cfile.add(key, {kk: v for kk, v in r.items() if kk not in metrics})
        out.append(r)
        if not quiet:
            print(results.config_string(r, show))
        return results.score(r, objective, higher)

    def _ahead(upcoming: Sequence[dict]) -> list:
        """The jobs of the next configs that will run (not in the cache file or the
        database), as many as the session takes ahead."""
        jobs: list = []
        if session is None:
            return jobs
        for nxt in upcoming:
            if len(jobs) >= session.ahead:
                break
            if cfile is not None and space.key(nxt) in cfile.entries:
                continue
            st = store_for(nxt)
            if known[st.size_class].get(KernelParams(nxt).key()) is not None:
                continue
            try:
                jobs.append(k.job(nxt))
            except (ValueError, TypeError):  # its own evaluation says why
                continue
        return jobs

    def _resumed(cfg: dict, row: Any, st: KernelResults) -> float:  # noqa: ANN401
        if row.status != "ok":
            return failure(cfg, {"step": "database", "reason": row.reason or "failed before"})
        r = {**cfg, "time": float(row.median_s) * 1e3, "times": [], "compile_time": 0,
             "verification_time": 0, "benchmark_time": 0}
        results.add_metrics(r, metrics)
        r["timestamp"] = results.now()
        r["from_database"] = True
        ids[space.key(cfg)] = row.id
        out.append(r)
        return results.score(r, objective, higher)

    t_search = time.perf_counter()
    try:
        strategies.run(name, opts, space, seed, cost)
    except BaseException:
        for s in stores.values():  # the run stops here: nothing more is written
            s.close()
        raise
    finally:
        if session is not None:
            session.close()
        if cfile is not None:
            cfile.close()
    search_s = time.perf_counter() - t_search
    strategy_ms = max(0.0, (search_s - in_cost) * 1e3)
    framework_ms = max(0.0, in_cost * 1e3 - steps_ms)
    for r in out:
        r["strategy_time"] = strategy_ms / len(out)
        r["framework_time"] = framework_ms / len(out)
    env = _environment(k, iterations)
    best = results.best(out, objective, higher)
    if best is not None:
        env["best_config"] = best
        _store_best(out, ids, stores, k, space, objective, higher)
        if not quiet:
            print(f"\nBEST PERFORMING CONFIGURATION FOR OBJECTIVE {objective}:")
            print(results.config_string(best, [*space.names, objective, *metrics]))
    for s in stores.values():
        s.close()
    totals = {f"total_{t}": sum(float(r.get(t) or 0) for r in out)
              for t in ("framework_time", "strategy_time", *results.TIMING_KEYS)}
    env.update(totals)
    env["overhead_time"] = 1e3 * (time.perf_counter() - t_start) - sum(totals.values())
    env.update(failed=failed, failed_count=len(failed), strategy=name,
               searchspace_size=len(space), objective=objective,
               objective_higher_is_better=higher, kernel_variant=k.variant)
    return out, env


def _store_best(out: list[dict], ids: dict[str, int | None], stores: dict[str, KernelResults],
                k: Kernel, space: Space, objective: str, higher: bool) -> None:
    """The objective's best of each size class among the configs stored, marked best."""
    by_class: dict[str, tuple[float, int]] = {}
    for r in out:
        rid = ids.get(space.key(r))
        if rid is None:
            continue
        sc = k.size_class({n: r[n] for n in space.names})
        s = results.score(r, objective, higher)
        if sc not in by_class or s < by_class[sc][0]:
            by_class[sc] = (s, rid)
    for sc, (_, rid) in by_class.items():
        stores[sc].set_best(rid)


def _environment(k: Kernel, iterations: int) -> dict:
    d = k.dev
    return {"platform_name": d.platform.name, "platform_version": d.platform.version,
            "device_name": d.name, "device_version": d.version,
            "opencl_c_version": d.opencl_c_version, "driver_version": d.driver_version,
            "iterations": iterations, "compiler_options": k.compiler_options or None}

