"""`cltune bench`'s modes beyond the 1-D sizes of the plain ops (cltune.cli.bench): what users
run besides `r(x)`, each against numpy (and torch beside a CUDA device, pyopencl where it has
the operation), validated against numpy in float64 (cltune.cli.bench_cases):

- `whole`: a statistic (argmax, var, norm, ...: cltune.stats) of 1-D arrays of `--sizes`;
- `axis`: `r(x, axis=k)` of 2-D C arrays of `--shapes` vs `numpy.<op>(h, axis=k)` and
  `torch.<op>(t, dim=k)`, for the plain ops and the statistics;
- `segments`: `r.segments(x, offsets)` of M CSR segments of about N elements vs
  `numpy.<ufunc>.reduceat` and `torch.segment_reduce` (else `index_add_` for sums);
- `many`: `r.many([x1..xK])` (norm: cltune.norm_many) of K arrays of each of `--sizes` vs K
  cltune calls, numpy, K pyopencl calls and `torch._foreach_norm` / K torch calls;
- `scan`: `--op cumsum|cumprod|cummax|cummin` (cltune.cli.bench_scan) against the copy
  ceiling, numpy, pyopencl's InclusiveScanKernel and torch.

Rows: `cltune` (the call and its result read back, `.get()`; for `many`, a block of calls and
one wait, as bench_many.py times it), `cltune-batch` (calls back to back, one finish: the rate
torch's row is compared with), `numpy`, `torch` / `pyopencl` and the `many` mode's own rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.cli.bench import host_parts
from cltune.cli.bench_cases import (
    Case,
    Contender,
    ModeReport,
    block,
    blocking,
    close_to,
    measure_case,
    parse_shapes,
    random_input,
    torch_block,
    torch_module,
)
from cltune.cli.bench_compact import COMPACT_OPS, compact_cases
from cltune.cli.bench_hist import HIST_OPS, hist_cases
from cltune.cli.bench_scan import SCAN_OPS, scan_cases
from cltune.cli.bench_sort import SORT_OPS, sort_cases
from cltune.cli.bench_topk import TOPK_OPS, topk_cases
from cltune.core.buckets import count_label, parse_counts
from cltune.core.family import entry
from cltune.core.ops import DTYPES, OPS
from cltune.device.info import DeviceInfo
from cltune.families.axis.segments import explain_segments
from cltune.stats.reducers import STATS_OPS, StatsReducer, get_reducer

PLAIN = ("sum", "prod", "min", "max")
MANY_OPS = (*PLAIN, "norm")
EXACT = ("min", "max", "argmin", "argmax", "count_nonzero", "any", "all")
NUMPY: dict[str, Callable[..., Any]] = {
    "sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "argmax": np.argmax,
    "argmin": np.argmin, "mean": np.mean, "var": np.var, "std": np.std,
    "norm": lambda h, axis=None: np.linalg.norm(h, axis=axis),
    "count_nonzero": np.count_nonzero, "any": np.any, "all": np.all}
UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}
RATIOS = (("cltune", "numpy"), ("cltune", "pyopencl"), ("cltune-batch", "torch"))
MANY_RATIOS = (("cltune", "cltune-k-calls"), ("cltune", "numpy"), ("cltune", "pyopencl-k-calls"),
               ("cltune", "torch-foreach"), ("cltune", "torch-k-calls"))
DEFAULT_SIZES = "2^12,2^16,2^20,2^24"
DEFAULT_SHAPES = {"axis": "4096x4096,65536x256,256x65536", "segments": "4096x4096,65536x256"}


@dataclass(frozen=True)
class BenchRequest:
    """`cltune bench`'s options as given (None: not given)."""
    op: str = "sum"
    dtype: str = "float32"
    sizes: str | None = None
    repeats: int = 9
    axis: str | None = None
    segments: bool = False
    shapes: str | None = None
    many: int | None = None
    plot: str | None = None
    db: str | None = None
    bins: str | None = None
    k: str | None = None


