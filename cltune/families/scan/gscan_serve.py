"""Which config serves an application's `GenericScanKernel` on a device, and where that answer
came from (every answer names its level):

  exact / driver-changed / same-device / shipped / vendor-default
           this kernel's fingerprint tuned (family `gscan`, the database's chain)
  derived  not tuned: the work-group size and chunks of the device's tuned plain scan
           (`scan`, `sum/float32/rows`, a reduce-then-scan config, any level of that chain)
  builtin  nothing known: `builtin` (the device's limits)

Stored configs go through `GScanConfig.from_mapping` and `fit` (a value that is not allowed is
skipped, never compiled); the runtime never writes to the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from cltune.core.buckets import class_bucket
from cltune.core.config import ConfigError
from cltune.core.pow2 import pow2_at_most
from cltune.core.serving import NEAR_STEPS, SizeChoices
from cltune.device.info import DeviceInfo
from cltune.families.scan.config import ScanConfig
from cltune.families.scan.gscan_config import GROUPS_PER_CU, ITEMS, MIN_TILED_WG, GScanConfig
from cltune.families.scan.gscan_family import NAME
from cltune.tuning_db.answer import answers

#: a tuned size class serves sizes up to this many powers of two away (as the expressions')
MAX_BUCKET_STEPS = NEAR_STEPS
#: the plain scan a derived config is shaped like
PLAIN = ("scan", "sum/float32/rows")


#: __local bytes a group leaves to the compiler's own needs
RESERVE = 256


def builtin(info: DeviceInfo, itemsize: int = 8) -> GScanConfig:
    """CPUs: work-items scanning contiguous ranges, groups of 8, 4 a compute unit (a core
    streams its range); GPUs: tiles of 128 x 8 through __local memory, loaded and stored by
    consecutive work-items (coalesced), 8 groups a compute unit."""
    if info.type == "cpu":
        return fit(GScanConfig("contiguous", 8, 4, 1), info, itemsize)
    return fit(GScanConfig("tiled", 128, 8, 8), info, itemsize)


def fit(cfg: GScanConfig, info: DeviceInfo, itemsize: int) -> GScanConfig:
    """cfg runnable on the device: its group no larger than the device allows, nor than its
    __local memory holds (fewer items a tile first, then a smaller group; tiles of fewer than
    MIN_TILED_WG work-items become contiguous ranges)."""
    top = pow2_at_most(max(1, int(info.max_wg)))
    if cfg.layout == "tiled" and top < MIN_TILED_WG:
        cfg = GScanConfig("contiguous", top, cfg.groups_per_cu, 1)
    cfg = replace(cfg, wg=min(cfg.wg, top))
    while cfg.local_bytes(itemsize) + RESERVE > info.local_mem:
        if cfg.items > 1:
            cfg = replace(cfg, items=cfg.items // 2)
        elif cfg.layout == "tiled" and cfg.wg // 2 < MIN_TILED_WG:
            cfg = GScanConfig("contiguous", cfg.wg, cfg.groups_per_cu, 1)
        elif cfg.wg > 1:
            cfg = replace(cfg, wg=cfg.wg // 2)
        else:
            break
    return cfg


def derive(plain: ScanConfig, info: DeviceInfo, itemsize: int) -> GScanConfig:
    """A GenericScanKernel config shaped like the tuned plain scan: its work-group size,
    its elements a work-item (up to 16, tiled where the plain scan stages tiles through
    __local memory, else contiguous ranges) and, for reduce-then-scan configs, its chunks a
    compute unit (a chained config's tiles say nothing about chunks: the builtin's then)."""
    gpc = plain.groups_per_cu if not plain.chain else builtin(info).groups_per_cu
    gpc = min(GROUPS_PER_CU, key=lambda a: (abs(math.log2(a) - math.log2(max(1, gpc))), a))
    if plain.stage == 1 and plain.wg >= MIN_TILED_WG:
        k = min(ITEMS, key=lambda a: (abs(a - min(16, plain.items)), a))
        return fit(GScanConfig("tiled", plain.wg, gpc, k), info, itemsize)
    return fit(GScanConfig("contiguous", plain.wg, gpc, 1), info, itemsize)


@dataclass(frozen=True)
class GScanChoice:
    config: GScanConfig
    bucket: int | None  # the size class 2^bucket it was tuned for; None: any n
    tuned_at: str = ""
    driver: str = ""
    gbps: float | None = None


Choices = SizeChoices  # the chain's answer for one kernel (core.serving)


def _choices(rows: Any, make: Any, bucketed: bool) -> list[GScanChoice]:
    out = []
    for r in rows:
        try:
            cfg = make(r.config)
            bucket = class_bucket(r.size_class) if bucketed else None
        except (ConfigError, ValueError, TypeError):
            continue  # a stored config that does not validate never reaches the compiler
        out.append(GScanChoice(cfg, bucket, r.updated_at, r.driver, r.gbps))
    return out


def resolve(info: DeviceInfo, fingerprint: str, itemsize: int, db: str | None) -> Choices:
    """The chain for one kernel on one device (a bad database is a warning and the next level
    answers, never an error)."""
    own, plain = answers(info, db, [(NAME, fingerprint), PLAIN], stacklevel=4)
    got = _choices(own.rows, lambda m: fit(GScanConfig.from_mapping(m), info, itemsize), True)
    derived = _choices(plain.rows,
                       lambda m: derive(ScanConfig.from_mapping(m), info, itemsize), False)
    fallback = (Choices("derived", f"not tuned: shaped like the tuned plain scan "
                        f"sum/float32/rows ({plain.level}: {plain.why})", tuple(derived[:1]))
                if derived else
                Choices("builtin", "not tuned, and no tuned plain scan for this device: "
                        "config from its limits",
                        (GScanChoice(builtin(info, itemsize), None),)))
    if got:
        return Choices(own.level, own.why, tuple(got), fallback)
    return fallback
