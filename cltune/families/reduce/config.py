"""The `Config` value type: every tunable, its allowed values, and the only door to the compiler.

A `Config` is built from a name -> value mapping (Optuna's params, a database row, an import
file). `Config.from_mapping` validates every field; anything that is not exactly a known name
with an allowed value is rejected, so no text from outside ever reaches the build options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core import strategies
from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

ACCUMULATORS = ("native", "kahan", "wide")
VECTOR_WIDTHS = (1, 2, 4, 8, 16)
MAX_WG = 4096
MAX_ITEMS = 32
MAX_GROUPS_PER_CU = 1024




@dataclass(frozen=True)
class Config(MappedConfig):
    """One point of the design space.

    Fields:
        strategy: in-group combine, a name in `cltune.core.strategies` (built in: `local_tree`,
            `subgroup`, `subgroup_local`, `warp_shuffle`, `serial`).
        wg: work-group size (power of two, a multiple of the device's subgroup size).
        tile: elements staged in `__local` per work-group (a multiple of `wg`; strategies that
            use a tile only, e.g. `local_tree`; 0 otherwise). Each work-item keeps
            `tile // wg` accumulators.
        items: loads per work-item per loop step, each into its own register accumulator.
        vec: vector width of each load (`vloadN`; any alignment is fine).
        groups_per_cu: work-groups launched per compute unit (capped by n at run time).
        passes: 2 = partials finished by a second kernel; 1 = the last group to finish
            (atomic ticket) combines them.
        acc: `native`, `kahan` (compensated) or `wide` (double accumulator for floats).

    Example:
        >>> Config.from_mapping({"strategy": "serial", "wg": 8, "tile": 0, "items": 4,
        ...                      "vec": 8, "groups_per_cu": 2, "passes": 2, "acc": "native"})
    """

    error: ClassVar[type[ValueError]] = ConfigError

    strategy: str = "local_tree"
    wg: int = 64
    tile: int = 64
    items: int = 4
    vec: int = 4
    groups_per_cu: int = 4
    passes: int = 2
    acc: str = "native"

    def check(self) -> None:
        if self.strategy not in strategies.names():
            raise ConfigError(f"strategy: {self.strategy!r} is not one of {strategies.names()}")
        if self.acc not in ACCUMULATORS:
            raise ConfigError(f"acc: {self.acc!r} is not one of {ACCUMULATORS}")
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise ConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if self.uses_tile:
            if not (is_pow2(self.tile) and self.tile >= self.wg and self.tile <= 64 * self.wg):
                raise ConfigError(
                    f"tile: {self.tile} must be a power-of-two multiple of wg={self.wg} "
                    f"(at most 64x)"
                )
        elif self.tile != 0:
            raise ConfigError(f"tile: must be 0 for strategy {self.strategy}")
        if not 1 <= self.items <= MAX_ITEMS:
            raise ConfigError(f"items: {self.items} is not in 1..{MAX_ITEMS}")
        if self.vec not in VECTOR_WIDTHS:
            raise ConfigError(f"vec: {self.vec} is not one of {VECTOR_WIDTHS}")
        if not 1 <= self.groups_per_cu <= MAX_GROUPS_PER_CU:
            raise ConfigError(f"groups_per_cu: {self.groups_per_cu} not in 1..{MAX_GROUPS_PER_CU}")
        if self.passes not in (1, 2):
            raise ConfigError(f"passes: {self.passes} is not 1 or 2")

    @property
    def uses_tile(self) -> bool:
        return strategies.get(self.strategy).uses_tile

    @property
    def lanes(self) -> int:
        """Accumulators per work-item that land in the local tile."""
        return self.tile // self.wg if self.uses_tile else 1

    def short(self) -> str:
        t = f" tile={self.tile}" if self.tile else ""
        return (
            f"{self.strategy} wg={self.wg}{t} items={self.items} vec={self.vec} "
            f"g/cu={self.groups_per_cu} passes={self.passes} acc={self.acc}"
        )
