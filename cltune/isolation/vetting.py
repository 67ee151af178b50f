"""Vetting: a config the runtime serves untuned runs once in a worker before this process
builds it.

The application's process never builds a config that has not run on this device's
fingerprint and driver (house rule 17): results tuned here did (in the tuner's worker); the
builtin, derived, shipped and vendor-default configs are built, launched and checked against
the family's reference once in the device's worker (`remote_target.RemoteTarget`, `vet`
mode: its validation inputs, no timing), and the verdict is kept on disk per fingerprint,
driver, family, variant, config, kernel source and cltune's own code (`host_hash`; a new
version vets again) (`vetted.json` in the cache directory of
`driver_cache.cache_dir()`); later calls, in this process or the next, read it. A config that
crashed, hung or answered wrong there is never built here: the runtime steps to the next
level of its fallback chain and `explain()` says why.

A kernel outside the families (no config space, no target: `cltune.stats.argvec`) is vetted
the same way by a check function of its own (`checked`): run once in the device's worker, its
verdict kept in the same file.

A config whose build fails cleanly (a compiler error, no crash) is `buildable`: building it
here raises the same error (an application's expression that does not compile must still
fail as pyopencl's does); so is one whose target or input the worker could not make
without a crash (nothing is cached then).
`CLTUNE_TRUST_DRIVER=1` turns vetting off.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cltune.core.outcome import Outcome
from cltune.device.driver_cache import add_verdicts, cache_dir, read_verdicts
from cltune.device.info import DeviceInfo
from cltune.isolation.remote_target import RemoteTarget
from cltune.isolation.worker import Worker, WorkerFailure, deadline_floor, unstarted, worker_for
from cltune.version import __version__

VET_VERSION = 1
_FILE = "vetted.json"
#: the 1-D families' vetting input: 2^12 elements (validation adds odd sizes around it)
SMALL_BUCKET = 12
#: the axis families' vetting input: at most 2^20 elements (rows of the class kept)
MAX_AXIS_LOG2 = 20


class NoConfigRuns(RuntimeError):
    """Every level of a fallback chain crashed, hung or answered wrong in vetting on this
    driver (down to the safest config of scalar loads), or an application's own program (a
    compaction predicate, a `GenericScanKernel`) crashed or hung in the worker on its first
    call. The message names the configs and what each did; nothing was run in this process."""


@dataclass(frozen=True)
class Verdict:
    """`step` is the evaluate step that stopped it (`timed`: it ran and answered right)."""

    ok: bool
    step: str = "timed"
    reason: str = ""
    checked_at: str = ""

    @property
    def buildable(self) -> bool:
        """Whether building it in this process is safe: it ran, or failed to compile cleanly."""
        return self.ok or self.step == "build"


TRUSTED = Verdict(True, "timed", "vetting off (CLTUNE_TRUST_DRIVER=1)")

_lock = threading.Lock()
_memo: dict[str, Verdict] = {}
_remotes: dict[tuple, RemoteTarget] = {}


def trusted() -> bool:
    return os.environ.get("CLTUNE_TRUST_DRIVER", "").strip() not in ("", "0")


def vet_size(family: str, size_key: Any) -> Any:  # noqa: ANN401
    """The input a config of `family` is vetted on for a call of class `size_key`: small,
    with the class's reduced length where the kernel's shape depends on it."""
    if isinstance(size_key, tuple):
        a, b = size_key
        return (min(a, max(0, MAX_AXIS_LOG2 - b)), min(b, MAX_AXIS_LOG2))
    return SMALL_BUCKET


_host_text: list[str] = []


def host_hash() -> str:
    """A hash of cltune's own Python (every module's text), in every verdict's key: a config
    vetted by one version of the code that launches it is vetted again by another (a verdict
    names the kernel source, but how its arguments are set and its result read is the host's;
    a host bug's failure must not outlive the fix, nor a pass the change that breaks it)."""
    if not _host_text:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256(__version__.encode())  # all there is where no module is readable
        for f in sorted(root.rglob("*.py")):  # (a zip or .pyc-only install)
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
        _host_text.append(h.hexdigest()[:12])
    return _host_text[0]


def _key(info: DeviceInfo, family: str, variant: str, cfg: Any, source_hash: str,  # noqa: ANN401
         size_key: Any) -> str:  # noqa: ANN401
    return (f"{info.fingerprint}:{info.driver}:{family}:{variant}:{cfg.key()}:{source_hash}:"
            f"{size_key}:{host_hash()}")


def _path() -> Path:
    return cache_dir() / _FILE


def _parse(v: dict) -> Verdict | None:
    if isinstance(v.get("ok"), bool) and all(isinstance(v.get(f, ""), str)
                                             for f in ("step", "reason", "checked_at")) \
            and not unstarted(v.get("reason", "")):
        return Verdict(v["ok"], v.get("step", "timed"), v.get("reason", ""),
                       v.get("checked_at", ""))
    return None


def _load() -> dict[str, Verdict]:
    return read_verdicts(_path(), "vet_version", VET_VERSION, _parse)


def _save(key: str, verdict: Verdict) -> None:
    """Add one verdict to the file, keeping what other processes of this code added (failures
    cost a re-vet) and dropping those of other versions of cltune (their keys end in another
    `host_hash`: no call of this code asks for them, and the file would grow by a full set a
    version)."""
    suffix = ":" + host_hash()
    add_verdicts(_path(), "vet_version", VET_VERSION, _parse, asdict, {key: verdict},
                 keep=lambda k: k.endswith(suffix))


def _cached(key: str) -> Verdict | None:
    """The verdict kept for `key`: this process's, else the file's (then kept here too)."""
    with _lock:
        hit = _memo.get(key)
        if hit is None:
            hit = _load().get(key)
            if hit is not None:
                _memo[key] = hit
    return hit


def forget() -> None:
    """Drop the verdicts remembered in this process (the file stays)."""
    with _lock:
        _memo.clear()
        _remotes.clear()


#: a vet that passed its deadline runs once more with this many times the time before its
#: verdict is kept: a hang and a build slower than the deadline look alike, and a kept verdict
#: passes the config over for good (a first build of topk.cl's kernels took PoCL over 20 s on
#: a 2-core host busy with a test run: the builtin top-k was passed over for the safest one)
HUNG_RETRY_FACTOR = 4.0


def _again(first: Outcome, second: Outcome, slow_s: float) -> Outcome:
    """The outcome of a vet's second try, its reason naming both where it hung again."""
    if second.step != "hung":
        return second
    return replace(second, reason=f"{first.reason}; again with {slow_s:.0f} s")


def _beyond_vector_cap(info: DeviceInfo, cfg: Any, element_bytes: int) -> str:  # noqa: ANN401
    vec = getattr(cfg, "vec", None)
    if info.max_vector_bytes and isinstance(vec, int) and vec * element_bytes > \
            info.max_vector_bytes:
        return (f"vectors of {vec * element_bytes * 8} bits: this device's health check "
                f"restricts them to {info.max_vector_bytes * 8}")
    return ""


def verdict(info: DeviceInfo, family: str, variant: str, cfg: Any, size_key: Any, *,  # noqa: ANN401
            source_hash: str, element_bytes: int = 8, options: dict | None = None,
            worker: Worker | None = None) -> Verdict:
    """Whether `cfg` of `family`/`variant` ran right on this device and driver (vetting it in
    the worker first when unknown). `options` are the target factory's (an expression
    family's kernel); `size_key` the class of the call that serves it."""
    if trusted():
        return TRUSTED
    why = _beyond_vector_cap(info, cfg, element_bytes)
    if why:
        return Verdict(False, "check", why)
    vsize = vet_size(family, size_key)
    key = _key(info, family, variant, cfg, source_hash, vsize)
    hit = _cached(key)
    if hit is not None:
        return hit
    # the process's worker keeps a target per variant; a health check's own worker and an
    # application's kernel get one of their own, closed afterwards
    own = worker is not None or bool(options)
    rkey = (info.fingerprint, info.max_vector_bytes, family, variant)
    remote = None if own else _remotes.get(rkey)
    if remote is None:
        remote = RemoteTarget(worker or worker_for(info), family, variant, **(options or {}))
        if not own:
            _remotes[rkey] = remote
    try:
        out = remote.evaluate(cfg, vsize, check=False, vet=True)
        if out.step == "hung":  # once more with longer, before a verdict is kept (_again)
            slow = HUNG_RETRY_FACTOR * remote.deadline_s()
            out = _again(out, remote.evaluate(cfg, vsize, check=False, vet=True,
                                              deadline_s=slow), slow)
    finally:
        if own:
            remote.close()
    if out.step == "error" and not out.n:
        # making the target or its input failed cleanly in the worker (an expression that
        # does not compile, no reference to check it by): nothing crashed, and building it
        # here fails (or runs) the same way; no verdict is kept
        return Verdict(True, "build", f"not vetted: {out.reason}"[:300])
    if out.step == "unstarted":  # the worker cannot run here: no verdict on the config kept
        return Verdict(False, out.step, out.reason[:500])
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    v = Verdict(out.ok, out.step, "" if out.ok else out.reason[:500], now)
    with _lock:
        _memo[key] = v
        _save(key, v)
    return v


def checked(info: DeviceInfo, name: str, key: str, check: Callable[..., str],  # noqa: ANN401
            *args: Any, args_of: Callable[[], tuple] | None = None,
            extra_s: float = 0.0) -> Verdict:
    """Whether a kernel outside the families built, ran and answered right on this device and
    driver. `check(ctx, queue, dev, info, *args)` is a module-level function of cltune (it
    reaches the worker by reference) that builds the kernel, runs it on inputs of its own and
    returns '' or why not; `key` names what it builds (its source hash and build options). It
    runs once per fingerprint and driver, in the device's worker (a crash, a hang or an error
    there is a failed verdict, with its reason), and the verdict is kept with the families'.
    `args_of()`, where given, makes the arguments only when the check runs (an input copied
    from the application's device arrays: no read-back when the verdict is known); if it
    fails, nothing ran and nothing is kept (step `unstarted`, its reason). `extra_s` adds to
    the deadline (a check whose input the application sized). A check that failed only
    because its kernel does not compile (a BuildError, no crash) is `build` and not kept:
    building it here raises the compiler's own words."""
    if trusted():
        return TRUSTED
    vkey = f"{info.fingerprint}:{info.driver}:check:{name}:{key}:{host_hash()}"
    hit = _cached(vkey)
    if hit is not None:
        return hit
    if args_of is not None:
        try:
            args = (*args, *args_of())
        except Exception as e:  # noqa: BLE001 - the input could not be made: nothing ran
            return Verdict(False, "unstarted", f"the vetting input could not be made: "
                           f"{type(e).__name__}: {e}"[:500])
    w = worker_for(info)
    try:
        try:
            why = w.call("check", name, key, check, args, deadline_s=deadline_floor() + extra_s)
        except WorkerFailure as e:
            if e.kind != "hung":
                raise
            slow = HUNG_RETRY_FACTOR * (deadline_floor() + extra_s)  # once more (_again)
            try:
                why = w.call("check", name, key, check, args, deadline_s=slow)
            except WorkerFailure as e2:
                if e2.kind == "hung":
                    raise WorkerFailure("hung", f"{e.reason}; again with {slow:.0f} s") from e2
                raise
        step = "validate" if why else "timed"
    except WorkerFailure as e:
        if e.kind == "error" and e.reason.startswith("BuildError"):
            return Verdict(True, "build", f"not vetted: {e.reason}"[:500])
        if e.kind == "error":  # a context in that state is not trusted for the next request
            w.close()
        why, step = e.reason, e.kind
        if step == "unstarted":  # the worker cannot run here: no verdict kept
            return Verdict(False, step, why[:500])
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    v = Verdict(not why, step, why[:500], now)
    with _lock:
        _memo[vkey] = v
        _save(vkey, v)
    return v


def first_usable(info: DeviceInfo, family: str, variant: str,  # noqa: ANN401
                 candidates: list[tuple[Any, str]], size_key: Any, *, source_hash: str,
                 element_bytes: int = 8, options: dict | None = None,
                 ) -> tuple[Any, str, str]:
    """The first (config, level) of `candidates` (the fallback chain, in order) whose verdict
    lets this process build it, and why the ones before it were passed over ('' when the
    first one serves). Raises `NoConfigRuns` naming every reason when none can, except for
    an application's expression (`options`) whose configs all ran but answered differently
    from its reference: the first of those serves, with a warning."""
    passed: list[str] = []
    tried: list[Any] = []
    differs: tuple[Any, str, str] | None = None  # the first one that ran but answered off
    for cfg, level in candidates:
        if cfg in tried:  # a level that answers with a config already passed over
            continue
        tried.append(cfg)
        try:
            v = verdict(info, family, variant, cfg, size_key, source_hash=source_hash,
                        element_bytes=element_bytes, options=options)
        except WorkerFailure as e:  # pragma: no cover - evaluate turns these into outcomes
            v = Verdict(False, e.kind, e.reason)
        if v.buildable:
            return cfg, level, "; ".join(passed)
        passed.append(f"{level} config {cfg.short()} passed over: {v.reason}")
        if v.step == "validate" and differs is None:
            differs = (cfg, level, "; ".join(passed))
    if differs is not None and options:
        # an application's expression whose every config ran but disagreed with its reference
        # (a padding field, a reference of its own making): no driver crash to avoid, so it
        # is served as pyopencl would, and said
        cfg, level, why = differs
        warnings.warn(f"cltune: {why[:400]}; serving the {level} config anyway (it ran)",
                      RuntimeWarning, stacklevel=3)
        return cfg, level, why
    raise NoConfigRuns(f"no {family} config runs on {info.name} ({info.platform} "
                       f"{info.release}): " + "; ".join(passed))
