"""The tunables of an expression reduction along an axis (kernels/expr_axis.cl) as a value
type, the config chosen for a shape, and the launch plan of a call. No OpenCL here.

An `AxisExprConfig` is checked on creation, so only known names with allowed values ever become
`-D` build options (house rule 2).

    >>> from types import SimpleNamespace as NS
    >>> cpu = NS(type="cpu", max_wg=8192, compute_units=2)
    >>> choose(cpu, 1 << 16, 256, 1).short()
    'rows wg=8 lanes=1 items=2'
    >>> cfg = choose(cpu, 1, 1 << 20, 16, acc_size=8)
    >>> cfg.short(), axis_plan(cfg, cpu.compute_units, 1, 1 << 20, 16).split
    ('cols wg=8 lanes=1 items=2 strip=16', 16)
    >>> AxisExprConfig.from_mapping({**cfg.to_dict(), "groups_per_cu": 2}).short()
    'cols wg=8 lanes=1 items=2 strip=16 g/cu=2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2, pow2_at_least, pow2_at_most

LAYOUTS = ("rows", "cols")
MAX_WG = 1024
ITEMS = (1, 2, 4, 8)
STRIPS = (1, 2, 4, 8, 16)
#: groups to aim for per compute unit (the default of the `groups_per_cu` field): a reduced
#: axis is split over groups until there are
GROUPS_PER_CU = 8
GROUPS_PER_CU_VALUES = (1, 2, 4, 8, 16, 32, 64)
#: a split never leaves a group fewer rows than this per work-item along the axis
MIN_ROWS_PER_ITEM = 64


class AxisExprConfigError(ConfigError):
    """A config value that is not allowed; the message names the field."""





@dataclass(frozen=True)
class AxisExprConfig(MappedConfig):
    """layout: `rows` (the reduced axis is contiguous, inner == 1) or `cols` (it is strided);
    wg: work-group size (a power of two); lanes: work-items per output along the reduced axis
    (a power of two <= wg); items: independent accumulators per output and work-item; strip
    (cols only, else 1): neighbouring outputs per work-item; groups_per_cu: the work-groups
    per compute unit a call aims for, splitting the reduced axis over groups while the
    outputs alone give fewer (a launch parameter: not a build option). A group holds
    wg / lanes * strip outputs."""

    error: ClassVar[type[ValueError]] = AxisExprConfigError

    layout: str = "rows"
    wg: int = 64
    lanes: int = 1
    items: int = 1
    strip: int = 1
    groups_per_cu: int = GROUPS_PER_CU

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        self._check_types()
        if self.layout not in LAYOUTS:
            raise AxisExprConfigError(f"layout: {self.layout!r:.40} is not one of {LAYOUTS}")
        if not (self.wg <= MAX_WG and is_pow2(self.wg)):
            raise AxisExprConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if not (self.lanes <= self.wg and is_pow2(self.lanes)):
            raise AxisExprConfigError(f"lanes: {self.lanes} is not a power of two <= wg")
        if self.items not in ITEMS:
            raise AxisExprConfigError(f"items: {self.items} is not one of {ITEMS}")
        if self.strip not in STRIPS or (self.layout == "rows" and self.strip != 1):
            raise AxisExprConfigError(f"strip: {self.strip} is not one of {STRIPS} (1 for rows)")
        if self.groups_per_cu not in GROUPS_PER_CU_VALUES:
            raise AxisExprConfigError(f"groups_per_cu: {self.groups_per_cu} is not one of "
                                      f"{GROUPS_PER_CU_VALUES}")

    @property
    def outputs_per_group(self) -> int:
        return self.wg // self.lanes * self.strip

    def short(self) -> str:
        return (f"{self.layout} wg={self.wg} lanes={self.lanes} items={self.items}"
                + (f" strip={self.strip}" if self.strip > 1 else "")
                + (f" g/cu={self.groups_per_cu}" if self.groups_per_cu != GROUPS_PER_CU
                   else ""))

    def defines(self) -> dict[str, int]:
        """The `-D` values of kernels/expr_axis.cl: integers only, from checked fields only."""
        self._check()  # frozen, but this is the door to the compiler
        return {"CLT_AX_LAYOUT": LAYOUTS.index(self.layout), "CLT_AX_WG": self.wg,
                "CLT_AX_LANES": self.lanes, "CLT_AX_ITEMS": self.items,
                "CLT_AX_STRIP": self.strip}


#: CPU columns: a work-item's accumulators (strip x items) are kept within this many bytes
#: (more spill: var's 32-byte accumulators at items=2 ran 1.3-3x slower on both CPU runtimes)
CPU_ACC_BYTES = 256
#: accumulator bytes per lane of a GPU rows config (registers; more spill)
GPU_ACC_BYTES = 64


def choose(info: Any, outer: int, r: int, inner: int, acc_size: int = 8) -> AxisExprConfig:
    """The config for reducing (outer, r, inner) along r on a device (`type`, `max_wg`) with
    accumulators of `acc_size` bytes; measured on two CPU runtimes (Intel's, PoCL).

    CPUs run a work-group on one core. Rows get a work-item per row reading it in order, with
    1 accumulator for rows shorter than 64, 2 up to 1023, then 4 (independent chains; a short
    row has no room for more); 8 rows a group, 16 for 16-byte accumulators (an index and a
    value: argmin/argmax): on Intel's runtime argmax ran 3-7x faster with 16 and mean/norm
    4-8x faster with 8 (PoCL: within 10% either way). Columns get a work-item per strip of 16
    neighbouring outputs that folds row after row into the strip's accumulators, so every
    cache line is read once and in order (one work-item per column reads each line 16 times:
    7-10x slower) and the strip's loads are contiguous; 2 accumulators per output while the
    strip's stay within CPU_ACC_BYTES. Long axes are split over groups by `axis_plan`.

    GPUs: rows get a lane per 16 elements up to 256 (neighbouring lanes read neighbouring
    elements; short rows a work-item each, 256 a group) and up to 4 accumulators of at most
    GPU_ACC_BYTES together; columns get up to 256 neighbouring columns a
    group (coalesced) and the rest of the group's 256 work-items along the axis."""
    cpu = getattr(info, "type", "gpu") == "cpu"
    cap = pow2_at_most(min(int(info.max_wg), MAX_WG))
    items = 1 if r < 64 else 2 if r < 1024 else 4
    if inner == 1:
        if cpu:  # 16-byte accumulators are argmin/argmax's (index, value): see above
            return AxisExprConfig("rows", min(cap, 16 if acc_size == 16 else 8), 1, items)
        wg = min(cap, 256)
        # a lane per 16 elements (the plain axis sums tuned on the H200: rows of 16 and of 4
        # one work-item each, of 64 8 lanes, of 256 16), 64 bytes of accumulators a lane
        items = max(1, min(4, GPU_ACC_BYTES // max(1, acc_size)))
        lanes = min(wg, pow2_at_most(max(1, r // 16)))
        return AxisExprConfig("rows", wg, lanes, items)
    if cpu:
        strip = min(16, pow2_at_most(inner))
        items = 2 if r >= 2 and strip * 2 * acc_size <= CPU_ACC_BYTES else 1
        return AxisExprConfig("cols", min(cap, 8), 1, items, strip)
    wg = min(cap, 256)
    cols = min(wg, pow2_at_least(inner))
    lanes = wg // cols
    while lanes > 1 and lanes * items > max(1, r):
        lanes //= 2
    return AxisExprConfig("cols", cols * lanes, lanes, items)


@dataclass(frozen=True)
class AxisPlan:
    """The launch of one call: `groups` work-groups across outputs, `split` along the axis
    (each `chunk` rows; split > 1 adds the combining second kernel)."""

    groups: int
    split: int
    chunk: int


def axis_plan(cfg: AxisExprConfig, compute_units: int, outer: int, r: int,
              inner: int) -> AxisPlan:
    """Groups across the outputs; when they are fewer than cfg.groups_per_cu per compute
    unit, the axis is split over groups too, as long as every work-item keeps
    MIN_ROWS_PER_ITEM rows or more."""
    outputs = outer * inner
    groups = max(1, -(-outputs // cfg.outputs_per_group))
    want = cfg.groups_per_cu * max(1, compute_units)
    split = 1
    if groups < want and r > 0:
        per_group = cfg.lanes * cfg.items * MIN_ROWS_PER_ITEM  # the fewest rows worth a group
        split = max(1, min(-(-want // groups), r // per_group))
    chunk = -(-r // split) if r else 0
    if split > 1:
        block = cfg.lanes * cfg.items
        chunk = -(-chunk // block) * block
        split = -(-r // chunk)
    return AxisPlan(groups, split, chunk)
