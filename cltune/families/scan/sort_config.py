"""`SortConfig`: the shape of the radix passes of `cltune.sort`, `argsort` and `sort_by_key`
(kernels/sort.cl), validated on creation: the only door from stored or sampled values to
their `-DCLT_SORT_WG/ITEMS/BITS` and the launch's chunks.

Two kinds of scatter share the fields: a work-group of one work-item (CPUs) walks its chunk,
a whole number of tiles of `items` elements; larger groups (GPUs) sort each tile of wg x items
elements by the digit in __local memory first.

    >>> SortConfig(1, 4096, 8, 2).short(), SortConfig(256, 8, 8, 2).shape()
    ('wg1 x4096 b8 c/cu2', (256, 8, 8, 2))
    >>> SortConfig.from_mapping({"wg": 64, "items": 3, "bits": 5, "chunks_per_cu": 4}).items
    3
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2, pow2_at_most

MAX_WG = 1024
#: elements a work-item takes in a tile of a group (wg > 1)
SPLIT_ITEMS = tuple(range(1, 17))
#: the tile of a one-work-item group (wg == 1; its chunk a whole number of them)
WALK_ITEMS = tuple(1 << k for k in range(6, 15))
#: the bits of the key a pass sorts by
BITS = (4, 5, 6, 7, 8)
#: chunks (one group each) a compute unit
CHUNKS_PER_CU = (1, 2, 4, 8, 16, 32)
#: __local bytes a shape leaves to the compiler's own needs (as sort.device_shape leaves)
RESERVE = 256
#: the tile a group that no longer fits as a group walks alone (the CPUs' untuned tile)
FALLBACK_WALK = 4096

#: __local bytes of the tile kernel in a shape: sort.split_local(wg, items, bits, key
#: bytes, index bytes)
SplitLocal = Callable[[int, int, int, int, int], int]


class SortConfigError(ConfigError):
    """A sort config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class SortConfig(MappedConfig):
    """wg: work-group size (a power of two; 1: one work-item walks its chunk); items: a
    work-item's elements in a tile of wg x items (groups: 1-16), or the one work-item's tile
    (a power of two, 64-16384; its chunk is a whole number of them); bits: of the key a pass
    (4-8); chunks_per_cu: chunks (a group each) per compute unit the input is cut into."""

    error: ClassVar[type[ValueError]] = SortConfigError

    wg: int = 1
    items: int = 4096
    bits: int = 8
    chunks_per_cu: int = 2

    def check(self) -> None:
        if not (0 < self.wg <= MAX_WG and is_pow2(self.wg)):
            raise SortConfigError(f"wg: {self.wg!r:.20} is not a power of two in 1..{MAX_WG}")
        if self.wg > 1 and self.items not in SPLIT_ITEMS:
            raise SortConfigError(f"items: {self.items!r:.20} is not in 1..{SPLIT_ITEMS[-1]} "
                                  f"(a group of {self.wg})")
        if self.wg == 1 and self.items not in WALK_ITEMS:
            raise SortConfigError(f"items: {self.items!r:.20} is not a power of two in "
                                  f"{WALK_ITEMS[0]}..{WALK_ITEMS[-1]} (one work-item's tile)")
        if self.bits not in BITS:
            raise SortConfigError(f"bits: {self.bits!r:.20} is not one of {BITS}")
        if self.chunks_per_cu not in CHUNKS_PER_CU:
            raise SortConfigError(f"chunks_per_cu: {self.chunks_per_cu!r:.20} is not one of "
                                  f"{CHUNKS_PER_CU}")

    def short(self) -> str:
        return f"wg{self.wg} x{self.items} b{self.bits} c/cu{self.chunks_per_cu}"

    def shape(self) -> tuple[int, int, int, int]:
        """(work-group size, items, bits, chunks per compute unit): the shape sort.py's
        passes take."""
        self.validate()
        return self.wg, self.items, self.bits, self.chunks_per_cu

    def local_bytes(self, key_bytes: int, idx_bytes: int, split_local: SplitLocal) -> int:
        """__local bytes a group of this shape holds: the tile kernel's (`split_local`), or
        for one work-item a bound of its kernels' arrays (`walk_local`)."""
        if self.wg == 1:
            return walk_local(self.bits, idx_bytes)
        return split_local(self.wg, self.items, self.bits, key_bytes, idx_bytes)


def walk_local(bits: int, idx_bytes: int) -> int:
    """__local bytes the passes' kernels of one work-item take at most: an index and three
    words a digit, and a few words beside them (clt_sort_scatter's base, an index a digit, is
    what one work-item walking its chunk holds; clt_sort_hist's counts and clt_sort_scan's
    tile are fewer: a bound that holds while those kernels change)."""
    return (1 << bits) * (idx_bytes + 12) + 64


def fit(cfg: SortConfig, info: Any, key_bytes: int, idx_bytes: int,  # noqa: ANN401
        split_local: SplitLocal) -> SortConfig:
    """cfg runnable on the device `info` describes: its group no larger than the device
    allows, nor than its __local memory holds (`split_local`: sort.split_local, the tile
    kernel's own count) — fewer items a work-item first, then a smaller group; a group that
    still does not fit becomes one work-item walking tiles of FALLBACK_WALK; a walk that does
    not fit takes fewer bits a pass."""
    room = int(info.local_mem) - RESERVE
    top = pow2_at_most(int(info.max_wg))
    if cfg.wg > 1 and top == 1:
        cfg = replace(cfg, wg=1, items=FALLBACK_WALK)
    if cfg.wg > 1:
        cfg = replace(cfg, wg=min(cfg.wg, top))
        while cfg.wg > 1 and cfg.local_bytes(key_bytes, idx_bytes, split_local) > room:
            if cfg.items > 1:
                cfg = replace(cfg, items=cfg.items // 2)
            elif cfg.wg > 2:
                cfg = replace(cfg, wg=cfg.wg // 2)
            else:
                cfg = replace(cfg, wg=1, items=FALLBACK_WALK)
    while cfg.wg == 1 and cfg.bits > BITS[0] and walk_local(cfg.bits, idx_bytes) > room:
        cfg = replace(cfg, bits=cfg.bits - 1)
    return cfg
