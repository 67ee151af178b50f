"""Optuna studies per (device, kernel family, variant, size class).

A trial samples a config, rejects infeasible points before compiling, builds, validates against
the host reference (a failure is recorded with its reason and never counts) and only then
times. At the end of a size class the best few are re-measured side by side and the winner is
stored.

The tuner knows no family's internals: it drives a *target* (for the 1-D reduction
`families/reduce/target.ReduceTarget`, made from the family descriptor by
`families.base.make_target`) through its space, `suggest`, `config_of`, `seeds`, `bench`,
`launcher` and `evaluate`."""

from __future__ import annotations

import logging
import os
import socket
import statistics
import threading
import time
import warnings
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import optuna
import pyopencl as cl

from cltune.core.buckets import DEFAULT_BUCKETS
from cltune.core.outcome import Outcome, Timing
from cltune.device.info import DeviceInfo
from cltune.families.base import LATER, make_target
from cltune.isolation.remote_target import RemoteTarget
from cltune.isolation.worker import WorkerFailure, worker_for
from cltune.tuning.quiet import quiet_studies
from cltune.tuning_db.engine import normalise_url, sqlite_path
from cltune.tuning_db.lookup import DeviceKey, lookup
from cltune.tuning_db.rows import Measurement
from cltune.version import __version__

SAMPLERS = ("tpe", "random", "grid")
FINALISTS = 3
FINALIST_ROUNDS = 5


@dataclass
class TuneOptions:
    """What to tune. The variant is `variant`, else (the 1-D reduction's shorthand)
    `op/dtype`; sizes are `buckets`, the target's size keys (the 1-D reduction: log2 n; the
    axis family: shapes), stored as the family's size classes. `target_options` go to the
    target's factory (e.g. a custom expression's kernel object)."""

    op: str = "sum"
    dtype: str = "float32"
    family: str = "reduce"
    variant: str | None = None
    buckets: tuple[Any, ...] = DEFAULT_BUCKETS
    trials: int = 40
    timeout_s: float = 150.0
    sampler: str = "tpe"
    seed: int = 0
    resume: bool = False
    study_prefix: str = "cltune"
    max_rel_error: float | None = None
    restrict: dict[str, tuple] = field(default_factory=dict)
    seeds: bool = True  # start new studies from known configs (cltune.families.reduce.seeds)
    target_options: dict[str, Any] = field(default_factory=dict)
    #: evaluation workers feeding each study (tuning/parallel.py); > 1: the sampler lies
    #: about running trials (TPE's constant_liar) so that workers draw different points
    workers: int = 1

    @property
    def key_variant(self) -> str:
        return self.variant or f"{self.op}/{self.dtype}"


@dataclass(frozen=True)
class BucketResult:
    bucket: Any  # the target's size key
    config: Any | None  # the family's config
    median_s: float | None  # device time of the stored best
    gbps: float | None
    trials: int
    failed: int
    pruned: int
    study: str
    per_call_s: float | None = None  # the stored best, end to end (what an application waits)
    builtin_per_call_s: float | None = None  # the builtin config, measured beside it
    size_class: str = ""  # the size key as stored (`2^20`, `65536x256`, ...)
    crashed: int = 0  # trials whose build or launch killed the worker (recorded as failed)
    hung: int = 0  # trials that missed their deadline (the worker was killed)

    @property
    def vs_builtin(self) -> float | None:
        """Builtin's end-to-end time / the best's: what tuning buys (>= 1 by construction)."""
        if self.per_call_s and self.builtin_per_call_s:
            return self.builtin_per_call_s / self.per_call_s
        return None


class Progress:
    """Callbacks the tuner reports to (the CLI draws them); all are no-ops here. Size
    classes arrive as their stored names (`2^20`, `65536x256`)."""

    def start(self, space: Any, classes: tuple[str, ...]) -> None: ...
    def start_bucket(self, size_class: str, trials: int) -> None: ...
    def trial(self, size_class: str, done: int, best_gbps: float | None,
              left_s: float) -> None: ...
    def end_bucket(self, result: BucketResult) -> None: ...


