"""Measurements of the 1-D reduction family for Store.record in tests, keyed as the tuner keys
them (family `reduce`, variant `op/dtype`, size class `2^bucket`)."""

from __future__ import annotations

from cltune.tuning_db.rows import Measurement


def reduce_measurement(op: str, dtype: str, bucket: int, config: dict, config_key: str, *,
                       status: str, n_measured: int, cltune_version: str, source_hash: str,
                       reason: str = "", median_s: float | None = None,
                       gbps: float | None = None,
                       max_rel_error: float | None = None) -> Measurement:
    return Measurement("reduce", f"{op}/{dtype}", f"2^{bucket}", config, config_key, status,
                       n_measured, cltune_version, source_hash, reason, median_s, gbps,
                       max_rel_error)
