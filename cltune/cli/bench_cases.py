"""What every `cltune bench` mode beyond the 1-D sizes (cltune.cli.bench_modes) shares: a
case (one shape, one set of contenders), its validation against numpy in float64, its timing
and its report.

A case is measured in two phases. First every contender's answer is checked against the
float64 reference (a wrong one is reported and never timed). Then the OpenCL and host
contenders are sampled interleaved round-robin (the starting one rotates, as the 1-D bench
does); the torch contenders are sampled after them, in their own rounds, never call by call
between OpenCL calls (two CUDA contexts on one GPU time-slice). Each sample is a block of
calls sized to about `MIN_SAMPLE_S`; figures are medians over `repeats` samples, GB/s counts
the input's bytes, and a ratio is time(other) / time(cltune's row): > 1 means cltune is faster.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cltune.cli.bench import Row, Sampler, interleaved
from cltune.device.info import DeviceInfo

MIN_SAMPLE_S = 0.01
MAX_BLOCK = 200
Answer = Callable[[], Any]  # a contender's result, as numpy (validated before timing)
Close = Callable[[np.ndarray, np.ndarray], bool]


@dataclass
class Case:
    label: str  # the shape and what is reduced, e.g. "4096x4096, axis 0"
    nbytes: int  # input bytes (GB/s = nbytes / median)
    config: str  # what serves the cltune row and where that answer came from
    rows: dict[str, Row] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    wrong: dict[str, str] = field(default_factory=dict)  # contender -> what it answered
    host_us: float | None = None  # cltune's call with the enqueue stubbed (bench.host_parts)
    launches: float | None = None  # enqueues per call


def is_ours(row: str) -> bool:
    """cltune's rows (the call, its batch, the many modes' own), not the baselines'."""
    return row.startswith("cltune")


@dataclass
class ModeReport:
    device: str
    platform: str
    mode: str  # "whole", "axis", "segments" or "many"
    op: str
    dtype: str
    repeats: int
    cases: list[Case]
    notes: list[str]
    floor_us: float | None = None  # the device's bare enqueue (bench.host_parts)

    def any_wrong(self) -> bool:
        """Whether one of cltune's own rows answered wrong (the exit code); a baseline that
        disagrees with the float64 reference (torch's float32 sum at large n, say) is listed
        and left untimed, but is not cltune's failure."""
        return any(is_ours(k) for c in self.cases for k in c.wrong)


@dataclass
class Contender:
    """One row: how to get its answer (for validation) and how to time it (built lazily,
    after validation, so that a wrong contender is never warmed or timed)."""
    answer: Answer
    sampler: Callable[[], Sampler]
    torch: bool = False
    host: Callable[[], object] | None = None  # cltune's call alone: its host part is measured


def block(call: Callable[[], object], finish: Callable[[object], object]) -> Sampler:
    """Seconds per call of a block of calls back to back, then one `finish` of the last
    result; the block is as long as ~MIN_SAMPLE_S (1 to MAX_BLOCK calls)."""
    finish(call())  # warm: builds, vetting, table uploads
    t0 = time.perf_counter()
    finish(call())
    calls = max(1, min(MAX_BLOCK, int(MIN_SAMPLE_S / max(time.perf_counter() - t0, 1e-7))))

    def sample() -> float:
        t = time.perf_counter()
        last = None
        for _ in range(calls):
            last = call()
        finish(last)
        return (time.perf_counter() - t) / calls
    return sample


def blocking(call: Callable[[], object]) -> Sampler:
    """A call that waits for its own result (`.get()`, numpy), timed in blocks."""
    return block(call, lambda _: None)


def torch_module(info: DeviceInfo) -> tuple[Any, str]:
    """(torch, '') when torch rows can run beside this device; else (None, why not: a note,
    '' when the device is not NVIDIA's and there is nothing to say)."""
    if not info.is_nvidia:
        return None, ""
    try:
        import torch  # lazy: optional and heavy; only asked on NVIDIA devices
    except ImportError:
        return None, "torch is not importable: no torch rows"
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device: no torch rows"
    return torch, ""


def torch_block(torch: Any, call: Callable[[], object]) -> Sampler:
    return block(call, lambda _: torch.cuda.synchronize())


def close_to(rtol: float, exact: bool) -> Close:
    """Equality (indices, counts, booleans, min/max) or closeness within rtol of the float64
    reference, elementwise."""
    def check(got: np.ndarray, want: np.ndarray) -> bool:
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return False
        if exact:
            return bool(np.array_equal(got, want))
        return bool(np.allclose(got.astype(np.float64), want, rtol=rtol, atol=1e-6,
                                equal_nan=True))
    return check


def _show(a: Any) -> str:
    flat = np.asarray(a).ravel()
    return np.array2string(flat[:4], precision=6) + ("..." if flat.size > 4 else "")


def measure_case(case: Case, want: np.ndarray, close: Close,
                 contenders: dict[str, Contender], ratios: tuple[tuple[str, str], ...],
                 repeats: int) -> Case:
    """Validate every contender, then time the right ones (OpenCL and host interleaved,
    torch in its own rounds afterwards); fills the case's rows, ratios and wrong answers."""
    for name, c in contenders.items():
        got = c.answer()
        if not close(got, want):
            case.wrong[name] = f"{_show(got)} (numpy float64: {_show(want)})"
    right = {k: c for k, c in contenders.items() if k not in case.wrong}
    samples = interleaved({k: c.sampler() for k, c in right.items() if not c.torch}, repeats)
    torch_rows = {k: c for k, c in right.items() if c.torch}
    if torch_rows:
        samples.update(interleaved({k: c.sampler() for k, c in torch_rows.items()}, repeats))
    for name in contenders:  # the contenders' order, not the timing phases'
        if name not in samples:
            continue
        v = samples[name]
        med = statistics.median(v)
        q4 = statistics.quantiles(v, n=4) if len(v) > 1 else [med, med, med]
        case.rows[name] = Row(med, case.nbytes / med / 1e9, 100 * (q4[2] - q4[0]) / med,
                              tuple(v))
    case.ratios = {f"{a}/{b}": case.rows[b].median_s / case.rows[a].median_s
                   for a, b in ratios if a in case.rows and b in case.rows}
    host = next((c.host for k, c in contenders.items() if c.host and k in case.rows), None)
    if host is not None:  # measured after every case (bench.host_parts)
        case.__dict__["_host"] = host
    return case


def parse_shapes(text: str, what: str) -> list[tuple[int, int]]:
    """`RxC[,RxC...]` (each part an integer or 2^k) as (rows, cols) pairs, both >= 1."""
    out = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        try:
            if len(dims) != 2:
                raise ValueError
            pair = tuple(1 << int(d[2:]) if d.startswith("2^") else int(d) for d in dims)
        except ValueError:
            raise ValueError(f"--shapes: {part.strip()!r:.30} is not {what} (e.g. "
                             "4096x4096,65536x256)") from None
        if min(pair) < 1:
            raise ValueError(f"--shapes: {part.strip()!r:.30}: both numbers must be >= 1")
        out.append((pair[0], pair[1]))
    return out


def random_input(op: str, dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Inputs whose reductions stay finite and well conditioned: values near 1 for prod,
    small integers for integer dtypes, uniform [0, 1) otherwise."""
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        lo, hi = (1, 3) if op == "prod" else (0 if dtype.kind == "u" else -1000, 1000)
        return rng.integers(lo, hi, shape).astype(dtype)
    if op == "prod":
        return rng.uniform(0.999, 1.001, shape).astype(dtype)
    return rng.random(shape).astype(dtype)
