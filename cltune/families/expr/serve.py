"""Which config serves an expression reduction on a device, and where that answer came from.

The chain (every answer names its level):
  exact / driver-changed / same-device / shipped / vendor-default
           this expression's fingerprint tuned (tuning_db/lookup.py's chain, family `expr`)
  derived  not tuned: derived from the device's tuned plain reduction (`reduce`,
           `sum/float32`, any level of the same chain)
  builtin  nothing known: a config from the device's limits

Stored configs go through `ExprConfig.from_mapping` (a value that is not allowed is skipped,
never compiled); the runtime never writes to the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from cltune.core import family
from cltune.core.buckets import nearest
from cltune.core.config import ConfigError
from cltune.device.info import DeviceInfo
from cltune.families.expr import family as expr_family
from cltune.families.expr.config import GROUPS_PER_CU, ITEMS, ExprConfig, ExprConfigError

#: bytes of __local memory reserved besides the tile (the single-pass flag)
from cltune.opencl.expression import LOCAL_RESERVE  # noqa: E402
from cltune.tuning_db.answer import answers

#: bytes of accumulators per work-item an untuned config may hold (items x accumulator size):
#: 16 float32 accumulators, 4 argmax structs (index, value), 2 var structs (n, c, s1, s2 in
#: double). More spill on GPUs: on the H200 a var with 16 accumulators ran at 0.22-0.45 of the
#: sum's speed, and its kernel could not be built with more than 256 work-items per group.
ACC_BYTES = 64


@dataclass(frozen=True)
class ExprChoice:
    config: ExprConfig
    bucket: int | None  # the size class 2^bucket it was tuned for; None: any n
    tuned_at: str = ""
    driver: str = ""
    gbps: float | None = None


#: a size class this expression was tuned for serves sizes up to this many powers of two
#: away; beyond, the derived (or builtin) config does (on the H200 the var tuned at 2^24, two
#: passes, took 22.9 us per call at 2^12 and 23.1 at 2^20 where the derived single pass took
#: 17.1 at both)
MAX_BUCKET_STEPS = 2


@dataclass(frozen=True)
class Choices:
    level: str  # a lookup level, `derived` or `builtin`
    why: str
    choices: tuple[ExprChoice, ...]
    #: where this expression is tuned: what serves sizes far from every tuned class
    fallback: Choices | None = None

    def serve(self, n: int) -> tuple[ExprChoice, str, str]:
        """The choice for n elements, its level and why: the nearest size class within
        MAX_BUCKET_STEPS, else the fallback's (the first choice where none has a class)."""
        buckets = [c.bucket for c in self.choices if c.bucket is not None]
        b = nearest(n, buckets)
        far = b is None or abs(b - math.log2(max(1, n))) > MAX_BUCKET_STEPS
        if far and self.fallback is not None:
            c, level, why = self.fallback.serve(n)
            tuned = ", ".join(f"2^{x}" for x in sorted(buckets))
            return c, level, (f"tuned for {tuned} ({self.level}), more than "
                              f"2^{MAX_BUCKET_STEPS} from n: {why}")
        return next((c for c in self.choices if c.bucket == b), self.choices[0]), \
            self.level, self.why


def single_pass_passes(info: DeviceInfo) -> tuple[int, ...]:
    """The `passes` values offered on a device. The single-pass finish (the last group reads
    the other groups' partials) exchanges partials of any type, structs too, with plain
    stores; only NVIDIA's platform orders them across work-groups (the kernel's PTX
    `membar.gl`). OpenCL 1.2 gives no such order for non-atomic stores elsewhere (Oclgrind
    reports it as a race), so other devices finish in a second kernel."""
    return (1, 2) if info.is_nvidia else (2,)


def fit(cfg: ExprConfig, info: DeviceInfo, itemsize: int) -> ExprConfig:
    """cfg made runnable on the device: its work-group shrunk to what the device allows (max
    size, local memory), a single pass turned into two where the device cannot order it."""
    wg = cfg.wg
    while wg > 1 and (wg > info.max_wg or wg * itemsize + LOCAL_RESERVE > info.local_mem):
        wg //= 2
    passes = cfg.passes if cfg.passes in single_pass_passes(info) else 2
    return replace(cfg, wg=wg, passes=passes)


