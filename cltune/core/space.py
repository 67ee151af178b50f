"""What every family's design space shares: allowed values per config field (`values`), and
sub-spaces of them (`restrict`, for sweeps, tests and `TuneOptions.restrict`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="ValuesSpace")


class ValuesSpace:
    """Mixin for frozen dataclass spaces with a `values: dict[str, tuple]` field; `error` is
    the family's ValueError; `free` names fields whose values are not bounded by the space's
    own (the 1-D family's tile_factor)."""

    error: ClassVar[type[ValueError]] = ValueError
    free: ClassVar[tuple[str, ...]] = ()
    values: dict[str, tuple]

    def restrict(self: T, **fields: tuple) -> T:
        """A sub-space: each given field limited to the given values it already allows."""
        vals = dict(self.values)
        for k, v in fields.items():
            if k not in vals:
                raise self.error(f"unknown space field {k!r}")
            vals[k] = tuple(x for x in v if x in vals[k] or k in self.free)
        return replace(self, values=vals)  # type: ignore[type-var]

    def describe_values(self) -> str:
        return ", ".join(f"{k} {'/'.join(map(str, v))}" for k, v in self.values.items())


class LayoutSpace(ValuesSpace):
    """A space of one memory layout (`layout`: rows | cols) whose smallest offered work-group
    (`values["wg"]`, ascending) is the base multiple."""

    layout: str

    @property
    def base_multiple(self) -> int:
        return self.values["wg"][0]

    def describe(self) -> str:
        return f"{self.layout} layout over " + self.describe_values()

    def check_offered(self, cfg: Any, max_wg: int) -> str:
        """'' when cfg is of this layout, every field one of the offered values and the
        work-group within the device's `max_wg`; else why not."""
        if cfg.layout != self.layout:
            return f"a {cfg.layout} config for the {self.layout} layout"
        for k, allowed in self.values.items():
            if getattr(cfg, k) not in allowed:
                return f"{k}={getattr(cfg, k)} not offered here ({'/'.join(map(str, allowed))})"
        if cfg.wg > max_wg:
            return f"wg={cfg.wg} > device limit {max_wg}"
        return ""


@dataclass(frozen=True)
class GridSpace(LayoutSpace):
    """Every combination of the allowed values per field on one device (`info`), a config
    feasible when each field is offered and its work-group within the device's limit; for
    configs without a layout field (the histogram and top-k families)."""

    info: Any
    values: dict[str, tuple] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)
    layout: str = ""

    def size(self) -> int:
        return math.prod(len(v) for v in self.values.values())

    def check(self, cfg: Any) -> str:
        """'' when cfg is feasible here, else why (nothing compiled)."""
        for k, allowed in self.values.items():
            if getattr(cfg, k) not in allowed:
                return f"{k}={getattr(cfg, k)} not offered here ({'/'.join(map(str, allowed))})"
        if cfg.wg > self.info.max_wg:
            return f"wg={cfg.wg} > device limit {self.info.max_wg}"
        return ""
