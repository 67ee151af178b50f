"""The export/import file format: versioned JSON, parsed and validated field by field. Pure:
no database here (`Store.export_rows` gives the rows, `Store.merge` takes the records).

An import file is untrusted: every key must be known, every value of the right type and range,
every config valid for its kernel family. One violation rejects the whole file with a message
naming the record and field. Strings from the file are data only; they never reach the OpenCL
compiler.

Versions: 2 keys a record by kernel family, variant and size class (schema v4); version 1 files
(op, dtype, bucket: the 1-D reduction) still import, as family `reduce`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cltune.core.family import get as get_family
from cltune.core.ops import DTYPES, OPS

from .rows import ResultRow

FORMAT = "cltune-results"
VERSION = 2
READS = (1, 2)

_TEXT = re.compile(r"^[\x20-\x7e]{0,512}$")  # printable ASCII, bounded
_HEX = re.compile(r"^[0-9a-f]{16}$")
DEVICE_FIELDS = {
    "fingerprint": "hex", "hardware_key": "hex", "vendor": "text", "type": "text",
    "model": "text", "name": "text", "compute_units": "count", "local_mem": "count",
    "max_wg": "count", "platform": "text", "platform_version": "text", "driver": "text",
    "opencl_c": "text",
}
_MEASURED = {"config", "median_s", "gbps", "max_rel_error", "n_measured", "cltune_version",
             "source_hash", "device"}
RECORD_FIELDS = {2: _MEASURED | {"family", "variant", "size_class"},
                 1: _MEASURED | {"op", "dtype", "bucket"}}


class ImportError_(ValueError):
    """An import file that is rejected; the message says where and why."""


@dataclass(frozen=True)
class ExportRecord:
    device: dict
    family: str
    variant: str
    size_class: str
    config: object  # the family's validated config
    median_s: float
    gbps: float
    max_rel_error: float | None
    n_measured: int
    cltune_version: str
    source_hash: str

    @property
    def model(self) -> str:
        return self.device["model"]

    @property
    def vendor(self) -> str:
        return self.device["vendor"]

    @property
    def config_key(self) -> str:
        return self.config.key()

    def as_row(self) -> ResultRow:
        return ResultRow(0, self.device["fingerprint"], self.device["name"], self.family,
                         self.variant, self.size_class, self.config.to_dict(), "ok", "",
                         self.median_s, self.gbps, self.max_rel_error, self.device["driver"],
                         self.cltune_version, "", False)

    def to_json(self) -> dict:
        return {"device": self.device, "family": self.family, "variant": self.variant,
                "size_class": self.size_class, "config": self.config.to_dict(),
                "median_s": self.median_s, "gbps": self.gbps,
                "max_rel_error": self.max_rel_error, "n_measured": self.n_measured,
                "cltune_version": self.cltune_version, "source_hash": self.source_hash}


def _fail(where: str, msg: str) -> ImportError_:
    return ImportError_(f"{where}: {msg}")


def _num(v: object, where: str, *, lo: float, hi: float, integer: bool = False,
         optional: bool = False) -> float | int | None:
    if v is None and optional:
        return None
    ok_types = (int,) if integer else (int, float)
    if isinstance(v, bool) or not isinstance(v, ok_types):
        raise _fail(where, f"expected a {'integer' if integer else 'number'}, got {v!r:.60}")
    if isinstance(v, int) and not lo <= v <= hi:  # before float(): huge ints overflow it
        raise _fail(where, f"{str(v)[:40]} outside {lo}..{hi}")
    if not (math.isfinite(v) and lo <= v <= hi):
        raise _fail(where, f"{v!r:.60} outside {lo}..{hi}")
    return v


def _text(v: object, where: str, kind: str) -> str:
    if not isinstance(v, str):
        raise _fail(where, f"expected a string, got {v!r:.60}")
    if not (_HEX if kind == "hex" else _TEXT).match(v):
        raise _fail(where, "not a valid " + ("16-digit hex key" if kind == "hex"
                                             else "printable string of at most 512 characters"))
    return v


def _device(d: object, where: str) -> dict:
    if not isinstance(d, dict):
        raise _fail(where, "expected an object")
    unknown = set(d) - set(DEVICE_FIELDS)
    missing = set(DEVICE_FIELDS) - set(d)
    if unknown or missing:
        raise _fail(where, f"unknown keys {sorted(unknown)}" if unknown
                    else f"missing keys {sorted(missing)}")
    out: dict = {}
    for k, kind in DEVICE_FIELDS.items():
        w = f"{where}.{k}"
        if kind == "count":
            out[k] = _num(d[k], w, lo=1, hi=2**48, integer=True)
        else:
            out[k] = _text(d[k], w, kind)
    return out


def _key_v1(r: dict, where: str) -> tuple[str, str, str]:
    """A version-1 record's op, dtype and bucket as the `reduce` family's key."""
    if r["op"] not in OPS:
        raise _fail(f"{where}.op", f"unknown op {r['op']!r:.60}")
    if r["dtype"] not in DTYPES:
        raise _fail(f"{where}.dtype", f"unknown dtype {r['dtype']!r:.60}")
    bucket = int(_num(r["bucket"], f"{where}.bucket", lo=0, hi=40, integer=True))
    return "reduce", f"{r['op']}/{r['dtype']}", f"2^{bucket}"


def _key_v2(r: dict, where: str) -> tuple[str, str, str]:
    name = _text(r["family"], f"{where}.family", "text")
    try:
        fam = get_family(name)
    except KeyError as e:
        raise _fail(f"{where}.family", str(e.args[0])) from None
    variant = _text(r["variant"], f"{where}.variant", "text")
    why = fam.check_variant(variant)
    if why:
        raise _fail(f"{where}.variant", why)
    size = _text(r["size_class"], f"{where}.size_class", "text")
    why = fam.check_size_class(size)
    if why:
        raise _fail(f"{where}.size_class", why)
    return name, variant, size


def parse_record(r: object, where: str, version: int = VERSION) -> ExportRecord:
    if not isinstance(r, dict):
        raise _fail(where, "expected an object")
    fields = RECORD_FIELDS[version]
    unknown = set(r) - fields
    missing = fields - set(r)
    if unknown:
        raise _fail(where, f"unknown keys {sorted(map(str, unknown))}")
    if missing:
        raise _fail(where, f"missing keys {sorted(missing)}")
    fam_name, variant, size = (_key_v1 if version == 1 else _key_v2)(r, where)
    if not isinstance(r["config"], dict):
        raise _fail(f"{where}.config", "expected an object")
    try:
        cfg = get_family(fam_name).parse_config(r["config"])
    except (ValueError, TypeError) as e:
        raise _fail(f"{where}.config", str(e)) from None
    return ExportRecord(
        device=_device(r["device"], f"{where}.device"),
        family=fam_name, variant=variant, size_class=size,
        config=cfg,
        median_s=float(_num(r["median_s"], f"{where}.median_s", lo=1e-12, hi=3600)),
        gbps=float(_num(r["gbps"], f"{where}.gbps", lo=0, hi=1e6)),
        max_rel_error=_num(r["max_rel_error"], f"{where}.max_rel_error", lo=0, hi=1,
                           optional=True),
        n_measured=int(_num(r["n_measured"], f"{where}.n_measured", lo=1, hi=2**48,
                            integer=True)),
        cltune_version=_text(r["cltune_version"], f"{where}.cltune_version", "text"),
        source_hash=_text(r["source_hash"], f"{where}.source_hash", "hex"),
    )


def parse_export(doc: object) -> list[ExportRecord]:
    """Validate a whole export document; raises ImportError_ on the first violation."""
    if not isinstance(doc, dict):
        raise ImportError_("top level: expected an object")
    if doc.get("format") != FORMAT:
        raise ImportError_(f"top level: format must be {FORMAT!r}")
    version = doc.get("version")
    if isinstance(version, bool) or version not in READS:
        raise ImportError_(f"top level: version {version!r:.40} is not supported "
                           f"(this cltune reads versions {', '.join(map(str, READS))})")
    unknown = set(doc) - {"format", "version", "results", "exported_at"}
    if unknown:
        raise ImportError_(f"top level: unknown keys {sorted(map(str, unknown))}")
    results = doc.get("results")
    if not isinstance(results, list):
        raise ImportError_("top level: results must be a list")
    return [parse_record(r, f"results[{i}]", version) for i, r in enumerate(results)]


def export_doc(rows: list[tuple[dict, ResultRow, int, str]]) -> dict:
    """An export document of `Store.export_rows()`: every record validated as it is written
    (what we write, we can read back)."""
    out = []
    for dev, r, n_measured, source_hash in rows:
        rec = {"device": {k: dev[k] for k in DEVICE_FIELDS}, "family": r.family,
               "variant": r.variant, "size_class": r.size_class, "config": r.config,
               "median_s": r.median_s, "gbps": r.gbps, "max_rel_error": r.max_rel_error,
               "n_measured": n_measured, "cltune_version": r.cltune_version,
               "source_hash": source_hash}
        parse_record(rec, "export")
        out.append(rec)
    return {"format": FORMAT, "version": VERSION,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "results": out}


def read_import_file(path: str) -> list[ExportRecord]:
    """Parse and validate a whole file; size-limited, JSON only."""
    p = Path(path)
    if not p.is_file():
        raise ImportError_(f"{path}: no such file")
    if p.stat().st_size > 64 * 2**20:
        raise ImportError_(f"{path}: larger than 64 MiB; refusing to read it")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ImportError_(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise ImportError_(f"{path}: JSON nested too deeply") from None
    return parse_export(doc)
