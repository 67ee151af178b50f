"""Validation inputs and verdicts every family shares: `make_input` (the same random values for
the same (op, dtype, n, seed): floats of mixed signs, integers across their range) and
`Check` (a validation's verdict and measured error), and `close` (results against a host
reference of any numpy dtype, structs field by field)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from cltune.core.ops import OpSpec


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""
    max_rel_error: float = 0.0  # |err| / sum|x| over the checked sizes (floats), else 0


#: inputs up to this many bytes are cached (validation sizes); bigger ones (tuning buckets up
#: to GiBs) are made afresh, so no process keeps GiB-sized inputs alive
CACHE_INPUT_BYTES = 1 << 24


def make_input(spec: OpSpec, n: int, seed: int = 0) -> list[np.ndarray]:
    """Random inputs for `spec`: floats in [-1, 2) (mixed signs), integers across the range.
    The same (spec, n, seed) always gives the same values; treat them as read-only."""
    if n * spec.itemsize * spec.n_inputs <= CACHE_INPUT_BYTES:
        return _small_input(spec, n, seed)
    return _make_input(spec, n, seed)


@lru_cache(maxsize=32)
def _small_input(spec: OpSpec, n: int, seed: int) -> list[np.ndarray]:
    return _make_input(spec, n, seed)


def _make_input(spec: OpSpec, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + n)
    out = []
    for k in range(spec.n_inputs):
        dt = spec.np_dtype
        if spec.is_float:
            if spec.op == "prod":
                a = rng.uniform(0.999, 1.001, n)
            else:
                a = rng.uniform(-1.0, 2.0, n)
            out.append(a.astype(dt))
        else:
            info = np.iinfo(dt)
            if spec.op == "prod":
                lo, hi = (1, 4) if info.min == 0 else (-3, 4)
            elif spec.op == "dot":
                lo, hi = max(info.min, -(2**20)), min(info.max, 2**20)
            else:
                lo, hi = info.min, info.max
            out.append(rng.integers(lo, hi, n, dtype=dt, endpoint=True))
        rng = np.random.default_rng(seed + n + 7919 * (k + 1))
    return out


#: struct fields that carry no value: pyopencl's documented `minmax_collector` has a `pad`
#: that neither its neutral, map nor reduce sets, so every kernel (pyopencl's own, the
#: reference) leaves something different there; such fields are not compared
PADDING = re.compile(r"_*(pad|padding)_?\d*", re.IGNORECASE)


def close(got: Any, want: Any, dt: np.dtype, rtol: float) -> str:
    """'' when every output matches: floats within rtol of the largest |want| (NaN and inf
    where want has them), everything else exactly; else the first mismatch. Struct fields
    named as padding (`pad`, `_pad0`, `padding`: PADDING) are not compared."""
    if dt.names:
        for name in dt.names:
            if PADDING.fullmatch(name):
                continue
            why = close(got[name], want[name], dt.fields[name][0], rtol)
            if why:
                return f"{name}: {why}"
        return ""
    g = np.asarray(got).astype(dt).reshape(-1)
    w = np.asarray(want).astype(dt).reshape(-1)
    if dt.kind not in "fc":
        bad = np.flatnonzero(g != w)
        return f"output {bad[0]}: {g[bad[0]]} != {w[bad[0]]}" if bad.size else ""
    wide = np.complex128 if dt.kind == "c" else np.float64
    g64, w64 = g.astype(wide), w.astype(wide)
    fin = np.isfinite(w64)
    special = np.flatnonzero(~fin & ~((np.isnan(g64) & np.isnan(w64)) | (g64 == w64)))
    if special.size:
        i = special[0]
        return f"output {i}: {g[i]} != {w[i]}"
    err = np.where(fin, np.abs(g64 - np.where(fin, w64, 0)), 0.0)
    err[fin & ~np.isfinite(g64)] = np.inf
    scale = float(np.max(np.abs(w64[fin]), initial=0.0))
    bad = np.flatnonzero((err > rtol * scale) & (err > np.finfo(dt).tiny))
    if bad.size:
        i = bad[np.argmax(err[bad])]
        return (f"output {i}: {g[i]} != {w[i]} (error {err[i]:.3g} > {rtol:.3g} x "
                f"{scale:.3g})")
    return ""
