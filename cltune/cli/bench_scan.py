"""`cltune bench --op cumsum|cumprod|cummax|cummin`: scans of 1-D arrays of `--sizes` (or along
`--axis` of 2-D arrays of `--shapes`) against the device's copy of the same bytes (the ceiling:
a scan reads n and writes n), numpy, pyopencl's InclusiveScanKernel (whole arrays) and, beside a
CUDA device, torch.cumsum / cumprod / cummax / cummin; every answer checked against numpy in
float64 first (cltune.cli.bench_cases)."""

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
    random_input,
    torch_block,
)
from cltune.core.buckets import count_label, parse_counts
from cltune.families.scan.api import get_scanner

#: `cltune bench --op` name -> the scan family's op
SCAN_OPS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}
_NUMPY = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate,
          "min": np.minimum.accumulate}
_PYOPENCL = {"sum": ("a+b", "0"), "prod": ("a*b", "1"), "max": ("max(a, b)", None),
             "min": ("min(a, b)", None)}
RATIOS = (("cltune", "numpy"), ("cltune-batch", "pyopencl"), ("cltune-batch", "torch"),
          ("cltune-batch", "copy"))


def scan_cases(q: cl.CommandQueue, op_name: str, dtype: np.dtype, sizes: str | None,
               axis: str | None, shapes: str | None, repeats: int, torch: Any,
               notes: list[str], db: str | None) -> list[Case]:
    op = SCAN_OPS[op_name]
    s = get_scanner(q, op, dtype, db=db)
    cases: list[tuple[tuple[int, ...], int | None]] = []
    if axis is None:
        cases = [((n,), None) for n in parse_counts(sizes or "2^12,2^16,2^20,2^24")]
    else:
        axes = {"0": [0], "1": [1], "both": [0, 1]}[axis]
        for shape in parse_shapes(shapes or "4096x4096,65536x256", "ROWSxCOLS"):
            cases += [(shape, k) for k in axes]
    out = []
    for shape, k in cases:
        h = random_input(op, dtype, shape, sum(shape) + (k or 0))
        if op == "prod" and dtype.kind == "f":  # a product of n values near 1 stays finite
            h = (1 + (h - 1) / max(1, shape[0 if k is None else k]) ** 0.5).astype(dtype)
        out.append(_case(q, s, op, h, k, repeats, torch, notes))
    return out


def _case(q: cl.CommandQueue, s: Any, op: str, h: np.ndarray, axis: int | None, repeats: int,
          torch: Any, notes: list[str]) -> Case:
    x = cla.to_device(q, h)
    res = cla.empty(q, (h.size,) if axis is None else h.shape, s.result_dtype)
    y = cla.empty_like(x)
    q.finish()
    f = _NUMPY[op]

    def host() -> np.ndarray:
        return f(h.reshape(-1), axis=0) if axis is None else f(h, axis=axis)

    def call() -> cla.Array:
        return s(x, axis=axis, out=res)

    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(), lambda: block(call, lambda _: q.finish()),
                                  host=call),
        "numpy": Contender(host, lambda: blocking(host)),
        # the ceiling: the same bytes copied on the device (its answer is the scan's own)
        "copy": Contender(lambda: call().get(), lambda: block(
            lambda: cl.enqueue_copy(q, y.data, x.data, byte_count=x.nbytes),
            lambda _: q.finish())),
    }
    if axis is None and h.dtype.itemsize % 4 == 0 and (op in ("sum", "prod") or
                                                      h.dtype.kind == "f"):
        from pyopencl.scan import InclusiveScanKernel  # lazy: loads pyopencl's scan (mako)

        expr, neutral = _PYOPENCL[op]
        if neutral is None:
            neutral = "-INFINITY" if op == "max" else "INFINITY"
        knl = InclusiveScanKernel(q.context, h.dtype, expr, neutral)
        py_out = cla.empty_like(x)
        if np.dtype(s.result_dtype) == h.dtype:
            contenders["pyopencl"] = Contender(
                lambda: knl(x, py_out).get(), lambda: block(lambda: knl(x, py_out),
                                                             lambda _: q.finish()))
    if torch is not None:
        t = torch.from_numpy(h).cuda()
        fn = {"sum": torch.cumsum, "prod": torch.cumprod,
              "max": lambda a, dim: torch.cummax(a, dim=dim).values,
              "min": lambda a, dim: torch.cummin(a, dim=dim).values}[op]
        tt = t.reshape(-1) if axis is None else t
        dim = 0 if axis is None else axis
        try:
            fn(tt, dim=dim)
            torch.cuda.synchronize()
            contenders["torch"] = Contender(lambda: fn(tt, dim=dim).cpu().numpy(),
                                            lambda: torch_block(torch, lambda: fn(tt, dim=dim)),
                                            torch=True)
        except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
            notes.append(f"torch has no cumulative {op} of {h.dtype} ({type(e).__name__})")
    a64 = h.astype(np.float64) if h.dtype.kind == "f" else h.astype(s.result_dtype)
    want = f(a64.reshape(-1), axis=0) if axis is None else f(a64, axis=axis)
    length = h.size if axis is None else h.shape[axis]
    eps = float(np.finfo(h.dtype).eps) if h.dtype.kind == "f" else 0.0
    label = (f"n = {count_label(h.size)}" if axis is None
             else f"{h.shape[0]}x{h.shape[1]}, axis {axis}")
    served = s.explain(h.shape, axis)
    case = Case(label, 2 * h.nbytes, str(served))
    return measure_case(case, want, close_to(max(1e-5, 8 * eps * float(np.sqrt(length))),
                                             op in ("max", "min") or h.dtype.kind != "f"),
                        contenders, RATIOS, repeats)
