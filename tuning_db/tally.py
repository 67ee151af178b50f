"""The vendor tally: per (vendor, device type, family, variant, config), how many bests use the
config and how many times it failed, kept up to date by every write so that the
`vendor-default` lookup is one indexed query instead of a GROUP BY over every best of a vendor.

Definitions (what `recompute` counts, and what every write keeps equal to it):
  n_best   bests whose result is `ok`, counted under the best's device vendor and type and the
           result's family, variant and config_json;
  n_failed `failed` results, counted under their device's vendor and type.

A config is identified by its `config_json` (as the lookup always did), not by `config_key`.
Writers collect their changes in a `TallyDeltas` and apply them last in their transaction, in
key order: every transaction takes its tally row locks last and in one order, so concurrent
writers of the same rows (PostgreSQL) wait for each other instead of deadlocking.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from .models import Best, Device, Result, VendorTally

TallyKey = tuple[str, str, str, str, str]  # vendor, type, family, variant, config_json

#: The tally from scratch: used by the v4 migration's backfill, the scale generator and tests.
RECOMPUTE_SQL = """
SELECT vendor, type, family, variant, config_json, SUM(nb) AS n_best, SUM(nf) AS n_failed FROM (
    SELECT d.vendor AS vendor, d.type AS type, r.family AS family, r.variant AS variant,
           r.config_json AS config_json, 1 AS nb, 0 AS nf
      FROM cltune_best b
      JOIN cltune_devices d ON d.id = b.device_id
      JOIN cltune_results r ON r.id = b.result_id
     WHERE r.status = 'ok'
    UNION ALL
    SELECT d.vendor, d.type, r.family, r.variant, r.config_json, 0, 1
      FROM cltune_results r
      JOIN cltune_devices d ON d.id = r.device_id
     WHERE r.status = 'failed'
) AS t
GROUP BY vendor, type, family, variant, config_json"""

BACKFILL_SQL = ("INSERT INTO cltune_vendor_tally (vendor, type, family, variant, config_json,"
                " n_best, n_failed)" + RECOMPUTE_SQL)


class TallyDeltas:
    """Changes to the tally made by one transaction; `apply` writes them (last)."""

    def __init__(self) -> None:
        self._d: dict[TallyKey, list[int]] = defaultdict(lambda: [0, 0])

    def best(self, vendor: str, type_: str, res: Result, sign: int) -> None:
        """A best on a device of (vendor, type) starts (+1) or stops (-1) using `res`; only an
        ok result counts."""
        if res.status == "ok":
            self._d[(vendor, type_, res.family, res.variant, res.config_json)][0] += sign

    def failed(self, vendor: str, type_: str, res: Result, sign: int) -> None:
        self._d[(vendor, type_, res.family, res.variant, res.config_json)][1] += sign

    def status_change(self, s: Session, res: Result, old: str | None, new: str) -> None:
        """`res` (flushed, with its new status) changed status from `old` (None: new row)."""
        if old == new:
            return
        if old == "failed" or new == "failed":
            dev = s.get(Device, res.device_id)
            self.failed(dev.vendor, dev.type, res, 1 if new == "failed" else -1)
        if old is None or "ok" not in (old, new):
            return  # a new row has no best yet; failed <-> other: no best counted either way
        sign = 1 if new == "ok" else -1
        for vendor, type_, n in s.execute(
                select(Device.vendor, Device.type, func.count())
                .join(Best, Best.device_id == Device.id).where(Best.result_id == res.id)
                .group_by(Device.vendor, Device.type)):
            self._d[(vendor, type_, res.family, res.variant, res.config_json)][0] += sign * n

    def apply(self, s: Session) -> None:
        """Write the changes, in key order (see the module doc), as atomic increments."""
        for k in sorted(self._d):
            db, df = self._d[k]
            if db or df:
                _bump(s, k, db, df)
        self._d.clear()


def _bump(s: Session, k: TallyKey, d_best: int, d_failed: int) -> None:
    vendor, type_, family, variant, cfg = k
    name = s.get_bind().dialect.name
    if name in ("sqlite", "postgresql"):
        if name == "sqlite":
            from sqlalchemy.dialects.sqlite import (
                insert,  # lazy: the dialect of the database in use only
            )
        else:
            from sqlalchemy.dialects.postgresql import insert  # lazy: as above
        ins = insert(VendorTally).values(vendor=vendor, type=type_, family=family,
                                         variant=variant, config_json=cfg, n_best=d_best,
                                         n_failed=d_failed)
        s.execute(ins.on_conflict_do_update(
            index_elements=["vendor", "type", "family", "variant", "config_json"],
            set_={"n_best": VendorTally.n_best + ins.excluded.n_best,
                  "n_failed": VendorTally.n_failed + ins.excluded.n_failed}))
        return
    row = s.scalar(select(VendorTally).where(  # other databases: a locked read-then-write
        VendorTally.vendor == vendor, VendorTally.type == type_, VendorTally.family == family,
        VendorTally.variant == variant, VendorTally.config_json == cfg).with_for_update())
    if row is None:
        s.add(VendorTally(vendor=vendor, type=type_, family=family, variant=variant,
                          config_json=cfg, n_best=d_best, n_failed=d_failed))
    else:
        row.n_best, row.n_failed = row.n_best + d_best, row.n_failed + d_failed
    s.flush()


def recompute(conn: Connection) -> dict[TallyKey, tuple[int, int]]:
    """The tally counted from scratch (the rows that are not all zero)."""
    return {tuple(r[:5]): (int(r[5]), int(r[6])) for r in conn.execute(text(RECOMPUTE_SQL))
            if r[5] or r[6]}


def stored(conn: Connection) -> dict[TallyKey, tuple[int, int]]:
    """The tally as stored (rows whose counts dropped to zero are kept; left out here)."""
    q = select(VendorTally.vendor, VendorTally.type, VendorTally.family, VendorTally.variant,
               VendorTally.config_json, VendorTally.n_best, VendorTally.n_failed)
    return {tuple(r[:5]): (r[5], r[6]) for r in conn.execute(q) if r[5] or r[6]}


def rebuild(s: Session) -> tuple[int, int]:
    """Recount the tally from scratch inside the caller's transaction (the repair for a tally
    that drifted, e.g. written to by an older cltune during a migration). Returns (rows now,
    keys that differed). PostgreSQL: the tables it counts are locked against writers first;
    SQLite: the transaction already holds the write lock (BEGIN IMMEDIATE)."""
    conn = s.connection()
    if conn.dialect.name == "postgresql":
        conn.execute(text("LOCK TABLE cltune_best, cltune_results, cltune_vendor_tally "
                          "IN SHARE ROW EXCLUSIVE MODE"))
    before = stored(conn)
    conn.execute(text("DELETE FROM cltune_vendor_tally"))
    conn.execute(text(BACKFILL_SQL))
    after = stored(conn)
    differed = sum(before.get(k) != after.get(k) for k in set(before) | set(after))
    return len(after), differed
