"""`cltune bench --op copy_if|nonzero`: stream compaction of 1-D arrays of `--sizes` (about half
the elements kept: `ary[i] > t` with t the middle of the values' range) against the device's
copy of the same bytes (a ceiling: the call reads its input at least once), numpy
(`h[h > t]`, `np.flatnonzero`), pyopencl's `copy_if` and, beside a CUDA device, torch
(`t[t > thr]`, `torch.nonzero`, `torch.nonzero_static`); every answer checked first
(cltune.cli.bench_cases).

`copy_if` keeps its count on the device (pyopencl's contract); `nonzero` (of a ready mask) reads
its count back as numpy's semantics need, and `nonzero(mask, size=k)` (`cltune-sized`) does not.
"""

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
    random_input,
    torch_block,
)
from cltune.core.buckets import count_label, parse_counts
from cltune.families.scan.compact import copy_if, describe
from cltune.families.scan.nonzero import nonzero

COMPACT_OPS = ("copy_if", "nonzero")
RATIOS = (("cltune", "numpy"), ("cltune", "pyopencl"), ("cltune", "torch"),
          ("cltune-sized", "torch-static"), ("cltune", "copy"))


def compact_cases(q: cl.CommandQueue, op: str, dtype: np.dtype, sizes: str | None,
                  repeats: int, torch: Any, notes: list[str]) -> list[Case]:
    if dtype.kind not in "iuf" or dtype.itemsize > 8:
        raise ValueError(f"--op {op} measures integer or float arrays (--dtype), not {dtype}")
    if dtype == np.float16:
        raise ValueError(f"--op {op} measures float32/float64 or integer arrays, not float16")
    return [_case(q, op, random_input("sum", dtype, (n,), 21), repeats, torch, notes)
            for n in parse_counts(sizes or "2^20,2^24")]


def _case(q: cl.CommandQueue, op: str, h: np.ndarray, repeats: int, torch: Any,
          notes: list[str]) -> Case:
    t = h.dtype.type(0.5 if h.dtype.kind == "f" else (int(h.min()) + int(h.max())) // 2)
    keep = h > t
    x = cla.to_device(q, h)
    y = cla.empty_like(x)
    mask = cla.to_device(q, keep.view(np.uint8))
    q.finish()
    k = int(keep.sum())
    pred, extra = "ary[i] > t", [("t", t)]
    contenders: dict[str, Contender] = {}
    if op == "copy_if":
        def call() -> Any:  # noqa: ANN401 - (out, count, event)
            return copy_if(x, pred, extra_args=extra)

        def got(res: Any) -> np.ndarray:  # noqa: ANN401
            return res[0][:int(res[1].get())].get()

        want = h[keep]
        contenders["cltune"] = Contender(lambda: got(call()),
                                         lambda: block(call, lambda _: q.finish()), host=call)
        contenders["numpy"] = Contender(lambda: h[h > t], lambda: blocking(lambda: h[h > t]))
        from pyopencl.algorithm import copy_if as pyo_copy_if  # lazy: pyopencl's scan (mako)

        contenders["pyopencl"] = Contender(
            lambda: got(pyo_copy_if(x, pred, extra_args=extra)),
            lambda: block(lambda: pyo_copy_if(x, pred, extra_args=extra), lambda _: q.finish()))
    else:
        def call() -> Any:  # noqa: ANN401
            return nonzero(mask)[0]

        def sized() -> Any:  # noqa: ANN401
            return nonzero(mask, size=k)[0]

        want = np.flatnonzero(keep)
        contenders["cltune"] = Contender(lambda: call().get(),
                                         lambda: block(call, lambda _: q.finish()), host=sized)
        contenders["cltune-sized"] = Contender(lambda: sized().get(),
                                               lambda: block(sized, lambda _: q.finish()))
        contenders["numpy"] = Contender(lambda: np.flatnonzero(keep),
                                        lambda: blocking(lambda: np.flatnonzero(keep)))
    # the ceiling: the same bytes copied on the device (its answer is the call's own)
    contenders["copy"] = Contender(lambda: contenders["cltune"].answer(), lambda: block(
        lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=x.nbytes), lambda _: q.finish()))
    if torch is not None:
        _torch_rows(torch, op, h, keep, t, k, contenders, notes)
    served = describe(q.device, 8 if op == "nonzero" else h.dtype.itemsize)
    case = Case(f"n = {count_label(h.size)}, {k} kept", h.nbytes, served)
    return measure_case(case, want, close_to(0.0, True), contenders, RATIOS, repeats)


def _torch_rows(torch: Any, op: str, h: np.ndarray, keep: np.ndarray, t: Any, k: int,
                contenders: dict[str, Contender], notes: list[str]) -> None:
    tt = torch.from_numpy(h).cuda()
    tm = torch.from_numpy(keep).cuda()
    thr = t.item()
    rows = {"torch": (lambda: tt[tt > thr]) if op == "copy_if" else
            (lambda: torch.nonzero(tm).reshape(-1))}
    if op == "nonzero" and hasattr(torch, "nonzero_static"):
        rows["torch-static"] = lambda: torch.nonzero_static(tm, size=k).reshape(-1)
    for name, fn in rows.items():
        try:
            fn()
            torch.cuda.synchronize()
            contenders[name] = Contender(lambda fn=fn: fn().cpu().numpy(),
                                         lambda fn=fn: torch_block(torch, fn), torch=True)
        except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
            notes.append(f"torch has no {name} of {h.dtype} ({type(e).__name__})")
