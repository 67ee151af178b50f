"""`TopkConfig`: one point of the top-k kernels' design space, validated on creation (the only
door from stored or sampled values to kernels/topk.cl's build options).

    >>> TopkConfig(strategy="radix", wg=256, groups_per_cu=8, bits=8).short()
    'radix wg256 g8 b8'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

STRATEGIES = ("lists", "radix", "sample", "rowsel")
BITS = (4, 8, 11)
MAX_WG = 1024
MAX_GROUPS_PER_CU = 1024
#: lists: the longest list a work-item keeps (k up to it)
MAX_LIST = 1024


class TopkConfigError(ConfigError):
    """A top-k config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class TopkConfig(MappedConfig):
    """strategy: `lists` (each work-item's best k in a private list, merged by the group, then
    the groups' lists by one group a row; k up to MAX_LIST) or `radix` (a radix select of the
    k-th key, `bits` a digit, then the k collected and sorted; any k); wg: work-group size;
    groups_per_cu: work-groups per compute unit, each a contiguous block of a row; bits:
    radix's digit (lists: 8, unused); `sample` (one row): a threshold from a sample every
    group draws, one pass keeping the keys above it, one group selecting the k among them
    (kernels/topk.cl's clt_tk_sfilter, clt_tk_sfinish), the radix select with `bits` where
    the row is too short or k too large for it; `rowsel`: one group a row selects its k
    from the row itself by 8-bit digits and sorts them in __local memory, one launch
    (clt_tk_rowsel; groups_per_cu unused, bits 8)."""

    error: ClassVar[type[ValueError]] = TopkConfigError

    strategy: str = "radix"
    wg: int = 256
    groups_per_cu: int = 8
    bits: int = 8

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise TopkConfigError(f"strategy: {self.strategy!r:.30} is not one of "
                                  f"{', '.join(STRATEGIES)}")
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise TopkConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if not (is_pow2(self.groups_per_cu) and self.groups_per_cu <= MAX_GROUPS_PER_CU):
            raise TopkConfigError(f"groups_per_cu: {self.groups_per_cu} is not a power of two "
                                  f"<= {MAX_GROUPS_PER_CU}")
        if self.bits not in BITS:
            raise TopkConfigError(f"bits: {self.bits} is not one of {BITS}")
        if self.strategy == "lists" and self.bits != 8:
            raise TopkConfigError("bits: the lists strategy has no digits (8)")
        if self.strategy == "rowsel" and self.bits != 8:
            raise TopkConfigError("bits: the rowsel strategy selects by 8-bit digits (8)")

    def handles(self, k: int) -> bool:
        """Whether this config selects k (lists: k up to MAX_LIST)."""
        return self.strategy == "radix" or k <= MAX_LIST

    def local_bytes(self, kp: int, key_bytes: int) -> int:
        """__local memory a group of the main kernel holds (lists: wg lists of kp pairs;
        radix: the digit's histogram)."""
        if self.strategy == "lists":
            return self.wg * kp * (key_bytes + 4)
        if self.strategy == "rowsel":  # its pairs, its bins (kernel.bins_bytes), its scan
            copies = 8 if self.wg >= 64 else 2 if self.wg >= 16 else 1
            return kp * (key_bytes + 4) + 4 * 257 * copies + 4 * max(35, self.wg + 3)
        return (1 << self.bits) * 4  # (sample: its own needs are checked by its plan)

    def short(self) -> str:
        return f"{self.strategy} wg{self.wg} g{self.groups_per_cu} b{self.bits}"
