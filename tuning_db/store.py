"""The tuning database as a library: record evaluated configs, choose bests, merge imports,
summarise. The only writer of the database and the only module with SQL (with its helpers
tally.py and merge.py, which run inside its transactions).

Every write is one short transaction. Results are keyed by (device, family, variant, size
class, config): recording the same key twice keeps one row (the better validated one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from .engine import default_url, make_engine, normalise_url, sqlite_path
from .errors import DatabaseError
from .merge import MergeReport, merge_records
from .migrations import check_readable, ensure_schema
from .models import Best, Device, Result, utcnow
from .rows import Measurement, ResultRow
from .tally import TallyDeltas, rebuild


def row_of(r: Result, d: Device) -> ResultRow:
    """A result and its device as plain data."""
    return ResultRow(r.id, d.fingerprint, d.name, r.family, r.variant, r.size_class,
                     json.loads(r.config_json), r.status, r.reason or "", r.median_s, r.gbps,
                     r.max_rel_error, d.driver, r.cltune_version,
                     r.updated_at.isoformat(timespec="seconds") if r.updated_at else "",
                     bool(r.stale))


if TYPE_CHECKING:
    from .exchange import ExportRecord

#: the device columns an export carries (the fingerprint's parts plus keys and name)
DEVICE_COLUMNS = ("fingerprint", "hardware_key", "vendor", "type", "model", "name",
                  "compute_units", "local_mem", "max_wg", "platform", "platform_version",
                  "driver", "opencl_c")


def _measured(m: Measurement) -> dict[str, object]:
    return {"status": m.status, "reason": m.reason, "median_s": m.median_s, "gbps": m.gbps,
            "max_rel_error": m.max_rel_error, "n_measured": m.n_measured,
            "cltune_version": m.cltune_version, "source_hash": m.source_hash}


#: how long a read-only open retries a transient refusal (another process checkpointing or
#: recovering the WAL) before judging the file unreadable
RO_RETRY_S = 2.0


def _readable_sqlite(engine: Engine, url: str, path: Path) -> Engine:
    """`engine` (SQLite, `mode=ro`) once it reads. While SQLite refuses with a lock (another
    connection checkpointing or recovering the WAL) it is retried for RO_RETRY_S. Where it
    still cannot read (a read-only directory: no WAL index can be made there), an `immutable`
    engine, but only while no write-ahead log holds data: immutable reads skip the WAL and
    its locks, so with a log that holds rows they would miss the newest results (a tuned
    class served as untuned). Errors other than refusals are left to the caller's check (its
    usual message)."""
    deadline = time.monotonic() + RO_RETRY_S
    pause = 0.01
    while True:
        try:
            with engine.connect() as conn:
                check_readable(conn)
            return engine
        except OperationalError as e:
            err = e
        except (DatabaseError, SQLAlchemyError):
            return engine  # reported by the caller with the usual message
        transient = any(w in str(err.orig).lower() for w in ("locked", "busy"))
        if not transient or time.monotonic() > deadline:
            break
        time.sleep(pause)
        pause = min(0.2, pause * 2)
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        engine.dispose()
        raise DatabaseError(f"cannot read {path} ({_short(err)}) and its write-ahead log "
                            f"{wal.name} holds results not yet in the file: open it once "
                            "where its directory is writable (any cltune command that "
                            "writes, e.g. `cltune migrate`), then read it here")
    engine.dispose()  # e.g. a read-only directory: no -shm can be made, the file is whole
    return make_engine(url, readonly=True, immutable=True)


class Store:
    """A tuning database. `Store.open(url)` creates/migrates; `readonly=True` never writes."""

    def __init__(self, engine: Engine, url: str, readonly: bool) -> None:
        self.engine, self.url, self.readonly = engine, url, readonly

    @classmethod
    def open(cls, url: str | None = None, *, readonly: bool = False) -> Store:
        url = normalise_url(url or default_url())
        engine = make_engine(url, readonly=readonly)
        path = sqlite_path(url)
        if readonly and path is not None:
            engine = _readable_sqlite(engine, url, path)
        try:
            if readonly:
                with engine.connect() as conn:
                    check_readable(conn)
            else:
                ensure_schema(engine)
        except DatabaseError:
            engine.dispose()
            raise
        except SQLAlchemyError as e:
            engine.dispose()
            raise DatabaseError(f"cannot use database {safe_url(url)}: {_short(e)}") from None
        return cls(engine, url, readonly)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: commit on success, roll back and wrap errors otherwise."""
        with Session(self.engine, expire_on_commit=False) as s:
            try:
                yield s
                s.commit()
            except DatabaseError:
                s.rollback()
                raise
            except IntegrityError:
                s.rollback()
                raise  # a concurrent first insert of the same key: the caller retries
            except OperationalError as e:
                s.rollback()
                if _transient(e):
                    raise _Transient(_short(e)) from None  # deadlock victim: the caller retries
                raise DatabaseError(f"database error on {safe_url(self.url)}: {_short(e)}"
                                    ) from None
            except SQLAlchemyError as e:
                s.rollback()
                raise DatabaseError(f"database error on {safe_url(self.url)}: {_short(e)}"
                                    ) from None

    # ---- writes -----------------------------------------------------------------------------
    def upsert_device(self, parts: dict[str, object], fingerprint: str, hardware_key: str,
                      name: str) -> int:
        return retry_on_conflict(lambda: self._upsert_device(parts, fingerprint, hardware_key,
                                                              name))

    def _upsert_device(self, parts: dict[str, object], fingerprint: str, hardware_key: str,
                       name: str) -> int:
        with self.session() as s:
            dev = s.scalar(select(Device).where(Device.fingerprint == fingerprint))
            if dev is None:
                dev = Device(fingerprint=fingerprint, hardware_key=hardware_key, name=name,
                             **{k: parts[k] for k in (
                                 "vendor", "type", "model", "compute_units", "local_mem",
                                 "max_wg", "platform", "platform_version", "driver",
                                 "opencl_c")})
                s.add(dev)
                s.flush()
            return dev.id

    def record(self, device_id: int, m: Measurement, *, force: bool = False) -> int:
        """Insert or update the row of m's key; an ok result is never replaced by a slower or
        failed one from the same kernel source, unless `force` (a re-measurement). Retried
        on a concurrent first insert of the same key."""
        return retry_on_conflict(lambda: self._record(device_id, m, force))

    def _record(self, device_id: int, m: Measurement, force: bool) -> int:
        with self.session() as s:
            # FOR UPDATE: a concurrent writer of this key waits (PostgreSQL; SQLite's writes
            # are already serialised by BEGIN IMMEDIATE), so no faster result is lost
            row = s.scalar(select(Result).where(
                Result.device_id == device_id, Result.family == m.family,
                Result.variant == m.variant, Result.size_class == m.size_class,
                Result.config_key == m.config_key).with_for_update())
            old_status = None if row is None else row.status
            if row is None:
                row = Result(device_id=device_id, family=m.family, variant=m.variant,
                             size_class=m.size_class, config_key=m.config_key,
                             config_json=json.dumps(m.config, sort_keys=True), stale=0,
                             **_measured(m))
                s.add(row)
            else:
                keep_old = not force and (row.status == "ok" and row.source_hash == m.source_hash
                                          and (m.status != "ok"
                                               or (row.median_s or 0) <= (m.median_s or 0)))
                if not keep_old:
                    for k, v in _measured(m).items():
                        setattr(row, k, v)
                    row.stale, row.updated_at = 0, utcnow()
            s.flush()
            tally = TallyDeltas()
            tally.status_change(s, row, old_status, row.status)
            tally.apply(s)
            return row.id

    def set_best(self, device_id: int, result_id: int) -> None:
        """Make a validated result the best of its (device, family, variant, size class)."""
        retry_on_conflict(lambda: self._set_best(device_id, result_id))

    def _set_best(self, device_id: int, result_id: int) -> None:
        with self.session() as s:
            # the key only (plain columns: no Result object enters the session before it is
            # locked below, so the locked read is not served stale from the identity map)
            key = s.execute(select(Result.device_id, Result.family, Result.variant,
                                   Result.size_class).where(Result.id == result_id)).first()
            if key is None:
                raise DatabaseError("only a validated (ok) result can become a best")
            if key.device_id != device_id:
                raise DatabaseError(f"result {result_id} belongs to another device")
            b = s.scalar(select(Best).where(
                Best.device_id == device_id, Best.family == key.family,
                Best.variant == key.variant, Best.size_class == key.size_class)
                .with_for_update())
            # the new and the old result are locked (in id order) as record() locks them, so
            # neither changes status between the check below and the tally's update
            ids = {result_id} | ({b.result_id} if b is not None else set())
            locked = {r.id: r for r in s.scalars(
                select(Result).where(Result.id.in_(ids)).order_by(Result.id)
                .with_for_update().execution_options(populate_existing=True))}
            res = locked.get(result_id)
            if res is None or res.status != "ok":
                raise DatabaseError("only a validated (ok) result can become a best")
            if b is not None and b.result_id == result_id:
                b.updated_at = utcnow()
                return
            dev = s.get(Device, device_id)
            if dev is None:
                raise DatabaseError(f"no device with id {device_id}")
            tally = TallyDeltas()
            if b is None:
                s.add(Best(device_id=device_id, family=res.family, variant=res.variant,
                           size_class=res.size_class, result_id=result_id))
            else:
                if b.result_id in locked:
                    tally.best(dev.vendor, dev.type, locked[b.result_id], -1)
                b.result_id, b.updated_at = result_id, utcnow()
            tally.best(dev.vendor, dev.type, res, +1)
            s.flush()
            tally.apply(s)

    def merge(self, records: list[ExportRecord]) -> MergeReport:  # noqa: F821
        """Merge validated import records in ONE transaction; per key the faster validated
        result wins (merge.py). Applied in key order, so concurrent merges lock rows in one
        order; retried as a whole on a lost first insert or a deadlock."""
        ordered = sorted(records, key=lambda r: (r.device["fingerprint"], r.family, r.variant,
                                                 r.size_class, r.config_key))

        def run() -> MergeReport:
            with self.session() as s:
                return merge_records(s, ordered)

        return retry_on_conflict(run)

    def rebuild_tally(self) -> tuple[int, int]:
        """Recount the vendor tally from the stored bests and results in one transaction;
        returns (rows, keys that differed from the stored tally)."""
        with self.session() as s:
            return rebuild(s)

    def mark_verified(self, result_id: int) -> None:
        with self.session() as s:
            r = s.get(Result, result_id)
            if r is not None:
                r.verified_at, r.stale = utcnow(), 0

    # ---- reads ------------------------------------------------------------------------------
    def device_ids(self, **where: object) -> list[int]:
        with self.session() as s:
            q = select(Device.id)
            for k, v in where.items():
                q = q.where(getattr(Device, k) == v)
            return list(s.scalars(q))

    def bests(self, device_ids: list[int] | None, family: str | None = None,
              variant: str | None = None) -> list[ResultRow]:
        """The bests of these devices (None: of every device)."""
        if device_ids is not None and not device_ids:
            return []
        with self.session() as s:
            q = (select(Result, Device).join(Best, Best.result_id == Result.id)
                 .join(Device, Device.id == Result.device_id))
            if device_ids is not None:
                q = q.where(Best.device_id.in_(device_ids))
            if family:
                q = q.where(Result.family == family)
            if variant:
                q = q.where(Result.variant == variant)
            q = q.order_by(Device.fingerprint, Result.family, Result.variant,
                           Result.size_class)
            return [row_of(r, d) for r, d in s.execute(q)]

    def export_rows(self, fingerprints: set[str] | None = None
                    ) -> list[tuple[dict[str, object], ResultRow, int, str]]:
        """(device columns, best row, n_measured, source_hash) of every best, or of these
        devices', for an export file."""
        with self.session() as s:
            q = (select(Result, Device).join(Best, Best.result_id == Result.id)
                 .join(Device, Device.id == Best.device_id)
                 .order_by(Device.fingerprint, Result.family, Result.variant,
                           Result.size_class))
            if fingerprints is not None:
                q = q.where(Device.fingerprint.in_(fingerprints))
            return [({c: getattr(d, c) for c in DEVICE_COLUMNS}, row_of(r, d), r.n_measured,
                     r.source_hash) for r, d in s.execute(q)]

    def related_devices(self, fingerprint: str, hardware_key: str, model: str,
                        vendor: str) -> list[tuple[str, list[int]]]:
        """(fallback level, device ids), nearest first: this fingerprint (`exact`), the same
        hardware under another driver (`driver-changed`), the same model with other limits
        (`same-device`)."""
        with self.session() as s:
            exact = list(s.scalars(select(Device.id).where(Device.fingerprint == fingerprint)))
            hw = list(s.scalars(select(Device.id).where(Device.hardware_key == hardware_key,
                                                        Device.fingerprint != fingerprint)))
            same = list(s.scalars(select(Device.id).where(Device.model == model,
                                                          Device.vendor == vendor,
                                                          Device.hardware_key != hardware_key)))
        return [("exact", exact), ("driver-changed", hw), ("same-device", same)]

    def ok_results(self, device_ids: list[int], family: str,
                   variants: tuple[str, ...] | None = None) -> list[ResultRow]:
        """The validated results of these devices in a family (and variants), fastest first."""
        if not device_ids:
            return []
        with self.session() as s:
            q = (select(Result, Device).join(Device, Device.id == Result.device_id)
                 .where(Result.device_id.in_(device_ids), Result.status == "ok",
                        Result.family == family))
            if variants is not None:
                q = q.where(Result.variant.in_(variants))
            return [row_of(r, d) for r, d in s.execute(q.order_by(Result.median_s))]

    def results(self, device_id: int, family: str, variant: str, size_class: str,
                status: str | None = "ok") -> list[ResultRow]:
        with self.session() as s:
            q = (select(Result, Device).join(Device, Device.id == Result.device_id)
                 .where(Result.device_id == device_id, Result.family == family,
                        Result.variant == variant, Result.size_class == size_class))
            if status:
                q = q.where(Result.status == status)
            return [row_of(r, d) for r, d in s.execute(q.order_by(Result.median_s))]

    def counts(self) -> dict[str, int]:
        with self.session() as s:
            return {
                "devices": s.scalar(select(func.count(Device.id))) or 0,
                "results": s.scalar(select(func.count(Result.id))) or 0,
                "failed": s.scalar(select(func.count(Result.id))
                                   .where(Result.status == "failed")) or 0,
                "bests": s.scalar(select(func.count(Best.id))) or 0,
            }

    def fingerprints_tuned(self) -> set[str]:
        with self.session() as s:
            q = select(Device.fingerprint).join(Best, Best.device_id == Device.id).distinct()
            return set(s.scalars(q))


class _Transient(Exception):
    """A transaction PostgreSQL aborted to break a deadlock or a serialisation conflict."""


def _transient(e: OperationalError) -> bool:
    """PostgreSQL's deadlock_detected (40P01) / serialization_failure (40001)."""
    return getattr(e.orig, "sqlstate", None) in ("40P01", "40001")


def retry_on_conflict(fn, attempts: int = 5):  # noqa: ANN001, ANN202
    """Run a transaction again when a concurrent writer inserted the same key first (the
    second attempt finds the row and updates it) or when PostgreSQL chose it as a deadlock
    victim; every attempt is a whole transaction, rolled back before the next."""
    for i in range(attempts):
        try:
            return fn()
        except (IntegrityError, _Transient) as e:
            if i == attempts - 1:
                raise DatabaseError(f"conflicting concurrent writes: {_short(e)}") from None
            time.sleep(0.01 * (i + 1))
    return None


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a URL we cannot parse is printed without its userinfo
        return url.split("@")[-1]


def _short(e: Exception) -> str:
    if isinstance(e, OperationalError):
        return str(e.orig) if e.orig else str(e).splitlines()[0]
    return str(e).splitlines()[0]
