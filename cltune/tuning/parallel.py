"""One study per size class fed by several evaluation workers at once (`cltune tune --device
0,1,2,3`, `--device all`, `--workers N`): a node's identical GPUs tune together, or a device's
study takes several workers.

Every worker is the isolated worker process of the crash-proof design (one per device and
slot), driven by a thread of this process that runs Optuna trials of the shared study (TPE
with `constant_liar`, so that concurrent workers draw different points; any sampler works).
The first tuner makes each study (anew unless `--resume`) and enqueues its seeds; the others
load it; all optimize until the study holds `trials` finished trials or the class's time is
up; then the first re-measures the finalists side by side and stores the best once. Devices
whose fingerprints differ are refused: a study's timings must be comparable.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pyopencl as cl

from cltune.device.info import DeviceInfo
from cltune.tuning.quiet import quiet_studies
from cltune.tuning.tuner import BucketResult, Progress, TuneOptions, Tuner


class DevicesDiffer(ValueError):
    """Devices of one parallel run that are not the same kind (their fingerprints differ)."""


def check_same_kind(devices: list[tuple[cl.Device, DeviceInfo]]) -> None:
    """DevicesDiffer naming the devices whose fingerprint is not the first one's."""
    first = devices[0][1]
    odd = [i for _, i in devices[1:] if i.fingerprint != first.fingerprint]
    if odd:
        names = "; ".join(f"{i.index} {i.name} ({i.platform} {i.release}) [{i.fingerprint}]"
                          for i in odd)
        raise DevicesDiffer(f"devices differ from device {first.index} {first.name} "
                            f"[{first.fingerprint}]: {names}; tune them in separate runs")


class ParallelTuner:
    """Tuners of one variant on `devices` (identical), `workers` per device, sharing each size
    class's study and the results database; `run()` as `Tuner.run()`."""

    def __init__(self, devices: list[tuple[cl.Device, DeviceInfo]], store,  # noqa: ANN001
                 storage_url: str, opts: TuneOptions, progress: Progress | None = None,
                 workers: int = 1) -> None:
        if not devices:
            raise ValueError("no device to tune")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        check_same_kind(devices)
        n = len(devices) * workers
        self.opts = replace(opts, workers=n)
        self.tuners: list[Tuner] = []
        ctxs: dict[int, cl.Context] = {}
        for k, (dev, info) in enumerate(devices):
            ctx = ctxs.setdefault(dev.int_ptr, cl.Context([dev]))
            for slot in range(workers):
                first = k == 0 and slot == 0
                self.tuners.append(Tuner(ctx, dev, info, store, storage_url, self.opts,
                                         progress if first else None, slot=slot))

    @property
    def primary(self) -> Tuner:
        return self.tuners[0]

    def run(self) -> list[BucketResult]:
        with quiet_studies():
            return self._run()

    def _run(self) -> list[BucketResult]:
        p = self.primary
        buckets = self.opts.buckets
        p.progress.start(p.space, tuple(p.target.size_class(b) for b in buckets))
        t_end = time.monotonic() + self.opts.timeout_s
        known = p._known_rows() if self.opts.seeds else ()
        results: list[BucketResult] = []
        for i, b in enumerate(buckets):
            left = max(1.0, (t_end - time.monotonic()) / (len(buckets) - i))
            seeds = p.target.seeds(known, b, results[-1].config if results else None) \
                if self.opts.seeds else []
            results.append(self._bucket(b, left, seeds))
        return results

    def _bucket(self, bucket: Any, timeout_s: float, seeds: list[dict]) -> BucketResult:
        p = self.primary
        bench, name, study = p.open_bucket(bucket, seeds, fresh=True)
        errors: list[BaseException] = []

        def work(t: Tuner) -> None:
            try:
                if t is p:
                    t.optimize(study, bucket, bench, timeout_s)
                else:
                    b2, _, s2 = t.open_bucket(bucket, fresh=False)
                    t.optimize(s2, bucket, b2, timeout_s)
            except BaseException as e:  # noqa: BLE001 - reported after the join
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,), daemon=True,
                                    name=f"cltune-tune-{t.tag}") for t in self.tuners]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        return p._finish(study, bucket, bench, name)
