"""What every config value type shares (`Config`, `AxisConfig`, `ExprConfig`,
`AxisExprConfig`): its field names, construction from a name -> value mapping (a database
row, an import file, Optuna's params: unknown or missing names are errors, and the values go
through the type's own checks), the mapping back, a stable key, and the type check of the
fields (an int field takes an int and not a bool, a str field a str).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class C(MappedConfig):
    ...     wg: int = 64
    >>> C.from_mapping({"wg": 128}).key() == C(128).key()
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="MappedConfig")


class ConfigError(ValueError):
    """A config value that is not allowed; the message names the field. Every family's config
    error is one (`AxisConfigError`, ...), so a caller catches them all with this one."""


class MappedConfig:
    """Mixin for frozen dataclasses of config fields; `error` is the type's ConfigError."""

    error: ClassVar[type[ValueError]] = ConfigError

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_mapping(cls: type[T], m: Mapping[str, object]) -> T:
        """Validate a name -> value mapping; unknown or missing names are errors."""
        if not isinstance(m, Mapping):
            raise cls.error(f"config must be a mapping, got {type(m).__name__}")
        names = set(cls.names())
        unknown = set(m) - names
        if unknown:
            shown = ", ".join(sorted(repr(str(u))[:40] for u in unknown))
            raise cls.error(f"unknown config field(s): {shown}")
        missing = names - set(m)
        if missing:
            raise cls.error(f"missing config field(s): {', '.join(sorted(missing))}")
        return cls(**{k: m[k] for k in cls.names()})  # type: ignore[call-arg]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    def key(self) -> str:
        """Stable short hash of the config, the cache and database key."""
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """The field types, then the type's own rules (`check`); raises `error` naming the
        field. Run on creation, and again where a config becomes build options."""
        self._check_types()
        self.check()

    def check(self) -> None:
        """The type's own rules on its fields (values, and how they couple)."""

    def _check_types(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            want = str if f.type in ("str", str) else int
            if type(v) is not want:  # bool is not int here, nor str a number
                raise self.error(f"{f.name}: expected {want.__name__}, got {v!r:.40}")
