"""`cltune verify`: re-validate and re-time stored bests on the current driver.

For each (op, dtype, bucket) known for this device — tuned here, or on the same hardware under
another driver, or on the same model — the stored configs are tried fastest first: the first that
still validates is re-timed and becomes this fingerprint's best; the ones that fail are recorded
as failed here with the reason, so they never serve again on this driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

from .config import Config, ConfigError
from .devices import DeviceInfo
from .evaluate import evaluate
from .launch import Launcher
from .measure import Bench, profiling_queue
from .ops import OpSpec
from .program import source_hash
from .verify import make_input
from .version import __version__


@dataclass(frozen=True)
class Verified:
    op: str
    dtype: str
    bucket: int
    source_level: str
    config: Config | None
    gbps: float | None
    failed: tuple[str, ...]  # "config: reason" of the ones that no longer pass


def verify_device(ctx: cl.Context, dev: cl.Device, info: DeviceInfo, store,  # noqa: ANN001
                  op: str | None = None, dtype: str | None = None) -> list[Verified]:
    queue = profiling_queue(ctx, dev)
    here = store.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                               info.name)
    src = source_hash()
    done: set[tuple[str, str, int]] = set()
    out: list[Verified] = []
    for level, ids in store.related_devices(info.fingerprint, info.hardware_key, info.model,
                                            info.vendor):
        rows = store.ok_results(ids, op, dtype)
        for key in sorted({(r.op, r.dtype, r.bucket) for r in rows} - done):
            o, d, b = key
            spec = OpSpec(o, d)
            bench = Bench(ctx, queue, make_input(spec, 1 << b), spec.result_dtype)
            failed: list[str] = []
            chosen: tuple[Config, float | None] | None = None
            seen: set[Config] = set()
            for r in rows:
                if (r.op, r.dtype, r.bucket) != key:
                    continue
                try:
                    cfg = Config.from_mapping(r.config)
                except ConfigError as e:
                    failed.append(f"invalid stored config: {e}")
                    continue
                if cfg in seen:
                    continue
                seen.add(cfg)
                res = evaluate(Launcher(ctx, dev, info, spec, cfg), queue, bench)
                rid = store.record(here, o, d, b, cfg.to_dict(), cfg.key(),
                                   status="ok" if res.ok else "failed",
                                   reason="" if res.ok else f"cltune verify: {res.reason}",
                                   median_s=res.median_s, gbps=res.gbps,
                                   max_rel_error=res.max_rel_error, n_measured=res.n,
                                   cltune_version=__version__, source_hash=src, force=True)
                if not res.ok:
                    failed.append(f"{cfg.short()}: {res.reason}")
                    continue
                store.set_best(here, o, d, b, rid)
                store.mark_verified(rid)
                chosen = (cfg, res.gbps)
                break
            done.add(key)
            out.append(Verified(o, d, b, level, chosen[0] if chosen else None,
                                chosen[1] if chosen else None, tuple(failed)))
    return out
