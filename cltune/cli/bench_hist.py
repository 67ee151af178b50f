"""`cltune bench --op bincount|histogram`: histograms of 1-D arrays of `--sizes` in `--bins`
bins (uniform data and skewed data: two thirds of the values in 3 bins) against the device's
copy of the same bytes (a ceiling: the call reads its input once), numpy (`bincount`,
`histogram`) and, beside a CUDA device, torch (`bincount`, `histc`); every answer checked
against numpy first (counts exactly; cltune.cli.bench_cases)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.cli.bench_cases import (
    Case,
    Contender,
    block,
    blocking,
    close_to,
    measure_case,
    torch_block,
)
from cltune.core.buckets import count_label, parse_counts
from cltune.families.hist.api import bincount, explain, histogram

HIST_OPS = ("bincount", "histogram")
DEFAULT_BINS = "256,4096"
RATIOS = (("cltune", "numpy"), ("cltune-batch", "torch"), ("cltune-batch", "copy"))


def parse_bins(text: str | None) -> list[int]:
    out = []
    for part in (text or DEFAULT_BINS).split(","):
        try:
            v = int(part)
        except ValueError:
            raise ValueError(f"--bins takes bin counts, e.g. 256,4096, not {part!r:.20}") \
                from None
        if not 1 <= v <= 1 << 24:
            raise ValueError(f"--bins: {v} is not in 1..2^24")
        out.append(v)
    return out


def hist_cases(q: cl.CommandQueue, op: str, dtype: np.dtype, sizes: str | None,
               bins: str | None, repeats: int, torch: Any, notes: list[str],
               db: str | None) -> list[Case]:
    if op == "bincount" and dtype.kind not in "iu":
        raise ValueError(f"--op bincount counts integers (--dtype int32, ...), not {dtype}")
    if op == "histogram" and dtype.name not in ("float32", "float64"):
        raise ValueError(f"--op histogram bins float32 or float64 (--dtype), not {dtype}")
    out = []
    rng = np.random.default_rng(41)
    for n in parse_counts(sizes or "2^20,2^24"):
        for nb in parse_bins(bins):
            datas = ("uniform", "skewed") if op == "bincount" else ("uniform",)
            for data in datas:
                if op == "bincount":
                    top = min(nb, int(np.iinfo(dtype).max) + 1)
                    h = rng.integers(0, top, n).astype(dtype)
                    if data == "skewed":
                        hot = rng.random(n) < 2 / 3
                        h[hot] = rng.integers(0, min(3, top), int(hot.sum())).astype(dtype)
                else:
                    h = rng.random(n).astype(dtype)
                out.append(_case(q, op, h, nb, data, repeats, torch, notes, db))
    return out


def _case(q: cl.CommandQueue, op: str, h: np.ndarray, nb: int, data: str, repeats: int,
          torch: Any, notes: list[str], db: str | None) -> Case:
    x = cla.to_device(q, h)
    y = cla.empty_like(x)
    q.finish()
    if op == "bincount":
        def call() -> cla.Array:
            return bincount(x, minlength=nb, db=db)

        def host() -> np.ndarray:
            return np.bincount(h, minlength=nb)
    else:
        def call() -> cla.Array:
            return histogram(x, nb, (0.0, 1.0), db=db)[0]

        def host() -> np.ndarray:
            return np.histogram(h, nb, (0.0, 1.0))[0]

    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(), lambda: block(call, lambda _: q.finish()),
                                  host=call),
        "numpy": Contender(host, lambda: blocking(host)),
        # a ceiling: the same bytes copied on the device (its answer is the histogram's own)
        "copy": Contender(lambda: call().get(), lambda: block(
            lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=x.nbytes),
            lambda _: q.finish())),
    }
    if torch is not None:
        t = torch.from_numpy(h.astype(np.int64) if op == "bincount" else h).cuda()
        fn = (lambda: torch.bincount(t, minlength=nb)) if op == "bincount" else \
            (lambda: torch.histc(t, nb, 0.0, 1.0))
        try:
            fn()
            torch.cuda.synchronize()
            contenders["torch"] = Contender(lambda: fn().cpu().numpy().astype(np.int64),
                                            lambda: torch_block(torch, fn), torch=True)
        except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
            notes.append(f"torch has no {op} of {h.dtype} ({type(e).__name__})")
    served = explain(q, op, h.dtype, h.size, nb, db=db)
    case = Case(f"n = {count_label(h.size)}, {nb} bins, {data}", h.nbytes, str(served))
    return measure_case(case, host().astype(np.int64), close_to(0.0, True), contenders,
                        RATIOS, repeats)