def _sizes_only(req: BenchRequest, how: str = "") -> None:
    """A mode of whole arrays of --sizes only (histograms, compaction): the other modes'
    options are one error line."""
    if req.axis is not None or req.segments or req.many is not None or req.plot is not None \
            or req.shapes is not None:
        raise ValueError(f"--op {req.op} measures whole arrays of --sizes{how}; not --axis, "
                         "--segments, --many, --shapes or --plot")


def mode_of(req: BenchRequest) -> str:
    """Which mode the options pick: `sizes` (cltune.cli.bench), `whole`, `axis`, `segments`
    or `many`; options that contradict each other are a ValueError (one line)."""
    if req.op in HIST_OPS:
        _sizes_only(req, " in --bins bins")
        return "hist"
    if req.bins is not None:
        raise ValueError("--bins goes with --op bincount or histogram")
    if req.op in TOPK_OPS:
        if req.axis not in (None, "1") or req.segments or req.many is not None \
                or req.plot is not None:
            raise ValueError("--op topk measures whole arrays (--sizes) and along the rows of "
                             "--shapes; not --axis 0, --segments, --many or --plot")
        return "topk"
    if req.k is not None:
        raise ValueError("--k goes with --op topk")
    if req.op in SORT_OPS:
        if req.axis not in (None, "1") or req.segments or req.many is not None \
                or req.plot is not None:
            raise ValueError("--op sort measures whole arrays (--sizes) and along the rows of "
                             "--shapes; not --axis 0, --segments, --many or --plot")
        return "sort"
    if req.op in COMPACT_OPS:
        _sizes_only(req)
        return "compact"
    if req.op in SCAN_OPS:
        if req.segments or req.many is not None or req.plot is not None:
            raise ValueError(f"--op {req.op} measures whole arrays (--sizes) or --axis "
                             "(--shapes); not --segments, --many or --plot")
        if req.shapes is not None and req.axis is None:
            raise ValueError("--shapes goes with --axis")
        if req.axis not in (None, "0", "1", "both"):
            raise ValueError(f"--axis takes 0, 1 or both, not {req.axis!r:.20}")
        return "scan"
    if req.op not in OPS and req.op not in STATS_OPS:
        raise ValueError(f"unknown op {req.op!r:.30}; choose one of {', '.join(PLAIN)}, a "
                         f"statistic: {', '.join(STATS_OPS)}, a scan: {', '.join(SCAN_OPS)}, "
                         f"a histogram: {', '.join(HIST_OPS)}, topk, sort, or compaction: "
                         f"{', '.join(COMPACT_OPS)}")
    if req.op == "dot":
        raise ValueError("cltune bench measures one-array reductions; dot is not offered")
    if req.dtype not in DTYPES:
        raise ValueError(f"unknown dtype {req.dtype!r:.30}; choose one of {', '.join(DTYPES)}")
    given = [o for o, on in (("--axis", req.axis is not None), ("--segments", req.segments),
                             ("--many", req.many is not None)) if on]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} are two modes of cltune bench: give one")
    if req.plot is not None and given:
        raise ValueError(f"--plot draws the 1-D sizes; not with {given[0]}")
    if req.shapes is not None and not (req.axis is not None or req.segments):
        raise ValueError("--shapes goes with --axis or --segments (1-D sizes and --many's "
                         "array lengths: --sizes)")
    if req.sizes is not None and (req.axis is not None or req.segments):
        raise ValueError(f"{given[0]} takes --shapes (RxC), not --sizes")
    if req.shapes is not None:  # a malformed shape is an error before any device work
        parse_shapes(req.shapes, "SEGMENTSxLENGTH" if req.segments else "ROWSxCOLS")
    if req.many is not None:
        if req.op not in MANY_OPS:
            raise ValueError(f"--many measures {', '.join(MANY_OPS)}, not {req.op!r:.30}")
        return "many"
    if req.axis is not None:
        if req.axis not in ("0", "1", "both"):
            raise ValueError(f"--axis takes 0, 1 or both, not {req.axis!r:.20}")
        return "axis"
    if req.segments:
        if req.op not in PLAIN:
            raise ValueError(f"--segments measures {', '.join(PLAIN)}, not {req.op!r:.30}")
        return "segments"
    return "whole" if req.op in STATS_OPS else "sizes"


