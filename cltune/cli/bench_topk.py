"""`cltune bench --op topk`: the `--k` largest of 1-D float arrays of `--sizes` and along the
rows of `--shapes` against the device's copy of the same bytes (a ceiling: the call reads its
input at least once), numpy (argpartition, then a sort of the k) and, beside a CUDA device,
`torch.topk`; every answer checked first (the values against the reference, cltune's indices
against its values; cltune.cli.bench_cases)."""

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
from cltune.families.topk.api import explain, topk
from cltune.families.topk.reference import reference

TOPK_OPS = ("topk",)
DEFAULT_K = "10,1000"
RATIOS = (("cltune", "numpy"), ("cltune-batch", "torch"), ("cltune-batch", "copy"))


def parse_k(text: str | None) -> list[int]:
    out = []
    for part in (text or DEFAULT_K).split(","):
        try:
            v = int(part)
        except ValueError:
            raise ValueError(f"--k takes counts, e.g. 10,1000, not {part!r:.20}") from None
        if v < 1:
            raise ValueError(f"--k: {v} is not >= 1")
        out.append(v)
    return out


def topk_cases(q: cl.CommandQueue, dtype: np.dtype, sizes: str | None, shapes: str | None,
               ks: str | None, repeats: int, torch: Any, notes: list[str],
               db: str | None) -> list[Case]:
    if dtype.name not in ("float32", "float64"):
        raise ValueError(f"--op topk measures float32 or float64 (--dtype), not {dtype}")
    rng = np.random.default_rng(41)
    out = []
    arrays: list[tuple[int, ...]] = [(n,) for n in parse_counts(sizes or "2^20,2^24")] \
        if sizes is not None or shapes is None else []
    arrays += [(r, c) for r, c in parse_shapes(shapes, "ROWSxCOLS")] if shapes else []
    for shape in arrays:
        h = rng.standard_normal(shape).astype(dtype)
        for k in parse_k(ks):
            if k > shape[-1]:
                notes.append(f"k={k} > {shape[-1]}: not measured")
                continue
            out.append(_case(q, h, k, repeats, torch, notes, db))
    return out


def _case(q: cl.CommandQueue, h: np.ndarray, k: int, repeats: int, torch: Any,
          notes: list[str], db: str | None) -> Case:
    x = cla.to_device(q, h)
    y = cla.empty_like(x)
    q.finish()
    rows = h.size // h.shape[-1]

    def call() -> cla.Array:
        return topk(x, k, db=db)[0]

    def host() -> np.ndarray:
        p = np.argpartition(-h, k - 1, axis=-1)[..., :k]
        v = np.take_along_axis(h, p, -1)
        return -np.sort(-v, axis=-1)

    v, i = topk(x, k, db=db)
    if not np.array_equal(np.take_along_axis(h, i.get(), -1), v.get()):
        notes.append(f"cltune's indices of k={k} of {h.shape} do not give its values")
    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(), lambda: block(call, lambda _: q.finish()),
                                  host=call),
        "numpy": Contender(host, lambda: blocking(host)),
        # a ceiling: the same bytes copied on the device (its answer is the call's own)
        "copy": Contender(lambda: call().get(), lambda: block(
            lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=x.nbytes),
            lambda _: q.finish())),
    }
    if torch is not None:
        t = torch.from_numpy(h).cuda()

        def fn() -> Any:  # noqa: ANN401
            return torch.topk(t, k)[0]
        try:
            fn()
            torch.cuda.synchronize()
            contenders["torch"] = Contender(lambda: fn().cpu().numpy(),
                                            lambda: torch_block(torch, fn), torch=True)
        except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
            notes.append(f"torch has no topk of {h.dtype} ({type(e).__name__})")
    served = explain(q, h.dtype, h.size, k, rows, db=db)
    shape = count_label(h.size) if h.ndim == 1 else "x".join(map(str, h.shape))
    case = Case(f"{shape}, k = {k}", h.nbytes, str(served))
    want = reference(h.reshape(rows, -1), k)[0].reshape(*h.shape[:-1], k)
    return measure_case(case, want, close_to(0.0, True), contenders, RATIOS, repeats)
