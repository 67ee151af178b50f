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

import importlib
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
        one device (`factory(ctx, dev, info, variant, **options)`; see reduce/target.py).
    api: the module applications call (get_reducer's Reducer, ReductionKernel, ...); another
        family reaches it only through `entry(name, "api")`.
    untuned: `module:function(info, spec)` listing what the runtime serves untuned for an
        OpSpec (variant, config chain, size class, source hash, lane bytes), which the health
        check vets; "" for a family that serves nothing untuned for a plain op.
    """

    name: str
    parse_config: Callable[[Mapping[str, object]], Any]
    check_variant: Callable[[str], str]
    check_size_class: Callable[[str], str]
    kernel: str = ""
    interface: str = ""
    reference: str = ""
    target: str = ""
    api: str = ""
    untuned: str = ""


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


#: the built-in families: name -> the module whose `FAMILY` is its descriptor, imported on
#: first use (a lazy name -> module map, as Kernel Tuner's strategies: this registry imports
#: no family, so every family may import it, and adding a family is one line here)
BUILTIN = {
    "reduce": "cltune.families.reduce.family",
    "axis": "cltune.families.axis.family",
    "expr": "cltune.families.expr.family",
    "expr_axis": "cltune.families.expr_axis.family",
    "many": "cltune.families.many.family",
    "scan": "cltune.families.scan.family",
    "hist": "cltune.families.hist.family",
    "topk": "cltune.families.topk.family",
    "gscan": "cltune.families.scan.gscan_family",  # an application's GenericScanKernel
    "sort": "cltune.families.scan.sort_family",  # cltune.sort's radix passes
    "kernel": "cltune.user.family",  # an application's own kernels (cltune.tune_kernel)
}


def get(name: str) -> Family:
    if name not in _registry and name in BUILTIN:
        _registry.setdefault(name, importlib.import_module(BUILTIN[name]).FAMILY)
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown kernel family {name!r}; known: {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    return tuple(dict.fromkeys([*BUILTIN, *_registry]))


def entry(family: str, role: str) -> Any:
    """What the descriptor's `role` field names, imported: `module:name` (`target`) or a
    module (`api`)."""
    module, _, name = getattr(get(family), role).partition(":")
    mod = importlib.import_module(module)
    return getattr(mod, name) if name else mod
