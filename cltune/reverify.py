"""`cltune verify`: re-validate and re-time stored bests on the current driver.

For each (variant, size class) of the 1-D reduction known for this device — tuned here, or on
the same hardware under another driver, or on the same model — the stored configs are tried
fastest first: the first that still validates is re-timed and becomes this fingerprint's best;
the ones that fail are recorded as failed here with the reason, so they never serve again on
this driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

from . import reduce_family
from .config import Config, ConfigError
from .devices import DeviceInfo
from .evaluate import evaluate
from .launch import Launcher
from .measure import Bench, profiling_queue
from .ops import DTYPES, OPS, OpSpec
from .program import source_hash
from .tuning_db.rows import Measurement
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
        variants = None
        if op or dtype:
            variants = tuple(reduce_family.variant(OpSpec(o, d)) for o in OPS for d in DTYPES
                             if o == (op or o) and d == (dtype or d))
        rows = store.ok_results(ids, reduce_family.NAME, variants)
        for key in sorted({(r.variant, r.size_class) for r in rows} - done):
            variant, size = key
            try:
                spec, b = reduce_family.spec_of(variant), reduce_family.bucket_of(size)
            except ValueError:
                continue  # not a key this cltune can run (the import validated it, though)
            bench = Bench(ctx, queue, make_input(spec, 1 << b), spec.result_dtype)
            failed: list[str] = []
            chosen: tuple[Config, float | None] | None = None
            seen: set[Config] = set()
            for r in rows:
                if (r.variant, r.size_class) != key:
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
                rid = store.record(here, Measurement(
                    reduce_family.NAME, variant, size, cfg.to_dict(), cfg.key(),
                    "ok" if res.ok else "failed", res.n, __version__, src,
                    "" if res.ok else f"cltune verify: {res.reason}", res.median_s, res.gbps,
                    res.max_rel_error), force=True)
                if not res.ok:
                    failed.append(f"{cfg.short()}: {res.reason}")
                    continue
                store.set_best(here, rid)
                store.mark_verified(rid)
                chosen = (cfg, res.gbps)
                break
            done.add(key)
            out.append(Verified(spec.op, spec.dtype, b, level, chosen[0] if chosen else None,
                                chosen[1] if chosen else None, tuple(failed)))
    return out
