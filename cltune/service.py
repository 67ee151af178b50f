"""What the CLI commands do, as library functions returning plain data (the CLI only renders).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

from .devices import DeviceInfo, list_devices, select
from .tuner import BucketResult, Progress, Tuner, TuneOptions


@dataclass(frozen=True)
class DeviceRow:
    info: DeviceInfo
    subgroup_size: int
    tuned: bool


def devices_report(db: str | None) -> tuple[list[DeviceRow], str]:
    """Every device with its subgroup size and whether the database holds results for it.
    The second item is a note when the database could not be read ('' otherwise)."""
    from cltune.program import kernel_subgroup_size
    from cltune.tuning_db import DatabaseError, Store

    note = ""
    tuned: set[str] = set()
    try:
        store = Store.open(db, readonly=True)
        try:
            tuned = store.fingerprints_tuned()
        finally:
            store.close()
    except DatabaseError as e:
        note = str(e)
    rows = []
    for info in list_devices():
        sg = 0
        if info.subgroups:
            dev = info.cl_device()
            try:
                sg = kernel_subgroup_size(cl.Context([dev]), dev, info, min(64, info.max_wg))
            except cl.Error:
                sg = 0
        rows.append(DeviceRow(info, sg, info.fingerprint in tuned))
    return rows, note


def tune(selector: str, opts: TuneOptions, db: str | None, storage: str | None,
         progress: Progress | None = None) -> tuple[DeviceInfo, list[BucketResult]]:
    from cltune.tuning_db import Store, default_storage_url

    info, dev = select(selector)
    store = Store.open(db)
    try:
        ctx = cl.Context([dev])
        tuner = Tuner(ctx, dev, info, store, storage or default_storage_url(), opts, progress)
        return info, tuner.run()
    finally:
        store.close()


def show(db: str | None, selector: str | None):  # noqa: ANN201 - list of ResultRow
    """Best results, optionally of one device (selector as for `--device`)."""
    from cltune.tuning_db import Store

    store = Store.open(db, readonly=True)
    try:
        if selector is None:
            ids = store.device_ids()
        else:
            info, _ = select(selector)
            ids = store.device_ids(fingerprint=info.fingerprint)
        return store.bests(ids)
    finally:
        store.close()
