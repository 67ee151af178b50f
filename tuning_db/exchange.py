"""Export and import of tuned results: a versioned JSON format, validated field by field.

An import file is untrusted: every key must be known, every value of the right type and range,
every config a valid `Config`. One violation rejects the whole file with a message naming the
record and field. Strings from the file are data only; they never reach the OpenCL compiler.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from cltune.config import Config, ConfigError
from cltune.ops import DTYPES, OPS

FORMAT = "cltune-results"
VERSION = 1

_TEXT = re.compile(r"^[\x20-\x7e]{0,512}$")  # printable ASCII, bounded
_HEX = re.compile(r"^[0-9a-f]{16}$")
DEVICE_FIELDS = {
    "fingerprint": "hex", "hardware_key": "hex", "vendor": "text", "type": "text",
    "model": "text", "name": "text", "compute_units": "count", "local_mem": "count",
    "max_wg": "count", "platform": "text", "platform_version": "text", "driver": "text",
    "opencl_c": "text",
}
RECORD_FIELDS = {"device", "op", "dtype", "bucket", "config", "median_s", "gbps",
                 "max_rel_error", "n_measured", "cltune_version", "source_hash"}


class ImportError_(ValueError):
    """An import file that is rejected; the message says where and why."""


@dataclass(frozen=True)
class ExportRecord:
    device: dict
    op: str
    dtype: str
    bucket: int
    config: Config
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

    def as_row(self):  # noqa: ANN201 - a ResultRow
        from .store import ResultRow

        return ResultRow(0, self.device["fingerprint"], self.device["name"], self.op, self.dtype,
                         self.bucket, self.config.to_dict(), "ok", "", self.median_s, self.gbps,
                         self.max_rel_error, self.device["driver"], self.cltune_version, "",
                         False)

    def to_json(self) -> dict:
        return {"device": self.device, "op": self.op, "dtype": self.dtype,
                "bucket": self.bucket, "config": self.config.to_dict(),
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


def parse_record(r: object, where: str) -> ExportRecord:
    if not isinstance(r, dict):
        raise _fail(where, "expected an object")
    unknown = set(r) - RECORD_FIELDS
    missing = RECORD_FIELDS - set(r)
    if unknown:
        raise _fail(where, f"unknown keys {sorted(map(str, unknown))}")
    if missing:
        raise _fail(where, f"missing keys {sorted(missing)}")
    if r["op"] not in OPS:
        raise _fail(f"{where}.op", f"unknown op {r['op']!r:.60}")
    if r["dtype"] not in DTYPES:
        raise _fail(f"{where}.dtype", f"unknown dtype {r['dtype']!r:.60}")
    if not isinstance(r["config"], dict):
        raise _fail(f"{where}.config", "expected an object")
    try:
        cfg = Config.from_mapping(r["config"])
    except (ConfigError, TypeError) as e:
        raise _fail(f"{where}.config", str(e)) from None
    return ExportRecord(
        device=_device(r["device"], f"{where}.device"),
        op=r["op"], dtype=r["dtype"],
        bucket=int(_num(r["bucket"], f"{where}.bucket", lo=0, hi=40, integer=True)),
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
    if doc.get("version") != VERSION:
        raise ImportError_(f"top level: version {doc.get('version')!r:.40} is not supported "
                           f"(this cltune reads version {VERSION})")
    unknown = set(doc) - {"format", "version", "results", "exported_at"}
    if unknown:
        raise ImportError_(f"top level: unknown keys {sorted(map(str, unknown))}")
    results = doc.get("results")
    if not isinstance(results, list):
        raise ImportError_("top level: results must be a list")
    return [parse_record(r, f"results[{i}]") for i, r in enumerate(results)]
