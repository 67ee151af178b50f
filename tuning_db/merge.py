"""The import merge, inside `Store.merge`'s transaction: per key the faster validated result
wins; the vendor tally changes in the same transaction (tally.py). Only `Store` calls this."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from .models import Best, Device, Result, utcnow
from .tally import TallyDeltas

if TYPE_CHECKING:
    from .exchange import ExportRecord


@dataclass(frozen=True)
class MergeReport:
    records: int
    devices_added: int
    results_added: int
    bests_changed: int


def merge_records(s: Session, records: list[ExportRecord]) -> MergeReport:
    """Apply validated records (in the order given) in the caller's transaction."""
    dev_added = res_added = best_changed = 0
    tally = TallyDeltas()
    for rec in records:
        d = rec.device
        dev = s.scalar(select(Device).where(Device.fingerprint == d["fingerprint"]))
        if dev is None:
            dev = Device(**d)
            s.add(dev)
            s.flush()
            dev_added += 1
        key = (Result.device_id == dev.id, Result.family == rec.family,
               Result.variant == rec.variant, Result.size_class == rec.size_class)
        # locked in the order set_best() locks them (best, then results), so that no result
        # changes status between the checks below and the tally's update
        best = s.scalar(select(Best).where(
            Best.device_id == dev.id, Best.family == rec.family, Best.variant == rec.variant,
            Best.size_class == rec.size_class).with_for_update())
        row = s.scalar(select(Result).where(*key, Result.config_key == rec.config_key)
                       .with_for_update())
        if row is None:
            row = Result(device_id=dev.id, family=rec.family, variant=rec.variant,
                         size_class=rec.size_class, config_key=rec.config_key,
                         config_json=json.dumps(rec.config.to_dict(), sort_keys=True),
                         status="ok", reason="", median_s=rec.median_s, gbps=rec.gbps,
                         max_rel_error=rec.max_rel_error, n_measured=rec.n_measured,
                         cltune_version=rec.cltune_version, source_hash=rec.source_hash,
                         stale=0)
            s.add(row)
            s.flush()
            res_added += 1
        elif row.status != "ok":
            continue  # it failed here: a file never overrides our own failure
        elif (row.median_s or 1e30) > rec.median_s:
            row.median_s, row.gbps, row.updated_at = rec.median_s, rec.gbps, utcnow()
        if best is None:
            s.add(Best(device_id=dev.id, family=rec.family, variant=rec.variant,
                       size_class=rec.size_class, result_id=row.id))
            s.flush()  # a second record of this key in the file finds it
            tally.best(dev.vendor, dev.type, row, +1)
            best_changed += 1
        elif best.result_id != row.id:
            cur = s.scalar(select(Result).where(Result.id == best.result_id).with_for_update())
            if cur is None or cur.status != "ok" or (cur.median_s or 1e30) > row.median_s:
                if cur is not None:
                    tally.best(dev.vendor, dev.type, cur, -1)
                tally.best(dev.vendor, dev.type, row, +1)
                best.result_id = row.id
                best_changed += 1
    s.flush()
    tally.apply(s)
    return MergeReport(len(records), dev_added, res_added, best_changed)
