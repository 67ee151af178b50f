"""Kernel families as descriptors: what the database, export files and lookups need to know
about a family, as values (no OpenCL here).

A family (the 1-D reduction `reduce`; next: axis/segmented reductions, custom expressions)
names its results by a *variant* (for `reduce`: `op/dtype`) and a *size class* (for `reduce`:
`2^k`), and validates its configs. The store, the lookup chain, shipped results and
export/import key and check everything through this descriptor, so they know no family's
internals; the OpenCL side of a family (kernels/*.cl, its interface module, strategies,
reference and error bound) is named by `kernel`, `interface` and `reference`.

    >>> from cltune.core.family import get
    >>> r = get("reduce")
    >>> r.check_variant("sum/float32"), r.check_size_class("2^20")
    ('', '')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    """One kernel family.

    name: its key in databases and export files (`reduce`).
    parse_config: a stored/imported name -> value mapping to a validated config object (with
        `key()`, `to_dict()` and `short()`); raises ValueError naming the field.
    check_variant / check_size_class: '' when the text names one of the family's variants /
        size classes, else why not (text from files is checked before it is used).
    kernel: its OpenCL C file in kernels/; interface: the module with its build defines and
        argument slots; reference: the module with its host reference and error bound.
    target: `module:factory` of what the tuner and `cltune verify` drive for one variant on
        one device (`factory(ctx, dev, info, variant, **options)`; see reduce_target.py).
    """

    name: str
    parse_config: Callable[[Mapping[str, object]], Any]
    check_variant: Callable[[str], str]
    check_size_class: Callable[[str], str]
    kernel: str = ""
    interface: str = ""
    reference: str = ""
    target: str = ""


_registry: dict[str, Family] = {}


def reason_of(parse: Callable[[str], object]) -> Callable[[str], str]:
    """A descriptor's `check_*` from a parser: '' when `parse(text)` accepts the text, else
    the ValueError's message (why it is refused)."""
    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as e:
            return str(e)
        return ""

    return check


def register(f: Family) -> Family:
    if f.name in _registry:
        raise ValueError(f"family {f.name!r} is already registered")
    if not (f.name.isidentifier() and len(f.name) <= 32):
        raise ValueError(f"family name {f.name!r} must be an identifier of <= 32 characters")
    _registry[f.name] = f
    return f


def get(name: str) -> Family:
    _builtin()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown kernel family {name!r}; known: {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    _builtin()
    return tuple(_registry)


def _builtin() -> None:
    if "reduce" not in _registry:
        from cltune.families.reduce.family import REDUCE

        _registry.setdefault("reduce", REDUCE)
    if "axis" not in _registry:
        from cltune.families.axis.family import AXIS

        _registry.setdefault("axis", AXIS)
    if "expr" not in _registry:
        from cltune.families.expr.family import EXPR

        _registry.setdefault("expr", EXPR)
    if "expr_axis" not in _registry:
        from cltune.families.expr_axis.family import EXPR_AXIS

        _registry.setdefault("expr_axis", EXPR_AXIS)
