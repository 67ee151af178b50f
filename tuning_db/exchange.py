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
        from .rows import ResultRow

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


def export_doc(store, fingerprints: set[str] | None = None) -> dict:  # noqa: ANN001 - Store
    """The bests of the database (or of some devices) as an export document."""
    from datetime import datetime, timezone

    from sqlalchemy import select

    from .models import Best, Device, Result

    out = []
    with store.session() as s:
        q = (select(Result, Device).join(Best, Best.result_id == Result.id)
             .join(Device, Device.id == Best.device_id).order_by(Device.fingerprint, Result.op,
                                                                   Result.dtype, Result.bucket))
        if fingerprints is not None:
            q = q.where(Device.fingerprint.in_(fingerprints))
        for r, d in s.execute(q):
            dev = {k: getattr(d, k) for k in DEVICE_FIELDS}
            rec = {"device": dev, "op": r.op, "dtype": r.dtype, "bucket": r.bucket,
                   "config": __import__("json").loads(r.config_json), "median_s": r.median_s,
                   "gbps": r.gbps, "max_rel_error": r.max_rel_error,
                   "n_measured": r.n_measured, "cltune_version": r.cltune_version,
                   "source_hash": r.source_hash}
            parse_record(rec, "export")  # what we write, we could read back
            out.append(rec)
    return {"format": FORMAT, "version": VERSION,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "results": out}


@dataclass(frozen=True)
class MergeReport:
    records: int
    devices_added: int
    results_added: int
    bests_changed: int


def merge(store, records: list[ExportRecord]) -> MergeReport:  # noqa: ANN001 - Store
    """Merge validated records in ONE transaction; per key the faster validated result wins.
    The vendor tally changes in the same transaction (tally.py). Records are applied in key
    order, so concurrent merges lock rows in one order; a transaction that loses a race for a
    first insert (or is chosen as a deadlock victim) is rolled back and run again."""
    from .store import _retry_on_conflict

    ordered = sorted(records, key=lambda r: (r.device["fingerprint"], r.op, r.dtype, r.bucket,
                                             r.config.key()))
    return _retry_on_conflict(lambda: _merge(store, ordered))


def _merge(store, records: list[ExportRecord]) -> MergeReport:  # noqa: ANN001 - Store
    import json

    from sqlalchemy import select

    from .models import Best, Device, Result, utcnow
    from .tally import TallyDeltas

    dev_added = res_added = best_changed = 0
    tally = TallyDeltas()
    with store.session() as s:
        for rec in records:
            d = rec.device
            dev = s.scalar(select(Device).where(Device.fingerprint == d["fingerprint"]))
            if dev is None:
                dev = Device(**d)
                s.add(dev)
                s.flush()
                dev_added += 1
            # locked in the order set_best() locks them (best, then results), so that no
            # result changes status between the checks below and the tally's update
            best = s.scalar(select(Best).where(Best.device_id == dev.id, Best.op == rec.op,
                                               Best.dtype == rec.dtype,
                                               Best.bucket == rec.bucket).with_for_update())
            key = rec.config.key()
            row = s.scalar(select(Result).where(
                Result.device_id == dev.id, Result.op == rec.op, Result.dtype == rec.dtype,
                Result.bucket == rec.bucket, Result.config_key == key).with_for_update())
            if row is None:
                row = Result(device_id=dev.id, op=rec.op, dtype=rec.dtype, bucket=rec.bucket,
                             config_key=key, config_json=json.dumps(rec.config.to_dict(),
                                                                    sort_keys=True),
                             status="ok", reason="", median_s=rec.median_s, gbps=rec.gbps,
                             max_rel_error=rec.max_rel_error, n_measured=rec.n_measured,
                             cltune_version=rec.cltune_version, source_hash=rec.source_hash,
                             stale=0)
                s.add(row)
                s.flush()
                res_added += 1
            elif row.status != "ok" or (row.median_s or 1e30) > rec.median_s:
                if row.status != "ok":
                    continue  # it failed here: a file never overrides our own failure
                row.median_s, row.gbps, row.updated_at = rec.median_s, rec.gbps, utcnow()
            if best is None:
                s.add(Best(device_id=dev.id, op=rec.op, dtype=rec.dtype, bucket=rec.bucket,
                           result_id=row.id))
                s.flush()  # a second record of this key in the file finds it
                tally.best(dev.vendor, dev.type, row, +1)
                best_changed += 1
            elif best.result_id != row.id:
                cur = s.scalar(select(Result).where(Result.id == best.result_id)
                               .with_for_update())
                if cur is None or cur.status != "ok" or (cur.median_s or 1e30) > row.median_s:
                    if cur is not None:
                        tally.best(dev.vendor, dev.type, cur, -1)
                    tally.best(dev.vendor, dev.type, row, +1)
                    best.result_id = row.id
                    best_changed += 1
        s.flush()
        tally.apply(s)
    return MergeReport(len(records), dev_added, res_added, best_changed)


def read_import_file(path: str) -> list[ExportRecord]:
    """Parse and validate a whole file; size-limited, JSON only."""
    import json
    from pathlib import Path

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
