"""`ScanConfig`: one point of the scan family's design space, validated on creation (the only
door from stored or sampled values to kernels/scan.cl's build options).

    >>> ScanConfig("rows", wg=256, items=8, stage=1, group_scan=0, groups_per_cu=4).short()
    'rows wg256 i8 stage tree g/cu4'
    >>> ScanConfig("rows", wg=256, items=8, chain=1).short()
    'rows wg256 i8 stage tree chain'
    >>> ScanConfig("rows", wg=128, items=32, group_scan=2, chain=2).short()
    'rows wg128 i32 stage warp chain-vload'
    >>> ScanConfig("rows", wg=1, items=8, stage=2, groups_per_cu=32, chain=3).short()
    'rows wg1 i8 vector tree chunks g/cu32'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

LAYOUTS = ("rows", "cols")
MAX_WG = 1024
ITEMS = (1, 2, 4, 8, 16, 32)
#: cols only (CPUs): a work-item's strip of this many columns, scanned row by row in vectors
#: of 16 (each row's strip a contiguous run the prefetchers follow)
WIDE_ITEMS = (64, 128, 256, 512, 1024)
GROUP_SCANS = ("tree", "subgroup", "warp")
STAGES = ("direct", "stage", "vector")
CHAINS = ("", "chain", "chain-vload", "chunks")
GROUPS_PER_CU = (1, 2, 4, 8, 16, 32, 64, 128, 256)
VECTOR_ITEMS = (8, 16)  # stage=2: the vectors' width
CHAIN_GROUPS_PER_CU = 4  # a chained config's (it launches a group a tile)


class ScanConfigError(ConfigError):
    """A scan config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class ScanConfig(MappedConfig):
    """layout: rows (contiguous axis) or cols (strided); wg: work-group size (a power of two);
    items: consecutive elements a work-item scans per tile (rows), or the neighbouring columns
    it scans side by side (cols: a strip, contiguous in every row; 64..1024 a wide strip,
    CPUs); stage: 1 passes tiles
    through __local memory (coalesced on GPUs), 0 reads a work-item's elements directly
    (CPUs), 2 (CPUs; wg=1, items=8 or 16) a work-item scans its whole chunk `items` elements at
    a time in vector registers (sums, products, integer min/max; else as 0); group_scan:
    0 a __local tree, 1 subgroup scans where the device has them
    (unsegmented sums; the tree elsewhere), 2 NVIDIA warp shuffles (inline PTX; any op and
    segments; the tree elsewhere); groups_per_cu: how many chunks per compute unit
    the input is cut into (a launch parameter); chain: 0 reduce-then-scan (three launches,
    ~3n bytes), 1 one pass with decoupled look-back (rows: a tile a group, ~2n bytes; needs
    64-bit atomics; groups_per_cu then has no effect), 2 the same with the look-back reading
    its predecessors' state words by volatile loads instead of atomics (offered on NVIDIA), 3
    the chained pass over the chunks of reduce-then-scan (groups_per_cu of them per compute
    unit, each reduced then scanned by one group: CPUs, whose chunks stay in cache))."""

    error: ClassVar[type[ValueError]] = ScanConfigError

    layout: str = "rows"
    wg: int = 64
    items: int = 4
    stage: int = 1
    group_scan: int = 0
    groups_per_cu: int = 4
    chain: int = 0

    @classmethod
    def from_mapping(cls, m: Mapping[str, object]) -> ScanConfig:
        """As MappedConfig's; a mapping stored before `chain` existed means chain=0."""
        if isinstance(m, Mapping) and "chain" not in m:
            m = {**m, "chain": 0}
        return super().from_mapping(m)

    def to_dict(self) -> dict[str, Any]:
        """chain=0 is left out: a config's key (and its stored rows) as before the field."""
        d = super().to_dict()
        if not self.chain:
            d.pop("chain")
        return d

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise ScanConfigError(f"layout: {self.layout!r:.20} is not one of {LAYOUTS}")
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise ScanConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if self.items not in ITEMS and not (self.layout == "cols" and self.items in WIDE_ITEMS):
            raise ScanConfigError(f"items: {self.items} is not one of {ITEMS} (cols also "
                                  f"{WIDE_ITEMS})")
        if self.stage not in (0, 1, 2):
            raise ScanConfigError(f"stage: {self.stage} is not 0, 1 or 2")
        if self.stage == 2 and (self.wg != 1 or self.items not in VECTOR_ITEMS
                                or self.chain in (1, 2)):
            raise ScanConfigError("stage=2 (a work-item scans its chunk in vector registers) "
                                  "takes wg=1, items=8 or 16 (the vectors' width) and chain 0 "
                                  "or 3")
        if self.group_scan not in (0, 1, 2):
            raise ScanConfigError(f"group_scan: {self.group_scan} is not 0 (tree), 1 "
                                  "(subgroup) or 2 (warp)")
        if self.groups_per_cu not in GROUPS_PER_CU:
            raise ScanConfigError(f"groups_per_cu: {self.groups_per_cu} is not one of "
                                  f"{GROUPS_PER_CU}")
        if self.chain not in (0, 1, 2, 3):
            raise ScanConfigError(f"chain: {self.chain} is not 0, 1, 2 or 3")
        if self.chain in (1, 2) and self.groups_per_cu != CHAIN_GROUPS_PER_CU:
            raise ScanConfigError(f"groups_per_cu: {self.groups_per_cu} with chain={self.chain} "
                                  f"(a group a tile: it has no effect; keep "
                                  f"{CHAIN_GROUPS_PER_CU})")
        if self.layout == "cols" and self.chain:
            raise ScanConfigError("chain: the cols layout scans by reduce-then-scan")
        if self.layout == "cols" and (self.stage or self.group_scan):
            raise ScanConfigError("cols: a work-item scans its column alone (stage=0, "
                                  "group_scan=0)")

    @property
    def tile(self) -> int:
        return self.wg * self.items

    def short(self) -> str:
        if self.layout == "cols":
            return f"cols wg{self.wg} i{self.items} g/cu{self.groups_per_cu}"
        tail = f"g/cu{self.groups_per_cu}"
        if self.chain:
            tail = f"chunks g/cu{self.groups_per_cu}" if self.chain == 3 else CHAINS[self.chain]
        return (f"rows wg{self.wg} i{self.items} {STAGES[self.stage]} "
                f"{GROUP_SCANS[self.group_scan]} {tail}")