def run_mode(q: cl.CommandQueue, info: DeviceInfo, req: BenchRequest) -> ModeReport:
    """The benchmark of the mode `mode_of(req)` picks (not `sizes`: cltune.cli.bench)."""
    mode = mode_of(req)
    torch, why = torch_module(info)
    notes = [why] if why else []
    dtype = np.dtype(req.dtype)
    if mode in ("scan", "hist", "topk", "compact", "sort"):
        cases = (scan_cases(q, req.op, dtype, req.sizes, req.axis, req.shapes, req.repeats,
                            torch, notes, req.db) if mode == "scan" else
                 hist_cases(q, req.op, dtype, req.sizes, req.bins, req.repeats, torch, notes,
                            req.db) if mode == "hist" else
                 topk_cases(q, dtype, req.sizes, req.shapes, req.k, req.repeats, torch, notes,
                            req.db) if mode == "topk" else
                 sort_cases(q, dtype, req.sizes, req.shapes, req.repeats, torch, notes,
                            req.db) if mode == "sort" else
                 compact_cases(q, req.op, dtype, req.sizes, req.repeats, torch, notes))
        return ModeReport(info.name, info.platform_version, mode, req.op, dtype.name,
                          req.repeats, cases, notes, host_parts(q, cases))
    if req.op in STATS_OPS:
        if req.db is not None:
            notes.append("statistics are served from cltune's default database ($CLTUNE_DB);"
                          " --db is read for sum, prod, min and max")
        r: Any = get_reducer(q, req.op, dtype)
    else:
        r = get_reducer(q, req.op, dtype, db=req.db)
    run = {"whole": _whole, "axis": _axis, "segments": _segments, "many": _many}[mode]
    cases = run(q, r, req, dtype, torch, notes)
    return ModeReport(info.name, info.platform_version, mode, req.op, dtype.name, req.repeats,
                      cases, notes, host_parts(q, cases))


def _sizes(req: BenchRequest, default: str) -> list[int]:
    return list(parse_counts(req.sizes or default))


def _rtol(dtype: np.dtype, length: int) -> float:
    eps = np.finfo(dtype).eps if dtype.kind == "f" else 1e-12
    return max(1e-5, 4 * float(eps) * float(np.sqrt(max(length, 1))))


def _torch_call(torch: Any, op: str, t: Any, dim: int | None) -> Any:
    kw = {} if dim is None else {"dim": dim}
    if op in ("var", "std"):
        return getattr(torch, op)(t, unbiased=False, **kw)
    if op == "norm":
        return torch.linalg.vector_norm(t, **kw)
    return getattr(torch, {"min": "amin", "max": "amax"}.get(op, op))(t, **kw)


def _torch_contender(torch: Any, call: Callable[[], Any], notes: list[str],
                     what: str) -> Contender | None:
    """A torch row, or None (and a note) when torch does not offer `what` for this input."""
    try:
        call()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - any torch failure only drops its row
        note = f"torch has no {what} here ({type(e).__name__}): no torch row"
        if note not in notes:
            notes.append(note)
        return None
    return Contender(lambda: np.asarray(_host(call())), lambda: torch_block(torch, call),
                     torch=True)


def _host(res: Any) -> Any:
    if isinstance(res, (list, tuple)):
        return [_host(v) for v in res]
    return res.cpu().numpy() if hasattr(res, "cpu") else res


