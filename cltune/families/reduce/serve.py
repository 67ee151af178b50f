"""Which configs the 1-D runtime serves: the database's (or the shipped or builtin) answer
for one (device, op/dtype), validated before any of it can reach the compiler."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.core import buckets
from cltune.core.ops import OpSpec
from cltune.core.serving import CltuneWarning
from cltune.device.info import DeviceInfo
from cltune.families.reduce import family as reduce_family
from cltune.families.reduce.config import Config, ConfigError
from cltune.families.reduce.defaults import builtin_config, safest_config
from cltune.families.reduce.kernel import source_hash
from cltune.families.reduce.launch import Launcher
from cltune.isolation.vetting import first_usable
from cltune.opencl.build import BuildError


@dataclass(frozen=True)
class Choice:
    config: Config
    bucket: int | None
    tuned_at: str
    driver: str
    gbps: float | None
    level: str = ""  # set where vetting replaced the answer (builtin | safest)
    note: str = ""  # why the levels before it were passed over


def vetted(info: DeviceInfo, spec: OpSpec, ch: Choice, level: str) -> Choice:
    """`ch` if this process may build its config (it ran right here: tuned on this
    fingerprint, or vetted in the worker), else the first of the builtin and safest configs
    that may, noting why (`vetting`); NoConfigRuns when none may."""
    if level == "exact":
        return ch  # tuned on this fingerprint and driver: it ran in the tuner's worker
    candidates = [(ch.config, level), (builtin_config(info, spec), "builtin"),
                  (safest_config(info), "safest")]
    cfg, lvl, why = first_usable(info, reduce_family.NAME, reduce_family.variant(spec),
                                 candidates, ch.bucket or 0, source_hash=source_hash(),
                                 element_bytes=spec.vector_element_bytes)
    if cfg == ch.config:
        return ch
    warnings.warn(f"cltune: {why}; serving the {lvl} config {cfg.short()}", CltuneWarning,
                  stacklevel=5)
    return Choice(cfg, None, "", "", None, lvl, why)


def builtin_choice(info: DeviceInfo, ctx: cl.Context, dev: cl.Device, spec: OpSpec) -> Choice:
    for cfg in (builtin_config(info, spec), safest_config(info)):
        ch = vetted(info, spec, Choice(cfg, None, "", "", None), "builtin")
        try:
            Launcher(ctx, dev, info, spec, ch.config).built(False)
            return ch
        except BuildError:
            continue
    raise BuildError(f"no config builds for {spec} on {info.name}")


_warned: set[str] = set()


def _warn_once(url: str, msg: str) -> None:
    """One warning per database per process, however many reducers are made."""
    if url not in _warned:
        _warned.add(url)
        # user -> cltune.get_reducer (reducers) -> runtime.get_reducer -> _Engine -> load_choices
        warnings.warn(msg, CltuneWarning, stacklevel=6)


def load_choices(info: DeviceInfo, spec: OpSpec,
                  db: str | None) -> tuple[str, str, list[Choice]]:
    from cltune.tuning_db import DatabaseError, default_url
    from cltune.tuning_db.paths import sqlite_file
    from cltune.tuning_db.shipped import DeviceKey, lookup_without_db

    key = DeviceKey(info.fingerprint, info.hardware_key, info.model, info.vendor, info.type,
                    info.driver)
    url = db or default_url()
    path = sqlite_file(url)
    if path is not None and not path.exists():
        # no database file (never tuned here): answer from the shipped results or builtin
        # without loading SQLAlchemy (~0.3 s of a process's first get_reducer). Said only for
        # a database the application or CLTUNE_DB named (a typo loses its tuning silently
        # otherwise); the default file not existing is the normal state before any tuning
        if db or os.environ.get("CLTUNE_DB", "").strip():
            _warn_once(url, f"cltune: tuning database {path} does not exist (named by "
                       f"{'db=' if db else 'CLTUNE_DB'}); using the shipped or builtin configs")
        return _choices(info, spec, lookup_without_db(key, reduce_family.NAME,
                                                reduce_family.variant(spec)))
    from cltune.tuning_db import Store
    from cltune.tuning_db.lookup import lookup

    store = None
    try:
        store = Store.open(url, readonly=True)
    except DatabaseError as e:
        _warn_once(url, f"cltune: tuning database unusable ({e}); using fallback configs")
    except Exception as e:  # noqa: BLE001 - a corrupt file must never crash an application
        _warn_once(url, f"cltune: tuning database unreadable ({type(e).__name__}: {e}); "
                   "using fallback configs")
    try:
        try:
            ans = lookup(store, key, reduce_family.NAME, reduce_family.variant(spec))
        except Exception as e:  # noqa: BLE001
            _warn_once(url, f"cltune: lookup failed ({type(e).__name__}: {e}); using builtin")
            ans = lookup(None, key, reduce_family.NAME, reduce_family.variant(spec))
    finally:
        if store is not None:
            store.close()
    return _choices(info, spec, ans)


def _choices(info: DeviceInfo, spec: OpSpec, ans: Any) -> tuple[str, str, list[Choice]]:
    """The validated configs of a lookup answer (a stored config that does not validate never
    reaches the compiler); the builtin config when none is left."""
    choices = []
    for r in ans.rows:
        try:
            cfg = Config.from_mapping(r.config)
            bucket = buckets.class_bucket(r.size_class)
        except (ConfigError, ValueError):
            continue  # never let a bad stored config near the compiler
        choices.append(Choice(cfg, bucket, r.updated_at, r.driver, r.gbps))
    if not choices:
        cfg = builtin_config(info, spec)
        return "builtin", ans.why if ans.level == "builtin" else "stored configs invalid", [
            Choice(cfg, None, "", "", None)]
    return ans.level, ans.why, choices
