"""`AxisConfig`: one point of the axis/segment reduction's design space, validated on creation
(the only door from stored or sampled values to kernels/axis.cl's build options).

Two layouts share the type: `lanes > 0` (rows and segments: `lanes` work-items per row) or
`cols > 0` (strided axis: `cols` work-items along the kept axis); the other is 0.

    >>> AxisConfig(wg=128, lanes=32, vec=4, items=2, groups_per_cu=8).short()
    'rows wg128 L32 v4 i2 g8'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

VECS = (1, 2, 4, 8, 16)
MAX_WG = 4096
MAX_ITEMS = 16
MAX_GROUPS_PER_CU = 1024


class AxisConfigError(ConfigError):
    """An axis config value that is not allowed; the message names the field."""



@dataclass(frozen=True)
class AxisConfig(MappedConfig):
    """wg: work-group size; lanes: work-items per row (rows/segments, power of two <= wg);
    cols: work-items along the kept axis (strided, power of two <= wg); vec: elements per load;
    items: loads in flight per work-item; groups_per_cu: work-groups to aim for per compute
    unit (long rows/columns are split over groups until there are that many); warp: lanes of
    a row combine with NVIDIA warp shuffles (lanes 2..32) instead of __local memory; onepass:
    rows/columns split over groups are finished by the last group of each (atomic ticket)
    instead of a second kernel; lockstep (cols): the group steps through the rows together,
    a barrier a step (CPUs then stream whole rows); stream (cols): a work-item adds whole
    rows of a strip of cols * vec columns into private accumulators, as numpy does (CPUs)."""

    error: ClassVar[type[ValueError]] = AxisConfigError

    wg: int = 64
    lanes: int = 1
    cols: int = 0
    vec: int = 4
    items: int = 2
    groups_per_cu: int = 8
    warp: int = 0
    onepass: int = 0
    lockstep: int = 0
    stream: int = 0

    def check(self) -> None:
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise AxisConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if (self.lanes > 0) == (self.cols > 0):
            raise AxisConfigError("exactly one of lanes (rows) and cols (strided) is > 0")
        for name in ("lanes", "cols"):
            v = getattr(self, name)
            if v and not (is_pow2(v) and v <= self.wg):
                raise AxisConfigError(f"{name}: {v} is not a power of two <= wg={self.wg}")
            if v < 0:
                raise AxisConfigError(f"{name}: {v} < 0")
        if self.vec not in VECS:
            raise AxisConfigError(f"vec: {self.vec} is not one of {VECS}")
        if not 1 <= self.items <= MAX_ITEMS:
            raise AxisConfigError(f"items: {self.items} is not in 1..{MAX_ITEMS}")
        if not (is_pow2(self.groups_per_cu) and self.groups_per_cu <= MAX_GROUPS_PER_CU):
            raise AxisConfigError(f"groups_per_cu: {self.groups_per_cu} is not a power of two "
                                  f"<= {MAX_GROUPS_PER_CU}")
        for name in ("warp", "onepass", "lockstep", "stream"):
            if getattr(self, name) not in (0, 1):
                raise AxisConfigError(f"{name}: {getattr(self, name)} is not 0 or 1")
        if self.warp and not 2 <= self.lanes <= 32:
            raise AxisConfigError("warp: shuffles combine 2..32 lanes of a row")
        if (self.lockstep or self.stream) and not self.cols:
            raise AxisConfigError("lockstep and stream: for the strided (cols) layout only")
        if self.stream and (self.lockstep or self.onepass):
            raise AxisConfigError("stream: a kernel of its own (no lockstep, no onepass)")

    @property
    def layout(self) -> str:
        """`rows` (also segments) or `cols`."""
        return "rows" if self.lanes else "cols"

    def short(self) -> str:
        shape = f"L{self.lanes}" if self.lanes else f"C{self.cols}"
        return (f"{self.layout} wg{self.wg} {shape} v{self.vec} i{self.items} "
                f"g{self.groups_per_cu}{' warp' if self.warp else ''}"
                f"{' 1p' if self.onepass else ''}{' lock' if self.lockstep else ''}"
                f"{' stream' if self.stream else ''}")
