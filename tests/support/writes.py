"""Random result writes shared by the concurrency tests (SQLite processes, PostgreSQL workers)."""

from __future__ import annotations

import random

from support.records import reduce_measurement


def random_record_writes(store, dev: int, rng: random.Random, n: int, keys: int,  # noqa: ANN001
                         cfg_base: dict, src: str) -> list[tuple[int, str, float | None]]:
    """n record() calls on `keys` config keys x 2 buckets (15 % failed), set_best() on 30 % of
    the ok ones; returns (bucket, config key, median or None) per write, in order."""
    log = []
    for _ in range(n):
        bucket, k = rng.choice((10, 20)), rng.randrange(keys)
        cfg = {**cfg_base, "items": k + 1}
        ok = rng.random() > 0.15
        med = rng.uniform(1e-5, 1e-3) if ok else None
        rid = store.record(dev, reduce_measurement("sum", "float32", bucket, cfg, f"k{k}",
                                                   status="ok" if ok else "failed", median_s=med,
                                                   gbps=1.0 if ok else None,
                                                   reason="" if ok else "wrong sum",
                                                   n_measured=1 << bucket, cltune_version="t",
                                                   source_hash=src))
        log.append((bucket, f"k{k}", med))
        if ok and rng.random() < 0.3:
            store.set_best(dev, rid)
    return log
