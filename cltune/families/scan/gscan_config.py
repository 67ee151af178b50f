"""`GScanConfig`: the tunables of an application's `GenericScanKernel` (kernels/generic_scan.cl),
validated on creation: the only door from stored or sampled values to its `-DCLT_WG`.

    >>> GScanConfig.from_mapping({"layout": "tiled", "wg": 128, "groups_per_cu": 8,
    ...                           "items": 4}).short()
    'tiled wg128 k4 g/cu8'
    >>> GScanConfig("contiguous", 8, 4, 1).short()
    'contiguous wg8 g/cu4'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

MAX_WG = 1024
#: contiguous: each work-item scans its own range of the group's chunk (CPUs: one core streams
#: it); tiled: the chunk a tile of wg x items at a time through __local memory, loaded and
#: stored by consecutive work-items (GPUs: coalesced)
LAYOUTS = ("contiguous", "tiled")
#: tiled: consecutive elements a work-item combines in a tile
ITEMS = (1, 2, 4, 8, 16)
#: tiled: the least group (smaller tiles are the contiguous layout's job; Debian's PoCL 3.1
#: fails an assertion compiling groups of 2 with 4 items)
MIN_TILED_WG = 8
#: chunks a compute unit (each scanned by one group: its work-items take contiguous ranges)
GROUPS_PER_CU = (1, 2, 4, 8, 16, 32, 64)


class GScanConfigError(ConfigError):
    """A GenericScanKernel config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class GScanConfig(MappedConfig):
    """layout: `contiguous` or `tiled` (LAYOUTS); wg: work-group size (a power of two);
    groups_per_cu: the chunks (one group each) per compute unit the input is cut into (a
    launch parameter); items: tiled, the consecutive elements a work-item combines in a tile
    of wg x items (contiguous: 1)."""

    error: ClassVar[type[ValueError]] = GScanConfigError

    layout: str = "tiled"
    wg: int = 128
    groups_per_cu: int = 8
    items: int = 4

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise GScanConfigError(f"layout: {self.layout!r:.40} is not one of {LAYOUTS}")
        if not (0 < self.wg <= MAX_WG and is_pow2(self.wg)):
            raise GScanConfigError(f"wg: {self.wg!r:.20} is not a power of two in 1..{MAX_WG}")
        if self.groups_per_cu not in GROUPS_PER_CU:
            raise GScanConfigError(f"groups_per_cu: {self.groups_per_cu!r:.20} is not one of "
                                   f"{GROUPS_PER_CU}")
        if self.items not in ITEMS or (self.layout == "contiguous" and self.items != 1):
            raise GScanConfigError(f"items: {self.items!r:.20} is not one of {ITEMS} (1 for "
                                   "the contiguous layout)")
        if self.layout == "tiled" and self.wg < MIN_TILED_WG:
            raise GScanConfigError(f"wg: {self.wg} is below {MIN_TILED_WG} for the tiled "
                                   "layout")

    def short(self) -> str:
        k = f" k{self.items}" if self.layout == "tiled" else ""
        return f"{self.layout} wg{self.wg}{k} g/cu{self.groups_per_cu}"

    @property
    def tile(self) -> int:
        """Elements a group takes at a time (tiled), 1 (contiguous)."""
        return self.wg * self.items if self.layout == "tiled" else 1

    def local_bytes(self, itemsize: int) -> int:
        """__local memory a group of this config holds for values of `itemsize` bytes."""
        own = self.wg * (itemsize + 4)  # the group scan's values and flags
        return own + (self.tile * (itemsize + 1) if self.layout == "tiled" else 0)

    def defines(self) -> dict[str, int]:
        """The `-D` values of kernels/generic_scan.cl: integers from checked fields only."""
        self.validate()
        return {"CLT_WG": self.wg, "CLT_GS_TILED": LAYOUTS.index(self.layout),
                "CLT_K": self.items}