def _reduction(q: cl.CommandQueue, r: Any, op: str, h: np.ndarray, axis: int | None,
               label: str, config: str, torch: Any, notes: list[str], repeats: int) -> Case:
    """One case of `r(x)` (axis None) or `r(x, axis=k)` against numpy and torch."""
    x = cla.to_device(q, h)
    x.finish()
    call = (lambda: r(x)) if axis is None else (lambda: r(x, axis=axis))
    f = NUMPY[op]
    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(),
                                  lambda: block(call, lambda _: q.finish()), host=call),
        "numpy": Contender(lambda: f(h, axis=axis), lambda: blocking(lambda: f(h, axis=axis))),
    }
    if torch is not None:
        t = torch.from_numpy(h).cuda()
        c = _torch_contender(torch, lambda: _torch_call(torch, op, t, axis), notes,
                             f"{op} of {h.dtype}")
        if c is not None:
            contenders["torch"] = c
    want = f(h.astype(np.float64), axis=axis)
    length = h.size if axis is None else h.shape[axis]
    case = Case(label, h.nbytes, config)
    return measure_case(case, want, close_to(_rtol(h.dtype, length), op in EXACT),
                        contenders, RATIOS, repeats)


def _whole(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, torch: Any,
           notes: list[str]) -> list[Case]:
    return [_reduction(q, r, req.op, random_input(req.op, dtype, (n,), n), None,
                       f"n = {count_label(n)}", str(r.explain(n)), torch, notes,
                       req.repeats) for n in _sizes(req, DEFAULT_SIZES)]


def _axis(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, torch: Any,
          notes: list[str]) -> list[Case]:
    axes = {"0": [0], "1": [1], "both": [0, 1]}[req.axis or "both"]
    out = []
    for shape in parse_shapes(req.shapes or DEFAULT_SHAPES["axis"], "ROWSxCOLS"):
        h = random_input(req.op, dtype, shape, shape[0] * 7 + shape[1])
        for k in axes:
            served = (r.explain_axis(shape, k) if isinstance(r, StatsReducer)
                      else r.explain(shape, axis=k))
            out.append(_reduction(q, r, req.op, h, k, f"{shape[0]}x{shape[1]}, axis {k}",
                                  str(served), torch, notes, req.repeats))
    return out


def _segments(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, torch: Any,
              notes: list[str]) -> list[Case]:
    return [_segment_case(q, r, req, dtype, m, n, torch, notes)
            for m, n in parse_shapes(req.shapes or DEFAULT_SHAPES["segments"],
                                     "SEGMENTSxLENGTH")]