def items_for(items: int, itemsize: int, info: DeviceInfo) -> int:
    """`items` accumulators, on GPUs (registers) fewer where they would hold more than
    ACC_BYTES; CPUs keep them (the derived configs' A/B there, docs/expressions.md)."""
    while info.type != "cpu" and items > 1 and items * itemsize > ACC_BYTES:
        items //= 2
    return items


def builtin(info: DeviceInfo, itemsize: int) -> ExprConfig:
    """CPUs: one work-item per group streaming its own chunk with 4 accumulators, 4 per core
    (measured best on Intel's runtime and PoCL: wider groups make the compilers gather);
    GPUs and others: 256-wide groups, 4 loads in flight, 8 groups per compute unit."""
    if info.type == "cpu":
        cfg = ExprConfig("contiguous", 1, 4, 4, 2)
    else:
        cfg = ExprConfig("strided", 256, items_for(4, itemsize, info), 8, 2)
    return fit(cfg, info, itemsize)


def derive(sum_cfg: Any, info: DeviceInfo, itemsize: int) -> ExprConfig:
    """An expression config shaped like the device's tuned plain sum: the same work-group
    size, groups per compute unit and passes; its loads per work-item step (items x vec) as
    independent accumulators; per-work-item streaming (`serial`) as the contiguous layout, on
    CPUs with one work-item per group and as many work-items per compute unit (the sum's
    work-items vectorise their own loads; an expression's would be gathered across them), with
    no more accumulators than ACC_BYTES hold."""
    def closest(v: int, allowed: tuple[int, ...]) -> int:
        return min(allowed, key=lambda a: (abs(a - v), a))

    serial = sum_cfg.strategy == "serial"
    wg, gpc = min(sum_cfg.wg, 1024), sum_cfg.groups_per_cu
    if serial and info.type == "cpu":
        wg, gpc = 1, gpc * wg
    cfg = ExprConfig("contiguous" if serial else "strided", wg,
                     items_for(closest(min(16, sum_cfg.items * sum_cfg.vec), ITEMS), itemsize,
                               info),
                     closest(gpc, GROUPS_PER_CU[1:]), sum_cfg.passes)
    return fit(cfg, info, itemsize)


def _rows_to_choices(rows: Any, make: Any) -> list[ExprChoice]:
    out = []
    for r in rows:
        try:
            cfg = make(r.config)
            bucket = expr_family.class_bucket(r.size_class)
        except (ExprConfigError, ConfigError, ValueError, TypeError):
            continue  # a stored config that does not validate never reaches the compiler
        out.append(ExprChoice(cfg, bucket, r.updated_at, r.driver, r.gbps))
    return out


def resolve(info: DeviceInfo, fingerprint: str, itemsize: int, db: str | None) -> Choices:
    """The chain for one expression on one device (never raises for a bad database: it is
    reported as a warning and the next level answers)."""
    own, plain = answers(info, db, [(expr_family.NAME, fingerprint), ("reduce", "sum/float32")],
                         stacklevel=4)
    got = _rows_to_choices(own.rows, lambda m: fit(ExprConfig.from_mapping(m), info, itemsize))
    # the 1-D family's config type through the registry (this family imports no other)
    parse_sum = family.get("reduce").parse_config
    derived = _rows_to_choices(plain.rows, lambda m: derive(parse_sum(m), info, itemsize))
    fallback = (Choices("derived", f"not tuned: shaped like the tuned sum/float32 "
                        f"({plain.level}: {plain.why})", tuple(derived)) if derived else
                Choices("builtin", "not tuned, and no tuned sum/float32 for this device: "
                        "config from its limits", (ExprChoice(builtin(info, itemsize), None),)))
    if got:
        return Choices(own.level, own.why, tuple(got), fallback)
    return fallback
