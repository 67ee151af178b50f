"""An application kernel's results in cltune's database (family `kernel`, variant
`name@hash`, size class the problem size): every config the tuner judged (ok, with its mean
time; failed, with its reason), the best by the objective, and what a rerun finds there.

Only `tuning_db.store.Store` writes; this module says what to write. The stored GB/s of a
kernel is its arguments' bytes (every array once) over its time: what `cltune show` lists. A
database that cannot be opened never stops a tuning run: it is said once (a `CltuneWarning`)
and the run goes on without it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

from cltune.core.serving import CltuneWarning
from cltune.device.info import DeviceInfo
from cltune.user import family
from cltune.version import __version__


class KernelResults:
    """The rows of one kernel, device and size class (`store` None: no database)."""

    def __init__(self, db: Any, info: DeviceInfo, variant: str, size_class: str,  # noqa: ANN401
                 digest: str, nbytes: int = 0) -> None:
        self.variant, self.size_class, self.digest = variant, size_class, digest
        self.nbytes = nbytes  # the arguments' bytes: GB/s = their bytes / the time
        self.store = None
        self.device_id = 0
        if db is False:
            return
        # lazy: SQLAlchemy is loaded only when results are stored
        from cltune.tuning_db.errors import DatabaseError
        from cltune.tuning_db.store import Store  # lazy: as above

        try:
            self.store = Store.open(db)
            self.device_id = self.store.upsert_device(info.fingerprint_parts(),
                                                      info.fingerprint, info.hardware_key,
                                                      info.name)
        except (DatabaseError, OSError) as e:
            warnings.warn(f"cltune: results not stored: {e}", CltuneWarning, stacklevel=3)
            self.store = None

    def known(self) -> dict[str, Any]:
        """config key -> the stored row of every config judged before for this kernel,
        device and size class."""
        if self.store is None:
            return {}
        rows = self.store.results(self.device_id, family.NAME, self.variant, self.size_class,
                                  status=None)
        return {family.KernelParams(r.config).key(): r for r in rows}

    def record(self, params: Mapping[str, object], time_ms: float | None,
               reason: str = "") -> int | None:
        if self.store is None:
            return None
        from cltune.tuning_db.rows import Measurement  # lazy: with the store

        cfg = family.KernelParams(params)
        ok = time_ms is not None and math.isfinite(time_ms)
        m = Measurement(family.NAME, self.variant, self.size_class, cfg.to_dict(), cfg.key(),
                        "ok" if ok else "failed", 1, __version__, self.digest,
                        reason[:500] if not ok else "", time_ms * 1e-3 if ok else None,
                        self.nbytes / (time_ms * 1e-3) / 1e9 if ok and time_ms > 0 else None)
        return self.store.record(self.device_id, m, force=True)

    def set_best(self, result_id: int | None) -> None:
        if self.store is not None and result_id is not None:
            self.store.set_best(self.device_id, result_id)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
