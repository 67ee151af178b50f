"""`cltune verify`: re-validate and re-time stored bests on the current driver.

For each (op, dtype, bucket) known for this device — tuned here, or on the same hardware under
another driver, or on the same model — the stored configs are tried fastest first: the first that
still validates is re-timed and becomes this fingerprint's best; the ones that fail are recorded
as failed here with the reason, so they never serve again on this driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl
from sqlalchemy import select

from . import __version__
from .config import Config, ConfigError
from .devices import DeviceInfo
from .launch import Launcher
from .measure import Bench, profiling_queue
from .ops import OpSpec
from .program import BuildError, source_hash
from .verify import make_input, validate


@dataclass(frozen=True)
class Verified:
    op: str
    dtype: str
    bucket: int
    source_level: str
    config: Config | None
    gbps: float | None
    failed: tuple[str, ...]  # "config: reason" of the ones that no longer pass


def _candidates(store, info: DeviceInfo):  # noqa: ANN001, ANN202
    """(level, device ids) to take stored results from, nearest first."""
    from cltune.tuning_db.models import Device

    with store.session() as s:
        exact = list(s.scalars(select(Device.id).where(Device.fingerprint == info.fingerprint)))
        hw = list(s.scalars(select(Device.id).where(Device.hardware_key == info.hardware_key,
                                                    Device.fingerprint != info.fingerprint)))
        model = list(s.scalars(select(Device.id).where(Device.model == info.model,
                                                       Device.vendor == info.vendor,
                                                       Device.hardware_key != info.hardware_key)))
    return [("exact", exact), ("driver-changed", hw), ("same-device", model)]


def verify_device(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, store,  # noqa: ANN001
                  op: str | None = None, dtype: str | None = None) -> list[Verified]:
    from cltune.tuning_db.models import Result

    queue = profiling_queue(ctx, dev)
    here = store.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                               info.name)
    src = source_hash()
    done: set[tuple[str, str, int]] = set()
    out: list[Verified] = []
    for level, ids in _candidates(store, info):
        if not ids:
            continue
        with store.session() as s:
            q = select(Result).where(Result.device_id.in_(ids), Result.status == "ok")
            if op:
                q = q.where(Result.op == op)
            if dtype:
                q = q.where(Result.dtype == dtype)
            rows = [(r.op, r.dtype, r.bucket, r.config_json, r.median_s or 0.0)
                    for r in s.scalars(q.order_by(Result.median_s))]
        keys = sorted({(o, d, b) for o, d, b, _, _ in rows} - done)
        for key in keys:
            o, d, b = key
            spec = OpSpec(o, d)
            bench = Bench(ctx, queue, make_input(spec, 1 << b), spec.result_dtype)
            failed: list[str] = []
            chosen: tuple[Config, float] | None = None
            seen: set[Config] = set()
            for ro, rd, rb, cfg_json, _ in rows:
                if (ro, rd, rb) != key:
                    continue
                try:
                    cfg = Config.from_mapping(__import__("json").loads(cfg_json))
                except ConfigError as e:
                    failed.append(f"invalid stored config: {e}")
                    continue
                if cfg in seen:
                    continue
                seen.add(cfg)
                la = Launcher(ctx, dev, info, spec, cfg)
                try:
                    la.built(False)
                    chk = validate(la, queue, 1 << b)
                    reason = chk.reason
                except BuildError as e:
                    reason = str(e)
                if reason:
                    failed.append(f"{cfg.short()}: {reason}")
                    store.record(here, o, d, b, cfg.to_dict(), cfg.key(), status="failed",
                                 reason=f"cltune verify: {reason}", n_measured=1 << b,
                                 cltune_version=__version__, source_hash=src, force=True)
                    continue
                t = bench.time(la)
                rid = store.record(here, o, d, b, cfg.to_dict(), cfg.key(), status="ok",
                                   median_s=t.median_s, gbps=t.gbps(bench.nbytes),
                                   max_rel_error=chk.max_rel_error, n_measured=1 << b,
                                   cltune_version=__version__, source_hash=src, force=True)
                store.set_best(here, o, d, b, rid)
                store.mark_verified(rid)
                chosen = (cfg, t.gbps(bench.nbytes))
                break
            done.add(key)
            out.append(Verified(o, d, b, level, chosen[0] if chosen else None,
                                chosen[1] if chosen else None, tuple(failed)))
    return out
