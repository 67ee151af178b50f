"""Databases as older cltune versions left them, for migration tests: the frozen v1 DDL plus
the released migrations, and devices inserted as raw rows."""

from __future__ import annotations

from sqlalchemy import Connection, text

from cltune.tuning_db.migrations import MIGRATIONS, V1_DDL


def v2_schema(c: Connection) -> None:
    """An empty schema v2 (v1 DDL + the v2 migration, version row 2) on connection `c`."""
    for stmt in V1_DDL:
        c.execute(text(stmt))
    MIGRATIONS[2](c)
    c.execute(text("INSERT INTO cltune_schema_version VALUES (1, 2)"))


def add_device(c: Connection, i: int, fingerprint: str, hardware_key: str, vendor: str,
               type_: str = "gpu", model: str = "M", driver: str = "1.0") -> None:
    """A cltune_devices row as every schema version has it."""
    c.execute(text(
        "INSERT INTO cltune_devices (id, fingerprint, hardware_key, vendor, type, model, name,"
        " compute_units, local_mem, max_wg, platform, platform_version, driver, opencl_c)"
        " VALUES (:i, :fp, :hw, :v, :t, :m, :m, 8, 65536, 1024, 'P', '3.0', :d, '1.2')"),
        {"i": i, "fp": fingerprint, "hw": hardware_key, "v": vendor, "t": type_, "m": model,
         "d": driver})
