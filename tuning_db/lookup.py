"""Lookup with the explicit fallback chain; every answer says where it came from.

Levels, in order:
  exact          same fingerprint (hardware, platform, driver)
  driver-changed same hardware, other driver or platform version (served, marked stale)
  same-device    same model and vendor, other limits (e.g. another runtime build)
  shipped        results shipped with cltune for this device model (read-only)
  vendor-default the config that won most often for this vendor + device type, never failed
  builtin        (decided by the caller from the device limits)
"""

from __future__ import annotations

from sqlalchemy import select

from .models import Best, Device, Result, VendorTally
from .shipped import (  # noqa: F401 - re-exported: the chain's public names live here
    BUILTIN,
    LEVELS,
    Answer,
    DeviceKey,
    load_shipped,
    lookup_without_db,
)
from .store import ResultRow, Store, row_of


def _bests_where(store: Store, family: str, variant: str, *conds: object) -> list[ResultRow]:
    with store.session() as s:
        q = (select(Result, Device).join(Best, Best.result_id == Result.id)
             .join(Device, Device.id == Best.device_id)
             .where(Result.family == family, Result.variant == variant,
                    Result.status == "ok", *conds)
             .order_by(Device.id.desc(), Result.size_class))
        return [row_of(r, d) for r, d in s.execute(q)]


def _latest_device(store: Store, family: str, variant: str, *conds: object) -> int | None:
    """The most recently added device matching conds that holds an ok best for the variant:
    one indexed probe, so a model tuned on thousands of setups is never loaded whole."""
    with store.session() as s:
        return s.scalars(
            select(Device.id).join(Best, Best.device_id == Device.id)
            .join(Result, Result.id == Best.result_id)
            .where(Result.family == family, Result.variant == variant,
                   Result.status == "ok", *conds)
            .order_by(Device.id.desc()).limit(1)).first()


def lookup_db(store: Store, key: DeviceKey, family: str, variant: str) -> Answer | None:
    rows = _bests_where(store, family, variant, Device.fingerprint == key.fingerprint)
    if rows:
        return Answer("exact", "tuned on this device and driver", tuple(rows))
    dev = _latest_device(store, family, variant, Device.hardware_key == key.hardware_key)
    rows = _bests_where(store, family, variant, Device.id == dev) if dev is not None else []
    if rows:
        old = rows[0].driver
        return Answer("driver-changed",
                      f"driver {old} -> {key.driver}: stored results served, marked stale; "
                      "run `cltune verify`", tuple(rows))
    dev = _latest_device(store, family, variant, Device.model == key.model,
                         Device.vendor == key.vendor)
    rows = _bests_where(store, family, variant, Device.id == dev) if dev is not None else []
    if rows:
        return Answer("same-device", f"tuned on another setup of {key.model} "
                      "(other limits or runtime)", tuple(rows))
    return None


def vendor_default(store: Store, key: DeviceKey, family: str, variant: str) -> Answer | None:
    """The config chosen most often as best on this vendor + type, if it never failed there.
    Read from the vendor tally (kept by every write, see tally.py): one range scan of its
    index, then the row of the most recently added device that uses the config."""
    with store.session() as s:
        top = s.scalars(
            select(VendorTally.config_json)
            .where(VendorTally.vendor == key.vendor, VendorTally.type == key.type,
                   VendorTally.family == family, VendorTally.variant == variant,
                   VendorTally.n_failed == 0, VendorTally.n_best > 0)
            .order_by(VendorTally.n_best.desc(), VendorTally.config_json).limit(4)).all()
        for cfg_json in top:
            hit = s.execute(
                select(Result, Device).join(Best, Best.result_id == Result.id)
                .join(Device, Device.id == Best.device_id)
                .where(Device.vendor == key.vendor, Device.type == key.type,
                       Result.family == family, Result.variant == variant,
                       Result.status == "ok", Result.config_json == cfg_json)
                .order_by(Device.id.desc(), Result.size_class).limit(1)).first()
            if hit:
                return Answer("vendor-default",
                              f"most frequent best on {key.vendor} {key.type} devices",
                              (row_of(*hit),))
    return None


def lookup(store: Store | None, key: DeviceKey, family: str, variant: str) -> Answer:
    """Walk the chain for one variant of a kernel family; `builtin` (empty rows) when nothing
    is known."""
    if store is not None:
        ans = lookup_db(store, key, family, variant)
        if ans:
            return ans
    ans = load_shipped(family, variant, key)
    if ans:
        return ans
    if store is not None:
        ans = vendor_default(store, key, family, variant)
        if ans:
            return ans
    return Answer("builtin", BUILTIN)
