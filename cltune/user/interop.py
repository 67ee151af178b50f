"""Kernel Tuner's files and cltune's database: a Kernel Tuner cache file read as results of
this machine's device (`cltune import FILE --kernel-source K.cl`), and the database's best
configs of an application kernel written as Kernel Tuner's `store_results` file (`cltune export
--format kernel-tuner --kernel NAME`), which Kernel Tuner's `PythonKernel(results_file=...)`
and `create_device_targets` read.

A cache file does not hold the kernel's source, which names the kernel in the database
(`name@hash`), so the import asks for it (and for the compiler options the cache was made
with). Of each problem size, the fastest config that ran becomes the stored best; failed
entries are not imported. Every record goes through the same validation as cltune's own
export files (`tuning_db.exchange.parse_record`: the parameters checked by the `kernel`
family), so nothing in the file reaches a compiler unchecked. Imported rows are marked
(`cltune_version` `kernel-tuner-cache`): `PythonKernel` runs such a config once in the
evaluation worker before it builds it, since cltune never ran it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cltune.device.info import DeviceInfo
from cltune.tuning_db.exchange import DEVICE_FIELDS, ImportError_, parse_record
from cltune.user import cachefile, family, grid, source

IMPORTED = "kernel-tuner-cache"


def is_cache_file(path: str | Path) -> bool:
    """Whether a file looks like a Kernel Tuner cache file (not cltune's export format)."""
    try:
        head = Path(path).read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False
    return '"tune_params_keys"' in head and '"kernel_name"' in head


def device_record(info: DeviceInfo) -> dict:
    d = {"fingerprint": info.fingerprint, "hardware_key": info.hardware_key,
         "vendor": info.vendor, "type": info.type, "model": info.model, "name": info.name,
         "compute_units": info.compute_units, "local_mem": info.local_mem,
         "max_wg": info.max_wg, "platform": info.platform,
         "platform_version": info.platform_version, "driver": info.driver,
         "opencl_c": info.opencl_c}
    return {k: d[k] for k in DEVICE_FIELDS}


def records_from_cache(path: str | Path, kernel_source: str | Path, info: DeviceInfo,
                       compiler_options: Sequence[str] = (), data: dict | None = None) -> list:
    """The best config per problem size of a Kernel Tuner cache file (`data`: its contents,
    when the caller read it already), as validated import records of `info`'s device
    (ImportError_ naming what is wrong)."""
    data = data if data is not None else cachefile.read(Path(path))
    name = data.get("kernel_name")
    if not (isinstance(name, str) and name.isidentifier()):
        raise ImportError_(f"{path}: kernel_name {name!r:.60} is not a kernel's name")
    keys = data.get("tune_params_keys")
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise ImportError_(f"{path}: tune_params_keys is not a list of names")
    src = source.read_source(Path(kernel_source))
    if not re.search(r"__kernel\s+void\s+" + re.escape(name) + r"\s*\(", src.text):
        raise ImportError_(f"{kernel_source}: has no __kernel void {name}(...)")
    variant = family.variant(name, src.digest(name, list(compiler_options), None))
    best: dict[str, tuple[float, dict]] = {}
    for key, entry in data["cache"].items():
        where = f"{path}: cache[{key!r:.40}]"
        if not isinstance(entry, dict) or "__error__" in entry:
            continue
        t = entry.get("time")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) \
                or t <= 0:
            continue
        try:
            params = {k: entry[k] for k in keys}
        except KeyError as e:
            raise ImportError_(f"{where}: no value of {e.args[0]!r:.40}") from None
        try:
            size = family.size_class(grid.problem_dims(data.get("problem_size"), params))
        except (TypeError, ValueError) as e:
            raise ImportError_(f"{where}: problem_size {data.get('problem_size')!r:.60}: "
                               f"{e}") from None
        if size not in best or t < best[size][0]:
            best[size] = (float(t), params)
    out = []
    for size, (t, params) in sorted(best.items()):
        rec = {"device": device_record(info), "family": family.NAME, "variant": variant,
               "size_class": size, "config": params, "median_s": t * 1e-3, "gbps": 0.0,
               "max_rel_error": None, "n_measured": 1, "cltune_version": IMPORTED,
               "source_hash": src.digest(name, list(compiler_options), None)}
        out.append(parse_record(rec, f"{path}: problem size {size}"))
    if not out:
        raise ImportError_(f"{path}: no config that ran (every entry failed or is empty)")
    return out


def store_results_doc(rows: Sequence[Any], kernel_name: str) -> dict:  # noqa: ANN401
    """Kernel Tuner's `store_results` document of the best rows of one kernel (objective
    time, in ms)."""
    names: list[str] = []
    data = []
    for r in rows:
        for k in r.config:
            if k not in names:
                names.append(k)
        data.append({"device_name": re.sub("[^0-9a-zA-Z]+", "_", r.device_name.strip()),
                     "problem_size": r.size_class, "tunable_parameters": dict(r.config),
                     "time": r.median_s * 1e3})
    return {"version_number": "1.0", "kernel_name": kernel_name, "kernel_string": "",
            "objective": "time", "objective_higher_is_better": False,
            "tunable_parameters": names, "data": data}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent="")