@contextmanager
def _experimental_options():  # noqa: ANN202 - a context manager
    """cltune's own choice of Optuna's experimental options (TPE's `group`, the storage's
    heartbeat) warns nothing in the application's process: the option is cltune's, not the
    application's to hear of."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


def make_sampler(name: str, seed: int, space: Any,
                 parallel: bool = False) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        with _experimental_options():
            return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                              n_startup_trials=10, constant_liar=parallel)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        return optuna.samplers.GridSampler({k: list(v) for k, v in space.values.items()},
                                           seed=seed)
    raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")


def _lost_trial_race(e: Exception) -> bool:
    """Whether `e` is Optuna telling this worker that another one finished its trial first."""
    if isinstance(e, optuna.exceptions.UpdateFinishedTrialError):
        return True
    return "Cannot tell a" in str(e)


@dataclass(frozen=True)
class Input:
    """A size class's tuning input as the tuner sees it (it lives in the worker)."""

    n: int
    nbytes: int


class Tuner:
    """Tunes one variant of a kernel family on one device; writes results through `store`.

    The target here gives the space, suggestions, seeds and keys; every build, validation and
    timing runs in the device's worker process (`remote_target.RemoteTarget`), so a driver
    that crashes or hangs on a candidate fails that trial with its reason and the study goes
    on."""

    #: one lock for the results database of every tuner of this process (the parallel
    #: tuners of tuning/parallel.py share one Store)
    store_lock = threading.RLock()

    def __init__(self, ctx: cl.Context, dev: cl.Device, info: DeviceInfo, store,  # noqa: ANN001
                 storage_url: str, opts: TuneOptions,
                 progress: Progress | None = None, slot: int = 0) -> None:
        self.ctx, self.dev, self.info, self.store = ctx, dev, info, store
        self.opts, self.progress = opts, progress or Progress()
        self.tag = f"{info.index}.{slot}"  # which worker ran a trial (trial user attribute)
        worker = worker_for(info, slot)
        worker.ensure()  # it starts (imports, opens its context) while this process goes on
        # this process keeps a target for suggestions, seeds and keys and builds nothing: its
        # space comes from the worker (the 1-D family's is made by probe builds)
        self.target = make_target(opts.family, ctx, dev, info, opts.key_variant,
                                  extended_acc=opts.max_rel_error is not None,
                                  space=LATER, **opts.target_options)
        self.remote = RemoteTarget(worker, opts.family, opts.key_variant,
                                   extended_acc=opts.max_rel_error is not None,
                                   restrict=opts.restrict, **opts.target_options)
        self.target.space = self.remote.space()
        self.storage = open_storage(storage_url)
        with Tuner.store_lock:
            self.device_id = store.upsert_device(info.fingerprint_parts(), info.fingerprint,
                                                 info.hardware_key, info.name)

    @property
    def space(self) -> Any:
        return self.target.space

    def study_name(self, bucket: int) -> str:
        t = self.target
        return f"{self.opts.study_prefix}:{self.info.fingerprint}:{t.variant}:" \
               f"{t.size_class(bucket)}"

    def run(self) -> list[BucketResult]:
        """Every size class in turn, within the whole run's timeout; Optuna's log lines of
        these studies go to cltune's logger at DEBUG, not to the application's stderr."""
        with quiet_studies():
            return self._run()

    def _run(self) -> list[BucketResult]:
        self.progress.start(self.space,
                            tuple(self.target.size_class(b) for b in self.opts.buckets))
        t_end = time.monotonic() + self.opts.timeout_s
        results: list[BucketResult] = []
        known = self._known_rows() if self.opts.seeds else ()
        for i, b in enumerate(self.opts.buckets):
            left = max(1.0, (t_end - time.monotonic()) / (len(self.opts.buckets) - i))
            seeds = []
            if self.opts.seeds:
                seeds = self.target.seeds(known, b, results[-1].config if results else None)
            results.append(self.tune_bucket(b, left, seeds))
        return results

    def _known_rows(self) -> tuple:
        """What the fallback chain knows for this device (the rows, any level), for seeds."""
        i = self.info
        key = DeviceKey(i.fingerprint, i.hardware_key, i.model, i.vendor, i.type, i.driver)
        try:
            return lookup(self.store, key, self.target.family, self.target.variant).rows
        except Exception as e:  # noqa: BLE001 - seeds are an optimisation, never a failure
            logging.getLogger(__name__).warning("no seeds from the database: %s", e)
            return ()

    def _record(self, bucket: int, out: Outcome, force: bool = False) -> int:
        t = self.target
        m = Measurement(t.family, t.variant, t.size_class(bucket), out.config.to_dict(),
                        out.config.key(), "ok" if out.ok else "failed", out.n, __version__,
                        t.source_hash, out.reason, out.median_s, out.gbps, out.max_rel_error)
        with Tuner.store_lock:
            return self.store.record(self.device_id, m, force=force)

    def evaluate(self, cfg: Any, bucket: int) -> Outcome:
        """The config judged in the worker. Recorded, unless infeasible here (pruned before
        compiling)."""
        out = self.remote.evaluate(cfg, bucket, max_rel_error=self.opts.max_rel_error)
        if out.compiled:
            self._record(bucket, out)
        return out

    def tune_bucket(self, bucket: int, timeout_s: float,
                    seeds: list[dict] | None = None) -> BucketResult:
        bench, name, study = self.open_bucket(bucket, seeds)
        self.optimize(study, bucket, bench, timeout_s)
        return self._finish(study, bucket, bench, name)

    def open_bucket(self, bucket: int, seeds: list[dict] | None = None, *, fresh: bool = True,
                    ) -> tuple[Input, str, optuna.Study]:
        """The class's input prepared in the worker and its study: made anew unless `--resume`
        (`fresh`: False loads the study another tuner of this run made), the seeds enqueued
        in a new one."""
        select = getattr(self.target, "select", None)  # families whose suggestions know it
        if select is not None:
            select(bucket)
        bench = Input(*self.remote.prepare(bucket))
        name = self.study_name(bucket)
        study = self.study(name) if fresh else self.study(name, fresh=False)
        if fresh and seeds and not study.get_trials(deepcopy=False):  # never on resume
            for p in seeds:
                study.enqueue_trial(p, skip_if_exists=True)
        return bench, name, study

    def optimize(self, study: optuna.Study, bucket: int, bench: Input,
                 timeout_s: float) -> None:
        """Trials of this tuner's worker until the study holds `trials` finished ones (all
        workers of the study together) or `timeout_s` passed."""
        done_states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        already = len(study.get_trials(deepcopy=False, states=done_states))
        todo = max(0, self.opts.trials - already)
        label = self.target.size_class(bucket)
        self.progress.start_bucket(label, self.opts.trials)
        seen: dict[Any, tuple[float, str, str]] = {}
        t0 = time.monotonic()

        def objective(trial: optuna.Trial) -> float:
            try:
                cfg = self.target.suggest(trial)
            except ValueError as e:  # ConfigError: a point the config type rejects
                trial.set_user_attr("reason", str(e))
                raise optuna.TrialPruned(str(e)) from None
            trial.set_user_attr("config", cfg.to_dict())
            trial.set_user_attr("worker", self.tag)
            if cfg not in seen:
                out = self.evaluate(cfg, bucket)
                seen[cfg] = (out.median_s if out.ok else float("inf"), out.reason, out.step)
            value, why, step = seen[cfg]
            if why:
                trial.set_user_attr("reason", why)
            if step in ("crashed", "hung"):
                trial.set_user_attr("step", step)
            if value == float("inf"):
                raise optuna.TrialPruned(trial.user_attrs.get("reason", "rejected"))
            trial.set_user_attr("gbps", bench.nbytes / value / 1e9)
            return value

        def callback(st: optuna.Study, _t: optuna.trial.FrozenTrial) -> None:
            done = len(st.get_trials(deepcopy=False, states=done_states))
            try:
                best = bench.nbytes / st.best_value / 1e9
            except ValueError:
                best = None
            self.progress.trial(label, done, best, max(0.0, timeout_s - (time.monotonic() - t0)))

        # workers sharing a study stop together once it holds `trials` finished trials
        cap = optuna.study.MaxTrialsCallback(self.opts.trials, states=done_states)
        for _ in range(8):
            left = timeout_s - (time.monotonic() - t0)
            if todo <= 0 or left <= 0:
                break
            try:
                study.optimize(objective, n_trials=todo, timeout=left,
                               callbacks=[callback, cap], gc_after_trial=False)
                break
            except (ValueError, optuna.exceptions.UpdateFinishedTrialError) as e:
                # two workers of one study on SQLite can pop the same enqueued trial (SQLite
                # has no row locks): the second to finish it can neither annotate nor tell it
                # (Optuna raises either error, depending on where the race is lost); the
                # trial counts once, and this worker goes on with the rest
                if not _lost_trial_race(e):
                    raise
                todo = self.opts.trials - len(study.get_trials(deepcopy=False,
                                                               states=done_states))

    def _finish(self, study: optuna.Study, bucket: int, bench: Input, name: str) -> BucketResult:
        trials = study.get_trials(deepcopy=False)
        ok = sorted((t for t in trials if t.state == optuna.trial.TrialState.COMPLETE),
                    key=lambda t: t.value)
        finalists: list[Any] = []
        for t in ok:
            cfg = self.target.config_of(t.user_attrs["config"])
            if cfg not in finalists:
                finalists.append(cfg)
            if len(finalists) == FINALISTS:
                break
        pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in trials)
        failed = sum("reason" in t.user_attrs and t.state != optuna.trial.TrialState.COMPLETE
                     for t in trials)
        crashed = sum(t.user_attrs.get("step") == "crashed" for t in trials)
        hung = sum(t.user_attrs.get("step") == "hung" for t in trials)
        # the builtin config (what an untuned device runs) always competes, so that a stored
        # best is never slower end to end than what tuning replaces
        per_class = getattr(self.target, "builtin_for", None)  # shape-dependent families
        builtin = per_class(bucket) if per_class is not None else self.target.builtin()
        if builtin is not None and builtin not in finalists:
            out = self.evaluate(builtin, bucket)
            if out.ok:
                finalists.append(builtin)
        if not finalists:
            res = BucketResult(bucket, None, None, None, len(trials), failed, pruned, name,
                               size_class=self.target.size_class(bucket), crashed=crashed,
                               hung=hung)
            self.progress.end_bucket(res)
            return res
        # re-measure side by side, interleaved, medians of rounds: device time (stored) and the
        # time per call an application waits for (launches and host cost included), which
        # decides: the profiling-event ranking of the trials misses the host side
        try:
            d, e = self.remote.side_by_side(finalists, bucket, FINALIST_ROUNDS)
        except WorkerFailure as err:  # every finalist ran before: rank them as the trials did
            logging.getLogger(__name__).warning("re-measuring the finalists failed (%s); "
                                                "ranked by their trials", err)
            d = [[self._trial_time(ok, c)] for c in finalists]
            e = d
        dev = dict(zip(finalists, d, strict=True))
        e2e = dict(zip(finalists, e, strict=True))
        med = {c: statistics.median(v) for c, v in dev.items()}
        call = {c: statistics.median(v) for c, v in e2e.items()}
        best = min(finalists, key=call.__getitem__)
        rid = self._record(bucket, Outcome(best, "timed", bench.n, bench.nbytes,
                                           timing=Timing(med[best], FINALIST_ROUNDS,
                                                         tuple(dev[best]))),
                           force=True)
        with Tuner.store_lock:
            self.store.set_best(self.device_id, rid)
        res = BucketResult(bucket, best, med[best], bench.nbytes / med[best] / 1e9, len(trials),
                           failed, pruned, name, call[best],
                           call.get(builtin) if builtin is not None else None,
                           self.target.size_class(bucket), crashed, hung)
        self.progress.end_bucket(res)
        return res

    def _trial_time(self, ok: list, cfg: Any) -> float:
        for t in ok:
            if self.target.config_of(t.user_attrs["config"]) == cfg:
                return float(t.value)
        return float("inf")  # the builtin config, when it was no trial: never preferred

    def study(self, name: str, fresh: bool = True) -> optuna.Study:
        """The Optuna study of this name: created, or loaded with `--resume` / by a worker
        (`fresh` False: another tuner of this run made it)."""
        seed = self.opts.seed
        if self.opts.study_prefix != TuneOptions.study_prefix or self.opts.workers > 1:
            # workers of a shared study must not draw the same points: mix in host, pid and
            # the worker's place
            seed = zlib.crc32(f"{seed}:{socket.gethostname()}:{os.getpid()}:{self.tag}"
                              .encode())
        sampler = make_sampler(self.opts.sampler, seed, self.space,
                               parallel=self.opts.workers > 1)
        if fresh and not self.opts.resume:
            try:
                optuna.delete_study(study_name=name, storage=self.storage)
            except KeyError:
                pass
        # a trial a killed worker left RUNNING stops its heartbeat and is failed by the next
        # worker after the grace period; finished trials are never touched
        return optuna.create_study(study_name=name, storage=self.storage, sampler=sampler,
                                   direction="minimize", load_if_exists=True)


def open_storage(url: str) -> optuna.storages.RDBStorage:
    url = normalise_url(url)
    kwargs: dict = {}
    p = sqlite_path(url)
    if p is not None:
        p.parent.mkdir(parents=True, exist_ok=True)
        kwargs = {"connect_args": {"timeout": 60}}
    # workers starting together on a fresh storage race to create Optuna's tables: the loser
    # fails with "already exists" and finds them in place on the next attempt
    for attempt in range(6):
        try:
            with _experimental_options():
                return optuna.storages.RDBStorage(url, engine_kwargs=kwargs,
                                                  heartbeat_interval=5, grace_period=20)
        except Exception:  # noqa: BLE001 - SQLAlchemy/Optuna errors of the creation race
            if attempt == 5:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")