def _segment_case(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, m: int,
                  n: int, torch: Any, notes: list[str]) -> Case:
    """m CSR segments of random lengths about n (none empty: numpy's reduceat would give
    the next element, not the identity, for an empty one)."""
    rng = np.random.default_rng(m * 7 + n)
    lengths = rng.integers(max(1, n // 2), n + n // 2 + 1, m)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    offsets = offsets.astype(np.int32 if offsets[-1] < 2**31 else np.int64)
    h = random_input(req.op, dtype, (int(offsets[-1]),), m + n)
    x, od = cla.to_device(q, h), cla.to_device(q, offsets)
    q.finish()
    ufunc, starts = UFUNC[req.op], offsets[:-1]

    def call() -> cla.Array:
        return r.segments(x, od)

    def host() -> np.ndarray:
        return ufunc.reduceat(h, starts)

    contenders = {
        "cltune": Contender(lambda: call().get(), lambda: blocking(lambda: call().get())),
        "cltune-batch": Contender(lambda: call().get(),
                                  lambda: block(call, lambda _: q.finish()), host=call),
        "numpy": Contender(host, lambda: blocking(host)),
    }
    if torch is not None:
        c = _torch_segments(torch, req.op, h, offsets, lengths, notes)
        if c is not None:
            contenders["torch"] = c
    case = Case(f"{m} segments of ~{n}", h.nbytes, str(explain_segments(r, m, int(offsets[-1]))))
    return measure_case(case, ufunc.reduceat(h.astype(np.float64), starts),
                        close_to(_rtol(dtype, n + n // 2), req.op in EXACT), contenders, RATIOS,
                        req.repeats)


def _torch_segments(torch: Any, op: str, h: np.ndarray, offsets: np.ndarray,
                    lengths: np.ndarray, notes: list[str]) -> Contender | None:
    """`torch.segment_reduce` over the same offsets; else, for sums, `index_add_`."""
    t = torch.from_numpy(h).cuda()
    if hasattr(torch, "segment_reduce"):
        to = torch.from_numpy(offsets.astype(np.int64)).cuda()
        c = _torch_contender(torch, lambda: torch.segment_reduce(t, op, offsets=to), notes,
                             f"segment_reduce {op} of {h.dtype}")
        if c is not None:
            return c
    if op != "sum":
        return None
    ids = torch.from_numpy(np.repeat(np.arange(len(lengths)), lengths)).cuda()
    return _torch_contender(
        torch, lambda: torch.zeros(len(lengths), dtype=t.dtype, device=t.device)
        .index_add_(0, ids, t), notes, f"index_add_ of {h.dtype}")


def _many(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, torch: Any,
          notes: list[str]) -> list[Case]:
    return [_many_case(q, r, req, dtype, n, torch, notes) for n in _sizes(req, "2^12")]


def _many_case(q: cl.CommandQueue, r: Any, req: BenchRequest, dtype: np.dtype, n: int,
               torch: Any, notes: list[str]) -> Case:
    """K arrays of n elements: one launch against K calls, numpy, pyopencl and torch."""
    k, op = req.many or 1, req.op
    f = NUMPY[op]
    hs = [random_input(op, dtype, (n,), 1000 * n + i) for i in range(k)]
    xs = [cla.to_device(q, h) for h in hs]
    q.finish()

    def many() -> cla.Array:
        return r.many(xs)

    def k_calls() -> list[cla.Array]:
        return [r(x) for x in xs]

    def host() -> list[Any]:
        return [f(h) for h in hs]

    def last_finish(rs: list[cla.Array]) -> None:
        rs[-1].finish()  # an in-order queue: the last one done means all are

    contenders = {
        "cltune": Contender(lambda: many().get(), lambda: block(many, lambda a: a.finish()),
                            host=many),
        "cltune-k-calls": Contender(lambda: np.array([v.get() for v in k_calls()]),
                                    lambda: block(k_calls, last_finish)),
        "numpy": Contender(lambda: np.array(host()), lambda: blocking(host)),
    }
    if op in ("sum", "min", "max"):
        cla_op = getattr(cla, op)

        def pyo() -> list[cla.Array]:
            return [cla_op(x) for x in xs]

        contenders["pyopencl-k-calls"] = Contender(lambda: np.array([v.get() for v in pyo()]),
                                                   lambda: block(pyo, last_finish))
    if torch is not None:
        contenders.update(_torch_many(torch, op, hs, notes))
    served = (entry("many", "api").explain_many(q, "norm", dtype, k, n)
              if isinstance(r, StatsReducer) else r.explain_many(k, n))
    want = np.array([f(h.astype(np.float64)) for h in hs])
    case = Case(f"{k} arrays of {count_label(n)}", k * hs[0].nbytes, str(served))
    return measure_case(case, want, close_to(_rtol(dtype, n), op in EXACT), contenders,
                        MANY_RATIOS, req.repeats)


def _torch_many(torch: Any, op: str, hs: list[np.ndarray],
                notes: list[str]) -> dict[str, Contender]:
    """`torch._foreach_norm` (norm) and K torch calls over the same arrays."""
    ts = [torch.from_numpy(h).cuda() for h in hs]
    out = {}
    if op == "norm":
        c = _torch_contender(torch, lambda: torch._foreach_norm(ts), notes, "_foreach_norm")
        if c is not None:
            out["torch-foreach"] = c
    c = _torch_contender(torch, lambda: [_torch_call(torch, op, t, None) for t in ts], notes,
                         f"{op} of {hs[0].dtype}")
    if c is not None:
        out["torch-k-calls"] = c
    return out
