"""The tunables of an expression reduction along an axis (kernels/expr_axis.cl) as a value
type, the config chosen for a shape, and the launch plan of a call. No OpenCL here.

An `AxisExprConfig` is checked on creation, so only known names with allowed values ever become
`-D` build options (house rule 2).

    >>> from types import SimpleNamespace as NS
    >>> from cltune.families.expr_axis.defaults import choose
    >>> from cltune.families.expr_axis.launch import axis_plan
    >>> cpu = NS(type="cpu", max_wg=8192, compute_units=2)
    >>> choose(cpu, 1 << 16, 256, 1).short()
    'rows wg=8 lanes=1 items=2'
    >>> choose(cpu, 1, 4096, 4096, acc_size=8, stream=True).short()  # streamed (CPUs)
    'cols wg=1 lanes=1 items=8 strip=1024'
    >>> cfg = choose(cpu, 1, 1 << 20, 16, acc_size=8)
    >>> cfg.short(), axis_plan(cfg, cpu.compute_units, 1, 1 << 20, 16).split
    ('cols wg=8 lanes=1 items=2 strip=16', 16)
    >>> AxisExprConfig.from_mapping({**cfg.to_dict(), "groups_per_cu": 2}).short()
    'cols wg=8 lanes=1 items=2 strip=16 g/cu=2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

LAYOUTS = ("rows", "cols")
MAX_WG = 1024
ITEMS = (1, 2, 4, 8)
STRIPS = (1, 2, 4, 8, 16)
#: cols on CPUs, accumulators without the rounding cascade: wider strips streamed (a
#: work-item's strip of outputs in private memory, `items` rows folded a pass into each)
STREAM_STRIPS = (64, 256, 1024)
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
    (cols only, else 1): neighbouring outputs per work-item (over 16: streamed, CPUs, without
    the rounding cascade; `items` then the rows folded a pass into each); groups_per_cu: the
    work-groups per compute unit a call aims for, splitting the reduced axis over groups while the
    outputs alone give fewer (a launch parameter: not a build option). A group holds
    wg / lanes * strip outputs."""

    error: ClassVar[type[ValueError]] = AxisExprConfigError

    layout: str = "rows"
    wg: int = 64
    lanes: int = 1
    items: int = 1
    strip: int = 1
    groups_per_cu: int = GROUPS_PER_CU

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise AxisExprConfigError(f"layout: {self.layout!r:.40} is not one of {LAYOUTS}")
        if not (self.wg <= MAX_WG and is_pow2(self.wg)):
            raise AxisExprConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if not (self.lanes <= self.wg and is_pow2(self.lanes)):
            raise AxisExprConfigError(f"lanes: {self.lanes} is not a power of two <= wg")
        if self.items not in ITEMS:
            raise AxisExprConfigError(f"items: {self.items} is not one of {ITEMS}")
        if (self.strip not in STRIPS + STREAM_STRIPS
                or (self.layout == "rows" and self.strip != 1)):
            raise AxisExprConfigError(f"strip: {self.strip} is not one of "
                                      f"{STRIPS + STREAM_STRIPS} (1 for rows)")
        if self.streamed and self.lanes != 1:
            raise AxisExprConfigError(f"lanes: a streamed strip ({self.strip} outputs) has "
                                      "one lane")
        if self.groups_per_cu not in GROUPS_PER_CU_VALUES:
            raise AxisExprConfigError(f"groups_per_cu: {self.groups_per_cu} is not one of "
                                      f"{GROUPS_PER_CU_VALUES}")

    @property
    def streamed(self) -> bool:
        """A strip wider than 16 outputs: streamed (kernels/expr_axis.cl; each work-item a
        strip of one outer block, `items` rows a pass)."""
        return self.strip > STRIPS[-1]

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
        self.validate()  # frozen, but this is the door to the compiler
        return {"CLT_AX_LAYOUT": LAYOUTS.index(self.layout), "CLT_AX_WG": self.wg,
                "CLT_AX_LANES": self.lanes, "CLT_AX_ITEMS": self.items,
                "CLT_AX_STRIP": self.strip}


