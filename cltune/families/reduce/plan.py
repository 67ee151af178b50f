"""The launch plan for n elements under a config: groups, sizes, chunk and scratch needs."""

from __future__ import annotations

from dataclasses import dataclass

from cltune.core import strategies
from cltune.families.reduce.config import Config

INDEX32_LIMIT = 2**32 - 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Plan:
    n: int
    groups: int
    wg: int
    chunk: int  # elements per unit
    block: int  # elements one unit consumes per step
    units: int  # units launched: groups, or work-items for per-work-item strategies

    @property
    def global_size(self) -> int:
        return self.groups * self.wg


def make_plan(cfg: Config, n: int, compute_units: int) -> Plan:
    """Groups = groups_per_cu x compute units, capped so that every group has work."""
    if n <= 0:
        raise ValueError("a plan needs n >= 1")
    per_unit_wg = 1 if strategies.get(cfg.strategy).per_work_item else cfg.wg
    block = per_unit_wg * cfg.items * cfg.vec
    units_wanted = cfg.groups_per_cu * max(1, compute_units) * (cfg.wg // per_unit_wg)
    units = max(1, min(units_wanted, _ceil_div(n, block)))
    chunk = _ceil_div(_ceil_div(n, units), block) * block
    units = _ceil_div(n, chunk)
    groups = _ceil_div(units, cfg.wg // per_unit_wg)
    per_group = cfg.wg // per_unit_wg
    return Plan(n=n, groups=groups, wg=cfg.wg, chunk=chunk, block=block,
                units=groups * per_group)


def needs_index64(plan: Plan, offset: int = 0) -> bool:
    """32-bit indices suffice while every index the kernel forms stays below 2**32."""
    top = offset + plan.units * plan.chunk + plan.chunk + plan.block
    return top > INDEX32_LIMIT
