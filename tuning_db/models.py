"""SQLAlchemy 2 models of the tuning database (current schema version: see migrations)."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class SchemaVersion(Base):
    """One row: the schema version (named so it never collides with Optuna's alembic table)."""

    __tablename__ = "cltune_schema_version"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)


class Device(Base):
    """A device fingerprint and its parts, so that partial matches are queries."""

    __tablename__ = "cltune_devices"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(32), unique=True, nullable=False)
    hardware_key: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    vendor: Mapped[str] = mapped_column(String(64), nullable=False)
    type: Mapped[str] = mapped_column(String(16), nullable=False)
    model: Mapped[str] = mapped_column(String(256), nullable=False)
    name: Mapped[str] = mapped_column(String(256), nullable=False)
    compute_units: Mapped[int] = mapped_column(Integer, nullable=False)
    local_mem: Mapped[int] = mapped_column(Integer, nullable=False)
    max_wg: Mapped[int] = mapped_column(Integer, nullable=False)
    platform: Mapped[str] = mapped_column(String(256), nullable=False)
    platform_version: Mapped[str] = mapped_column(String(512), nullable=False)
    driver: Mapped[str] = mapped_column(String(128), nullable=False)
    opencl_c: Mapped[str] = mapped_column(String(128), nullable=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (Index("ix_cltune_devices_model_vendor", "model", "vendor"),
                      Index("ix_cltune_devices_vendor_type", "vendor", "type"))


class FamilyKeyed:
    """The key columns results and bests share: device, kernel family, variant, size class
    (placed right after the id, as the v4 migration creates them)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-2)
    device_id: Mapped[int] = mapped_column(ForeignKey("cltune_devices.id"), nullable=False,
                                           sort_order=-1)
    family: Mapped[str] = mapped_column(String(32), nullable=False, sort_order=-1)
    variant: Mapped[str] = mapped_column(String(64), nullable=False, sort_order=-1)
    size_class: Mapped[str] = mapped_column(String(64), nullable=False, sort_order=-1)


class Result(FamilyKeyed, Base):
    """One evaluated config of a kernel family for (device, variant, size class): validated and
    timed, or failed. For the 1-D reduction family (`reduce`) the variant is `op/dtype`
    (`sum/float32`) and the size class `2^k`."""

    __tablename__ = "cltune_results"
    config_key: Mapped[str] = mapped_column(String(32), nullable=False)
    config_json: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)  # ok | failed
    reason: Mapped[str] = mapped_column(Text, default="")
    median_s: Mapped[float | None] = mapped_column(Float)
    gbps: Mapped[float | None] = mapped_column(Float)
    max_rel_error: Mapped[float | None] = mapped_column(Float)
    n_measured: Mapped[int] = mapped_column(Integer, nullable=False)
    cltune_version: Mapped[str] = mapped_column(String(32), nullable=False)
    source_hash: Mapped[str] = mapped_column(String(32), nullable=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    verified_at: Mapped[datetime | None] = mapped_column(default=None)
    stale: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        UniqueConstraint("device_id", "family", "variant", "size_class", "config_key",
                         name="uq_cltune_results_key"),
        Index("ix_cltune_results_lookup", "device_id", "family", "variant", "status"),
    )


class Best(FamilyKeyed, Base):
    """The chosen config per (device, family, variant, size class), after finalists were
    re-measured."""

    __tablename__ = "cltune_best"
    result_id: Mapped[int] = mapped_column(ForeignKey("cltune_results.id"), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    __table_args__ = (
        UniqueConstraint("device_id", "family", "variant", "size_class",
                         name="uq_cltune_best_key"),
        # the bests that use a result, when its status changes (see tally.py)
        Index("ix_cltune_best_result", "result_id"),
    )


class VendorTally(Base):
    """Per (vendor, device type, family, variant, config), how many bests use the config and
    how many results of it failed; kept by every write (tally.py) for `vendor-default`."""

    __tablename__ = "cltune_vendor_tally"
    vendor: Mapped[str] = mapped_column(String(64), primary_key=True)
    type: Mapped[str] = mapped_column(String(16), primary_key=True)
    family: Mapped[str] = mapped_column(String(32), primary_key=True)
    variant: Mapped[str] = mapped_column(String(64), primary_key=True)
    config_json: Mapped[str] = mapped_column(Text, primary_key=True)
    n_best: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    n_failed: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


# the vendor-default question, "the top config of (vendor, type, family, variant) that never
# failed", is a range scan of this index in its own order (ties: the smaller config_json)
Index("ix_cltune_vendor_tally_top", VendorTally.vendor, VendorTally.type, VendorTally.family,
      VendorTally.variant, VendorTally.n_failed, VendorTally.n_best.desc(),
      VendorTally.config_json)
