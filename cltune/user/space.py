"""The search space of an application's kernel as Kernel Tuner makes it: every combination of
the tunable parameters' values (the first parameter varying slowest), less those a restriction
refuses and those whose work-group (the default block size names' product) is larger than the
device allows.

`restrictions` may be a string or a list of strings (Python expressions of the parameters), a
function of the params dict, a function of the values in the parameters' order, `(function,
[names])`, or a list mixing them; a division by zero in a string lets the config pass, as
Kernel Tuner's checks do.

    >>> s = Space({"block_size_x": [32, 64, 128], "tile": [1, 2]}, ["block_size_x*tile <= 128"],
    ...           max_threads=64)
    >>> [(c["block_size_x"], c["tile"]) for c in s.configs]
    [(32, 1), (32, 2), (64, 1), (64, 2)]
    >>> s.removed_by_threads
    2
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cltune.user.grid import BUILTINS
from cltune.user.source import DEFAULT_BLOCK_NAMES, KernelSourceError

#: larger products of values are refused (enumerating them would take minutes)
MAX_POINTS = 5_000_000
FORBIDDEN = ("grid_size_x", "grid_size_y", "grid_size_z", "time")


def check_tune_params(tune_params: Mapping[str, Sequence[object]]) -> dict[str, list]:
    """tune_params as an ordered dict of non-empty value lists; one clear error otherwise."""
    if not isinstance(tune_params, Mapping) or not tune_params:
        raise ValueError("tune_params must be a dict of parameter name -> list of values")
    out: dict[str, list] = {}
    for k, v in tune_params.items():
        if not (isinstance(k, str) and k.isidentifier()):
            raise ValueError(f"tune parameter name {k!r:.40} is not an identifier")
        if k in FORBIDDEN:
            raise ValueError(f"Tune parameter {k} with value {v!r:.40} has a forbidden name!")
        if isinstance(v, (str, bytes)) or not isinstance(v, (Sequence, range)) and not hasattr(
                v, "tolist"):
            raise ValueError(f"tune parameter {k}: its values must be a list")
        vals = list(v.tolist() if hasattr(v, "tolist") else v)
        if not vals:
            raise ValueError(f"tune parameter {k} has no values")
        out[k] = vals
    return out


class _Rule:
    """One restriction, called with a config's params dict: True keeps it."""

    def __init__(self, r: Any, names: Sequence[str]) -> None:  # noqa: ANN401
        self.text = ""
        self.fn: Callable[[dict], bool]
        if isinstance(r, str):
            self.text = r
            try:
                code = compile(r, "<restriction>", "eval")
            except SyntaxError as e:
                raise KernelSourceError(f"restriction {r!r:.80} is not a Python expression: "
                                        f"{e.msg}") from None
            unknown = [n for n in code.co_names if n not in names and n not in BUILTINS]
            if unknown:
                raise KernelSourceError(f"restriction {r!r:.80} names {unknown[0]!r}, which is "
                                        f"not a tunable parameter")
            g = {"__builtins__": BUILTINS}

            def by_text(p: dict) -> bool:
                try:
                    return bool(eval(code, g, p))  # noqa: S307 - the application's own text
                except ZeroDivisionError:
                    return True
            self.fn = by_text
        elif isinstance(r, tuple) and len(r) == 2 and callable(r[0]):
            f, args = r
            self.fn = lambda p: bool(f(*(p[a] for a in args)))
        elif callable(r):
            nparams = _arity(r)
            if nparams == 1 and (len(names) > 1 or getattr(r, "__name__", "") == "<lambda>"):
                self.fn = lambda p: bool(r(p))
            else:
                self.fn = lambda p: bool(r(*(p[n] for n in names)))
        else:
            raise KernelSourceError(f"restriction {r!r:.60} is not a string, a function or "
                                    f"(function, [names])")

    def __call__(self, p: dict) -> bool:
        return self.fn(p)


def _arity(f: Callable) -> int:
    try:
        return len(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return 1


def rules_of(restrictions: Any, names: Sequence[str]) -> list[_Rule]:  # noqa: ANN401
    if restrictions is None:
        return []
    if isinstance(restrictions, (str, tuple)) or callable(restrictions):
        restrictions = [restrictions]
    return [_Rule(r, names) for r in restrictions]


class Space:
    """The configs that pass every restriction and the work-group limit, in Kernel Tuner's
    order (`configs`, dicts); `index` finds one by its values."""

    def __init__(self, tune_params: Mapping[str, Sequence[object]], restrictions: Any = None,  # noqa: ANN401
                 max_threads: int | None = None) -> None:
        self.tune_params = check_tune_params(tune_params)
        names = list(self.tune_params)
        self.names = names
        total = 1
        for v in self.tune_params.values():
            total *= len(v)
        if total > MAX_POINTS:
            raise ValueError(f"the tunable parameters make {total} combinations (cltune "
                             f"enumerates at most {MAX_POINTS}); restrict their values")
        rules = rules_of(restrictions, names)
        threads = [n for n in DEFAULT_BLOCK_NAMES if n in self.tune_params]
        self.removed_by_threads = 0
        self.removed_by_rules = 0
        self.configs: list[dict] = []
        for values in itertools.product(*self.tune_params.values()):
            p = dict(zip(names, values, strict=False))
            if max_threads is not None and threads:
                prod = 1
                for n in threads:
                    prod *= int(p[n])
                if prod > max_threads:
                    self.removed_by_threads += 1
                    continue
            if not all(r(p) for r in rules):
                self.removed_by_rules += 1
                continue
            self.configs.append(p)
        self._index = {self.key(c): i for i, c in enumerate(self.configs)}

    def __len__(self) -> int:
        return len(self.configs)

    def key(self, p: Mapping[str, object]) -> str:
        """Kernel Tuner's cache key: the values in the parameters' order, joined by commas."""
        return ",".join(str(p[n]) for n in self.names)

    def index(self, p: Mapping[str, object]) -> int | None:
        return self._index.get(self.key(p))
