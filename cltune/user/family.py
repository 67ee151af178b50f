"""An application's kernel as a family of the database (`kernel`): what the store, lookups,
`cltune show` and export/import need to know of it.

Variant `name@hash`: the kernel's name (at most 40 characters) and 16 hex digits of the hash
of its source, compiler options and defines (`source.kernel_hash`), so an edited kernel never
inherits another's results. Size class: the problem size, `4096x4096` (one to three
dimensions). A config is the tunable parameters' values by name (`KernelParams`): names are C
identifiers, values numbers, booleans or short tokens a `#define` can hold, checked before
anything read from a database or a file reaches the compiler.

    >>> variant_of("matmul_kernel@0123456789abcdef")
    ('matmul_kernel', '0123456789abcdef')
    >>> size_of("4096x4096")
    (4096, 4096)
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from cltune.core.config import ConfigError
from cltune.core.family import Family, reason_of

NAME = "kernel"
MAX_NAME = 40
_VARIANT = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,39})@([0-9a-f]{16})")
_SIZE = re.compile(r"[1-9][0-9]{0,9}(x[1-9][0-9]{0,9}){0,2}")
#: a parameter value given as text: a token a #define can hold (a type name, `float4`, a
#: number with a suffix, a small expression), never a newline, quote, brace or directive
_TOKEN = re.compile(r"[A-Za-z0-9_ .+\-*/()<>=!&|%^~,:?\[\]]{1,200}")
MAX_PARAMS = 64


class KernelConfigError(ConfigError):
    """A kernel's parameter set that may not reach the compiler."""


def check_value(name: str, v: object) -> object:
    """v if it may be `#define name v`; KernelConfigError naming the parameter otherwise."""
    if isinstance(v, bool) or (isinstance(v, int) and abs(v) < 1 << 63):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return v
    if isinstance(v, str) and _TOKEN.fullmatch(v) and "//" not in v and "/*" not in v:
        return v
    raise KernelConfigError(f"{name}: {v!r:.40} is not a number or a token a #define can hold")


class KernelParams:
    """A kernel's tunable parameters' values by name, validated (immutable, hashable)."""

    __slots__ = ("_items",)

    def __init__(self, m: Mapping[str, object]) -> None:
        if not isinstance(m, Mapping):
            raise KernelConfigError(f"config must be a mapping, got {type(m).__name__}")
        if len(m) > MAX_PARAMS:
            raise KernelConfigError(f"more than {MAX_PARAMS} parameters")
        items = []
        for k, v in m.items():
            if not (isinstance(k, str) and k.isidentifier() and k.isascii() and len(k) <= 64):
                raise KernelConfigError(f"parameter name {k!r:.40} is not a C identifier")
            items.append((k, check_value(k, v.item() if hasattr(v, "item") else v)))
        self._items = tuple(items)

    @classmethod
    def from_mapping(cls, m: Mapping[str, object]) -> KernelParams:
        return cls(m)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._items)

    def key(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def short(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self._items) or "(defaults)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelParams) and dict(self._items) == dict(other._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __repr__(self) -> str:
        return f"KernelParams({self.to_dict()!r})"


def variant(kernel_name: str, digest: str) -> str:
    return f"{kernel_name[:MAX_NAME]}@{digest[:16]}"


def variant_of(text: str) -> tuple[str, str]:
    """(kernel name, hash) of a variant; ValueError when the text is not `name@hash`."""
    m = _VARIANT.fullmatch(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"variant {text!r:.60} is not kernel_name@<16 hex digits>")
    return m.group(1), m.group(2)


def size_class(size: tuple[int, ...]) -> str:
    """The size class of a problem size: its dimensions (trailing 1s dropped) joined by x."""
    dims = list(size)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(int(d)) for d in dims)


def size_of(text: str) -> tuple[int, ...]:
    """The problem size of a size class; ValueError when the text is not one."""
    if not (isinstance(text, str) and _SIZE.fullmatch(text)):
        raise ValueError(f"size class {text!r:.60} is not a problem size like 4096x4096")
    return tuple(int(d) for d in text.split("x"))


FAMILY = Family(NAME, KernelParams.from_mapping, reason_of(variant_of), reason_of(size_of))
