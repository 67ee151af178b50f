"""`cltune verify`: re-validate and re-time stored bests on the current driver.

For each (variant, size class) of the 1-D reduction known for this device — tuned here, or on
the same hardware under another driver, or on the same model — the stored configs are tried
fastest first: the first that still validates is re-timed and becomes this fingerprint's best;
the ones that fail are recorded as failed here with the reason, so they never serve again on
this driver. Every config is judged in the device's evaluation worker (`remote_target`), as
the tuner's trials are: a config the new driver crashes on is one that fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.families.base import LATER, make_target
from cltune.isolation.remote_target import RemoteTarget
from cltune.isolation.worker import WorkerFailure, worker_for
from cltune.tuning_db.rows import Measurement
from cltune.version import __version__


@dataclass(frozen=True)
class Verified:
    family: str
    variant: str
    size_class: str
    source_level: str
    config: Any | None  # the family's config that now serves, None when none passes
    gbps: float | None
    failed: tuple[str, ...]  # "config: reason" of the ones that no longer pass


def verify_device(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, store,  # noqa: ANN001
                  family: str = "reduce", variants: tuple[str, ...] | None = None
                  ) -> list[Verified]:
    """Re-validate and re-time the stored results of a family's variants (all when None)."""
    here = store.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                               info.name)
    targets: dict[str, Any] = {}
    remotes: dict[str, RemoteTarget] = {}  # the same targets in the worker, where they run
    done: set[tuple[str, str]] = set()
    out: list[Verified] = []
    for level, ids in store.related_devices(info.fingerprint, info.hardware_key, info.model,
                                            info.vendor):
        rows = store.ok_results(ids, family, variants)
        for key in sorted({(r.variant, r.size_class) for r in rows} - done):
            variant, size = key
            done.add(key)
            try:
                if variant not in targets:  # its space comes from the worker
                    targets[variant] = make_target(family, ctx, dev, info, variant, space=LATER)
                    remotes[variant] = RemoteTarget(worker_for(info), family, variant)
                    targets[variant].space = remotes[variant].space()
                t, remote = targets[variant], remotes[variant]
                bucket = t.bucket_of(size)
                remote.prepare(bucket)
            except (ValueError, WorkerFailure) as e:  # e.g. float64 without cl_khr_fp64
                out.append(Verified(family, variant, size, level, None, None,
                                    (f"cannot run here: {e}",)))
                continue
            failed: list[str] = []
            chosen: tuple[Any, float | None] | None = None
            seen: set[Any] = set()
            for r in rows:
                if (r.variant, r.size_class) != key:
                    continue
                try:
                    cfg = t.config_of(r.config)
                except ValueError as e:
                    failed.append(f"invalid stored config: {e}")
                    continue
                if cfg in seen:
                    continue
                seen.add(cfg)
                res = remote.evaluate(cfg, bucket, check=False)
                rid = store.record(here, Measurement(
                    family, variant, size, cfg.to_dict(), cfg.key(),
                    "ok" if res.ok else "failed", res.n, __version__, t.source_hash,
                    "" if res.ok else f"cltune verify: {res.reason}", res.median_s, res.gbps,
                    res.max_rel_error), force=True)
                if not res.ok:
                    failed.append(f"{cfg.short()}: {res.reason}")
                    continue
                store.set_best(here, rid)
                store.mark_verified(rid)
                chosen = (cfg, res.gbps)
                break
            out.append(Verified(family, variant, size, level, chosen[0] if chosen else None,
                                chosen[1] if chosen else None, tuple(failed)))
    return out
