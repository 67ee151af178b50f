"""Which configs the 1-D runtime serves: the database's (or the shipped or builtin) answer
for one (device, op/dtype), validated before any of it can reach the compiler."""

from __future__ import annotations

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
from cltune.tuning_db.answer import answer


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


def load_choices(info: DeviceInfo, spec: OpSpec,
                  db: str | None) -> tuple[str, str, list[Choice]]:
    # user -> cltune.get_reducer -> reduce.api.get_reducer -> _Engine -> load_choices
    return _choices(info, spec, answer(info, db, reduce_family.NAME,
                                       reduce_family.variant(spec), stacklevel=5))


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
