"""`cltune bench --op sort`: cltune.sort of 1-D arrays of `--sizes` and along the rows of
`--shapes` against the device's copy of the same bytes (a ceiling: every pass reads and writes
them), numpy's sort (its default: the fastest; `np.sort(kind="stable")` in its own row) and,
beside a CUDA device, torch's stable sort; every answer checked against numpy's first
(cltune.cli.bench_cases)."""

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
    parse_shapes,
    torch_block,
)
from cltune.core.buckets import count_label, parse_counts
from cltune.families.scan.sort import TYPE_CODES, describe, sort

SORT_OPS = ("sort",)
RATIOS = (("cltune", "numpy"), ("cltune", "numpy-stable"), ("cltune-batch", "torch"),
          ("cltune-batch", "copy"))


def sort_cases(q: cl.CommandQueue, dtype: np.dtype, sizes: str | None, shapes: str | None,
               repeats: int, torch: Any, notes: list[str],
               db: str | None = None) -> list[Case]:
    if dtype not in TYPE_CODES:
        raise ValueError(f"--op sort measures real numbers (--dtype), not {dtype}")
    rng = np.random.default_rng(42)
    arrays: list[tuple[int, ...]] = [(n,) for n in parse_counts(sizes or "2^20,2^24")] \
        if sizes is not None or shapes is None else []
    arrays += [(r, c) for r, c in parse_shapes(shapes, "ROWSxCOLS")] if shapes else []
    out = []
    for shape in arrays:
        if dtype.kind == "f":
            h = rng.standard_normal(shape).astype(dtype)
        else:
            i = np.iinfo(dtype)
            h = rng.integers(i.min, i.max, shape, dtype=dtype, endpoint=True)
        out.append(_case(q, h, repeats, torch, notes, db))
    return out


def _case(q: cl.CommandQueue, h: np.ndarray, repeats: int, torch: Any,
          notes: list[str], db: str | None) -> Case:
    x = cla.to_device(q, h)
    y = cla.empty_like(x)
    q.finish()

    def call() -> cla.Array:
        return sort(x, db=db)

    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(), lambda: block(call, lambda _: q.finish()),
                                  host=call),
        "numpy": Contender(lambda: np.sort(h, axis=-1), lambda: blocking(
            lambda: np.sort(h, axis=-1))),
        "numpy-stable": Contender(lambda: np.sort(h, axis=-1, kind="stable"), lambda: blocking(
            lambda: np.sort(h, axis=-1, kind="stable"))),
        # a ceiling: the same bytes copied on the device (its answer is the call's own)
        "copy": Contender(lambda: call().get(), lambda: block(
            lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=x.nbytes),
            lambda _: q.finish())),
    }
    if torch is not None:
        try:
            t = torch.from_numpy(h).cuda()

            def fn() -> Any:  # noqa: ANN401
                return torch.sort(t, stable=True)[0]
            fn()
            torch.cuda.synchronize()
            contenders["torch"] = Contender(lambda: fn().cpu().numpy(),
                                            lambda: torch_block(torch, fn), torch=True)
        except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
            notes.append(f"torch has no sort of {h.dtype} ({type(e).__name__})")
    shape = count_label(h.size) if h.ndim == 1 else "x".join(map(str, h.shape))
    case = Case(shape, h.nbytes, describe(q.device, h.dtype, h.shape))
    return measure_case(case, np.sort(h, axis=-1), close_to(0.0, True), contenders, RATIOS,
                        repeats)
