"""A tuning database holding bests for a real device, written through Store like the tuner does."""

from __future__ import annotations

from cltune.families.reduce.config import Config
from cltune.tuning_db import Store
from support.records import reduce_measurement


def store_bests(url: str, info, bests: dict[int, Config], *, gbps: float = 5.0,  # noqa: ANN001
                op: str = "sum", dtype: str = "float32") -> None:
    """Record each {bucket: config} as an ok result of `info`'s device and make it the best;
    the database is closed cleanly afterwards."""
    s = Store.open(url)
    try:
        dev = s.upsert_device(info.fingerprint_parts(), info.fingerprint, info.hardware_key,
                              info.name)
        for bucket, cfg in bests.items():
            rid = s.record(dev, reduce_measurement(op, dtype, bucket, cfg.to_dict(), cfg.key(),
                                                   status="ok", median_s=1e-4, gbps=gbps,
                                                   n_measured=1 << bucket, cltune_version="t",
                                                   source_hash="0" * 16))
            s.set_best(dev, rid)
    finally:
        s.close()
