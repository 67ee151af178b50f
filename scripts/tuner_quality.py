"""Tuner quality: an exhaustive sweep of a restricted space vs the default `cltune tune` search on
the same space and bucket, both winners re-timed side by side.

    python scripts/tuner_quality.py --device 0 --bucket 24 [--markdown docs/tuner_quality.md]

The sweep evaluates every feasible config of the restricted space exactly as a tuner trial does
(validation first, then profiling-event timing); the default search is `TuneOptions()` (seeded
TPE, 40 trials) with the script's --budget (60 s) on the
same space. The exhaustive top 3 and the tuner's pick
are then re-timed interleaved (9 rounds, median of medians).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time
from pathlib import Path

import pyopencl as cl

from cltune.device.select import select
from cltune.tuning.tuner import TuneOptions, Tuner
from cltune.tuning_db import Store

RESTRICT = {"strategy": ("local_tree", "serial"), "wg": (8, 32, 128), "tile_factor": (1, 4),
            "items": (1, 2, 4, 8), "vec": (1, 4, 16), "groups_per_cu": (1, 16),
            "passes": (1, 2), "acc": ("native",)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--bucket", type=int, default=24)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds for the default tune")
    ap.add_argument("--markdown", default=None)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    tmp = Path(tempfile.mkdtemp())

    def tuner(name: str, **kw: object) -> Tuner:
        opts = TuneOptions(buckets=(a.bucket,), restrict=RESTRICT, **kw)
        return Tuner(ctx, dev, info, Store.open(f"sqlite:///{tmp / name}.db"),
                     f"sqlite:///{tmp / name}-studies.db", opts)

    sweep = tuner("sweep")
    configs = [c for c in sweep.space.configs() if c.wg <= sweep.space.values["wg"][-1]]
    bench = sweep.target.bench(a.bucket)
    print(f"device: {info.name} ({info.platform_version[:40]}); bucket 2^{a.bucket}; "
          f"restricted space: {len(configs)} feasible configs", flush=True)
    t0 = time.monotonic()
    times = {}
    for i, cfg in enumerate(configs):
        t, why = sweep.evaluate(cfg, a.bucket, bench)
        if not why:
            times[cfg] = t
        if i % 50 == 0:
            print(f"  sweep {i}/{len(configs)} ({time.monotonic() - t0:.0f} s)", flush=True)
    sweep_s = time.monotonic() - t0
    top = sorted(times, key=times.get)[:3]

    t0 = time.monotonic()
    res = tuner("default", timeout_s=a.budget).run()[0]
    tune_s = time.monotonic() - t0
    pick = res.config
    assert pick is not None, "the default search validated nothing"

    contenders = [*top, pick] if pick not in top else top
    rounds: dict = {c: [] for c in contenders}
    las = {c: sweep.target.launcher(c) for c in contenders}
    for _ in range(9):
        for c in contenders:
            rounds[c].append(bench.time(las[c], budget_s=0.15).median_s)
    med = {c: statistics.median(v) for c, v in rounds.items()}
    best = min(top, key=med.get)
    ratio = med[best] / med[pick]  # > 1: the tuner's pick is faster than the sweep's best
    gb = bench.nbytes / 1e9
    lines = [
        f"# Tuner quality ({datetime.date.today()})",
        "",
        f"Command: `python scripts/tuner_quality.py --device {a.device} --bucket {a.bucket}`",
        "",
        f"Device: {info.name}, {info.platform} {info.platform_version.split()[2:4]}; sum/float32 "
        f"at n = 2^{a.bucket}; restricted space `{RESTRICT}` = {len(configs)} feasible configs.",
        "",
        "| search | configs evaluated | wall time | pick | re-timed median | GB/s |",
        "|---|---|---|---|---|---|",
        f"| exhaustive sweep | {len(configs)} ({len(times)} validated) | {sweep_s:.0f} s | "
        f"{best.short()} | {med[best] * 1e6:.1f} µs | {gb / med[best]:.1f} |",
        f"| `cltune tune`'s default search (TPE, seed 0, 40 trials) with a {a.budget:.0f} s "
        "budget | "
        f"{res.trials} trials | {tune_s:.0f} s | {pick.short()} | {med[pick] * 1e6:.1f} µs | "
        f"{gb / med[pick]:.1f} |",
        "",
        f"The {a.budget:.0f} s budget is the script's `--budget`, set for this comparison (the "
        "restricted space above is the script's too): `cltune tune`'s own default `--timeout` "
        f"is 150 s. The {res.trials} trials took {tune_s:.0f} s.",
        "",
        f"**Default pick / exhaustive best (throughput, re-timed side by side, 9 interleaved "
        f"rounds): {ratio:.3f}** — {'within' if ratio >= 0.95 else 'NOT within'} 5 %; found in "
        f"{tune_s:.0f} s ({'≤' if tune_s <= 60 else '>'} 60 s).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)


if __name__ == "__main__":
    main()
