"""In-group strategies as records in one registry: everything cltune knows about a strategy.

A strategy is how a work-group combines its work-items' values. Its record says which kernel
path implements it (`kernel_id`, the `CLT_STRATEGY` value of kernels/reduce.cl, or its own
OpenCL `source` for a strategy that lives outside that file), whether it stages a tile in
`__local` memory, what a work-group size must be a multiple of, how many partials one group
writes, which compiled path a build must really have taken, and where it is offered.

Adding a strategy is one `register(Strategy(...))` call (plus its OpenCL). The registry holds
code the application trusts; a database or an import file can only *name* a registered strategy.

    >>> from cltune.core.strategies import get, names
    >>> get("serial").per_work_item, "local_tree" in names()
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # value types only here: no OpenCL import at run time
    from cltune.core.ops import OpSpec
    from cltune.device.info import DeviceInfo

#: What one work-group writes to the partials buffer.
PARTIALS = ("group", "work-item", "subgroup")
#: Probe flags of a build (kernels/reduce.cl `clt_probe`), by name.
PROBE_FLAGS = ("have_subgroups", "have_nv_ptx", "sg_active", "warp_active")


def _everywhere(spec: OpSpec, info: DeviceInfo) -> str:
    return ""


def _subgroups(spec: OpSpec, info: DeviceInfo) -> str:
    if not info.subgroups:
        return "no cl_khr_subgroups / OpenCL C 3.0 subgroups on this device"
    if spec.op == "prod":
        return "subgroup builtins have no multiply"
    if spec.is_float and spec.op in ("min", "max"):
        return "sub_group_reduce_min/max do not define NaN propagation"
    return ""


def _nvidia(spec: OpSpec, info: DeviceInfo) -> str:
    return "" if info.is_nvidia else "inline PTX warp shuffles exist only on NVIDIA's platform"


@dataclass(frozen=True)
class Strategy:
    """One in-group strategy.

    name: the value of `Config.strategy` (stored in databases and export files).
    kernel_id: `CLT_STRATEGY` in kernels/reduce.cl; ignored when `source` is given.
    uses_tile: stages `Config.tile` elements in `__local` (tile a multiple of wg); else tile=0.
    per_work_item: every work-item owns a contiguous chunk (else the work-group owns it).
    partials: what one group writes: one value per `group`, `work-item` or `subgroup`.
    wg_multiple: the work-group size must be a multiple of this, given the device's base
        multiple (the real subgroup size, else the warp width, else the preferred multiple).
    needs: the probe flag (PROBE_FLAGS) a build must report, else it fell back to another
        path and is rejected ('' for none); `missing` is the reason then.
    offered: '' where the strategy may run for (spec, device), else why not.
    source: OpenCL C appended to kernels/reduce.cl, defining `clt_hook_combine` (see there),
        for strategies that live outside that file; '' for the built-in ones.
    """

    name: str
    kernel_id: int
    uses_tile: bool = False
    per_work_item: bool = False
    partials: str = "group"
    wg_multiple: Callable[[int], int] = lambda base: base
    needs: str = ""
    missing: str = ""
    offered: Callable[[OpSpec, DeviceInfo], str] = _everywhere
    source: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"strategy name {self.name!r} must be an identifier")
        if self.partials not in PARTIALS:
            raise ValueError(f"partials must be one of {PARTIALS}, not {self.partials!r}")
        if self.needs and self.needs not in PROBE_FLAGS:
            raise ValueError(f"needs must be one of {PROBE_FLAGS}, not {self.needs!r}")
        if self.partials == "work-item" and not self.per_work_item:
            raise ValueError("per-work-item partials need per_work_item=True")

    @property
    def needs_probe_build(self) -> bool:
        """Whether `offered` is only half the answer: a build must show the path compiles."""
        return bool(self.needs or self.source)


BUILTIN: tuple[Strategy, ...] = (
    Strategy("local_tree", 0, uses_tile=True),
    Strategy("subgroup", 1, partials="subgroup", needs="sg_active",
             missing="subgroups are not available: the kernel fell back to local memory",
             offered=_subgroups),
    Strategy("subgroup_local", 2, needs="sg_active",
             missing="subgroups are not available: the kernel fell back to local memory",
             offered=_subgroups),
    Strategy("warp_shuffle", 3, wg_multiple=lambda base: max(base, 32), needs="warp_active",
             missing="warp shuffles (NVIDIA inline PTX) are not available here",
             offered=_nvidia),
    Strategy("serial", 4, per_work_item=True, partials="work-item"),
)

_registry: dict[str, Strategy] = {s.name: s for s in BUILTIN}


def register(s: Strategy) -> Strategy:
    """Add a strategy (a name must not be taken, nor a built-in kernel id reused)."""
    if s.name in _registry:
        raise ValueError(f"strategy {s.name!r} is already registered")
    if not s.source and any(o.kernel_id == s.kernel_id for o in _registry.values()):
        raise ValueError(f"kernel id {s.kernel_id} is taken; give a new one or a source")
    _registry[s.name] = s
    return s


def unregister(name: str) -> None:
    """Remove a strategy added by `register` (built-in ones stay)."""
    if any(b.name == name for b in BUILTIN):
        raise ValueError(f"{name!r} is built in")
    _registry.pop(name, None)


def get(name: str) -> Strategy:
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; one of {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    """Registered strategy names, built-in ones first, in registration order."""
    return tuple(_registry)


def all_strategies() -> tuple[Strategy, ...]:
    return tuple(_registry.values())


def added() -> tuple[Strategy, ...]:
    """The strategies `register` added in this process (the evaluation worker registers the
    same ones: worker_main)."""
    builtin = {b.name for b in BUILTIN}
    return tuple(s for s in _registry.values() if s.name not in builtin)
