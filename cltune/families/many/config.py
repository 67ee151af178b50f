"""`ManyConfig`: one point of the many-arrays reduction's design space, validated on creation
(the only door from stored or sampled values to kernels/many.cl's build options).

    >>> ManyConfig(wg=128, vec=4, items=2, steps=4, slots=16).short()
    'wg128 v4 i2 s4 K16'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cltune.core.config import ConfigError, MappedConfig
from cltune.core.pow2 import is_pow2

VECS = (1, 2, 4, 8, 16)
SLOTS = (8, 16, 32)
MAX_WG = 4096
MAX_ITEMS = 8
MAX_STEPS = 1024


class ManyConfigError(ConfigError):
    """A many-family config value that is not allowed; the message names the field."""


@dataclass(frozen=True)
class ManyConfig(MappedConfig):
    """wg: work-group size; vec: elements per load; items: loads in flight per work-item;
    steps: blocks of wg * items * vec elements a group reduces (its chunk of an array);
    slots: arrays (buffer arguments) per launch: more arrays take several launches."""

    error: ClassVar[type[ValueError]] = ManyConfigError

    wg: int = 64
    vec: int = 4
    items: int = 2
    steps: int = 4
    slots: int = 16

    def check(self) -> None:
        if not (is_pow2(self.wg) and self.wg <= MAX_WG):
            raise ManyConfigError(f"wg: {self.wg} is not a power of two in 1..{MAX_WG}")
        if self.vec not in VECS:
            raise ManyConfigError(f"vec: {self.vec} is not one of {VECS}")
        if not 1 <= self.items <= MAX_ITEMS:
            raise ManyConfigError(f"items: {self.items} is not in 1..{MAX_ITEMS}")
        if not (is_pow2(self.steps) and self.steps <= MAX_STEPS):
            raise ManyConfigError(f"steps: {self.steps} is not a power of two in 1..{MAX_STEPS}")
        if self.slots not in SLOTS:
            raise ManyConfigError(f"slots: {self.slots} is not one of {SLOTS}")

    @property
    def chunk(self) -> int:
        """Elements of an array one work-group reduces."""
        return self.wg * self.items * self.vec * self.steps

    def short(self) -> str:
        return f"wg{self.wg} v{self.vec} i{self.items} s{self.steps} K{self.slots}"
