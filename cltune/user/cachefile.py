"""Kernel Tuner's cache files, read and written as Kernel Tuner 1.4 does, so that a rerun
re-measures nothing and a file either tool wrote serves the other.

The file is a JSON object written as it goes: the header (device name, kernel name, problem
size, the parameters' names and values, the objective) with an open `"cache": {`, then one
line `"key": {...},` per evaluated config (the key: the values in the parameters' order joined
by commas), and `}\\n}` once the run ends. A file cut off mid-run (a killed process) is read as
if it were closed, and appended to. A failed config is stored with `"__error__"` (its Kernel
Tuner class name: `CompilationFailedConfig`, `RuntimeFailedConfig`, `InvalidConfig`); files of
Kernel Tuner 1.3 (the error in `"time"`) read the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ERRORS = ("ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")


class CacheFileError(ValueError):
    """A cache file that belongs to another device, kernel, problem or space, or is not one."""


class _Encoder(json.JSONEncoder):
    def default(self, o: Any) -> Any:  # noqa: ANN401 - json's protocol
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
        return super().default(o)


def path_of(cache: str | Path) -> Path:
    p = Path(cache).expanduser().resolve()
    return p if p.suffix == ".json" else p.with_name(p.name + ".json")


def _closed(text: str) -> str:
    """The file's text as a complete JSON document (a file cut off mid-run closed)."""
    t = text.strip()
    if t and t[-3:] not in ("}\n}", "}}}"):
        if t.endswith(","):
            t = t[:-1]
        t += "}\n}"
    return t


def read(path: Path) -> dict:
    try:
        data = json.loads(_closed(path.read_text()))
    except (OSError, ValueError) as e:
        raise CacheFileError(f"cache file {str(path)!r:.200} is not a Kernel Tuner cache file: "
                             f"{e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cache"), dict):
        raise CacheFileError(f"cache file {str(path)!r:.200} has no \"cache\" object")
    for entry in data["cache"].values():
        if isinstance(entry, dict):
            for k in ("__error__", "time"):
                if entry.get(k) in ERRORS:
                    entry["__error__"] = entry[k]
    return data


class CacheFile:
    """An open cache file: `entries` (key -> stored result), `add` appends one, `close` ends
    the document."""

    def __init__(self, cache: str | Path, *, device_name: str, kernel_name: str,
                 problem_size: Any, tune_params: Mapping[str, Sequence[object]],  # noqa: ANN401
                 objective: str, simulation: bool = False) -> None:
        self.path = path_of(cache)
        self.entries: dict[str, dict] = {}
        names = list(tune_params)
        if self.path.exists() and self.path.stat().st_size:
            data = read(self.path)
            _check_header(self.path, data, device_name, kernel_name, problem_size, names,
                          simulation)
            self.entries = {k: v for k, v in data["cache"].items() if isinstance(v, dict)}
            if not simulation:
                t = self.path.read_text().strip()
                if t[-3:] in ("}\n}", "}}}"):  # closed: opened again for appending
                    t = t[:-3].rstrip()
                    self.path.write_text(t + ("" if t.endswith("{") else ","))
        elif simulation:
            raise ValueError(f"Simulation mode requires an existing cachefile: file "
                             f"{self.path} does not exist")
        else:
            head = {"device_name": device_name, "kernel_name": kernel_name,
                    "problem_size": problem_size if not callable(problem_size) else "callable",
                    "tune_params_keys": names, "tune_params": dict(tune_params),
                    "objective": [objective], "cache": {}}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(head, cls=_Encoder, indent="")[:-3])
        self.simulation = simulation

    def add(self, key: str, entry: Mapping[str, object]) -> None:
        if self.simulation or key in self.entries:
            return
        self.entries[key] = dict(entry)
        line = json.dumps({key: entry}, cls=_Encoder)[1:-1]
        with self.path.open("a") as f:
            f.write("\n" + line + ",")
            f.flush()

    def close(self) -> None:
        if self.simulation:
            return
        t = self.path.read_text()
        if t.endswith(","):
            self.path.write_text(t[:-1] + "}\n}")


def _check_header(path: Path, data: dict, device_name: str, kernel_name: str,
                  problem_size: Any, names: list[str], simulation: bool) -> None:  # noqa: ANN401
    if not simulation and data.get("device_name") != device_name:
        raise CacheFileError(f"Cannot load cache which contains results for different device "
                             f"(cache: {data.get('device_name')}, actual: {device_name})")
    if data.get("kernel_name") != kernel_name:
        raise CacheFileError(f"Cannot load cache which contains results for different kernel "
                             f"(cache: {data.get('kernel_name')}, actual: {kernel_name})")
    if "problem_size" in data and not callable(problem_size):
        a, b = np.atleast_1d(np.array(data["problem_size"], dtype=object)), \
            np.atleast_1d(np.array(problem_size, dtype=object))
        if a.shape != b.shape or not all(str(x) == str(y) for x, y in zip(a, b, strict=False)):
            raise CacheFileError(f"Cannot load cache which contains results for different "
                                 f"problem_size, cache: {data['problem_size']}, requested: "
                                 f"{problem_size}")
    have = data.get("tune_params_keys")
    if have != names:
        if isinstance(have, list) and sorted(map(str, have)) == sorted(names):
            raise CacheFileError("All tunable parameters are present, but the order is wrong. "
                                 f"Cache has: {have}, tuning_options has: {names}")
        raise CacheFileError(f"Cannot load cache which contains results obtained with different "
                             f"tunable parameters. Cache at '{path}' has: {have}, "
                             f"tuning_options has: {names}")
