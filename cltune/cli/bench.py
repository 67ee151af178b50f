"""`cltune bench`: how fast is the tuned reduction on this device, against what?

All contenders run in ONE process on the same data, interleaved round-robin per repeat (the
starting contender rotates), and every figure is the median over the repeats; every contender's
answer is checked against numpy (float64) first. Waits are blocking only. Rows:

- `cltune`: `r(x).get()` wall time per call, as an application that waits for each result sees
  it (tuned config); `cltune-batch`: back-to-back `r(x)` calls, one `queue.finish()` (the rate
  when it does not wait; like torch's row);
- `cltune-dev`: the same kernels' device time (profiling events, first start to last end);
- `tuned` / `builtin`: the tuned config and the builtin one (what `get_reducer` runs on a device
  never tuned) launched the same way, back to back, one finish: what tuning buys (no
  `builtin` row where the tuned answer is the builtin config: the ratio is 1 by definition);
- `read-ceiling`: device time of a float4 grid-stride streaming read of x at the best of a few
  launch shapes, on every device type: the memory-bound limit;
- `numpy`, `numpy-Nt` (numpy over N slices in N threads, N = host cores), `pyopencl`
  (`pyopencl.array.<op>(x).get()`);
- `torch-dev`, `torch` when torch is importable and sees a CUDA device and the device is NVIDIA's.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune.core.ops import OpSpec
from cltune.device.info import DeviceInfo
from cltune.families.reduce.api import get_reducer  # the plain reductions (stats: bench_expr)
from cltune.families.reduce.defaults import builtin_config
from cltune.families.reduce.launch import Launcher
from cltune.opencl.caches import clear_caches
from cltune.opencl.host_part import enqueue_floor
from cltune.opencl.host_part import measure as measure_host_part
from cltune.opencl.measure import device_seconds

Sampler = Callable[[], float]  # one sample: seconds per call
NP_OP = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}
TORCH_OP = {"sum": "sum", "max": "amax", "min": "amin", "prod": "prod"}
BATCH = 200
#: (cltune row, other row): ratio = time(other) / time(cltune row); > 1 means cltune is faster
RATIOS = (("cltune", "numpy"), ("cltune", "numpy-Nt"), ("cltune", "pyopencl"),
          ("tuned", "builtin"), ("cltune", "read-ceiling"), ("cltune-dev", "read-ceiling"),
          ("cltune-dev", "torch-dev"), ("cltune-batch", "torch"))
READ_SRC = """
__kernel void read_ceiling(__global const float4 *x, const ulong n4, __global float *out) {
    const size_t gid = get_global_id(0), gsz = get_global_size(0);
    float4 a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
    size_t i = gid;
    for (; i + 3 * gsz < n4; i += 4 * gsz) {
        a += x[i]; b += x[i + gsz]; c += x[i + 2 * gsz]; d += x[i + 3 * gsz];
    }
    for (; i < n4; i += gsz) a += x[i];
    const float4 s = (a + b) + (c + d);
    out[gid] = (s.x + s.y) + (s.z + s.w);
}
/* contiguous chunks of float16 per work-item: the layout a CPU streams best */
__kernel void read_chunks(__global const float16 *x, const ulong n16, const ulong chunk,
                          __global float *out) {
    const size_t gid = get_global_id(0);
    const ulong start = gid * chunk, end = min(start + chunk, n16);
    float16 a = 0.0f, b = 0.0f;
    ulong i = start;
    for (; i + 1 < end; i += 2) { a += x[i]; b += x[i + 1]; }
    if (i < end) a += x[i];
    const float16 s = a + b;
    const float8 t = s.lo + s.hi;
    const float4 u = t.lo + t.hi;
    out[gid] = (u.x + u.y) + (u.z + u.w);
}
"""


@dataclass(frozen=True)
class Row:
    median_s: float
    gbps: float
    iqr_pct: float
    samples: tuple[float, ...]


@dataclass
class SizeResult:
    n: int
    config: str  # what serves n, and where that answer came from (Reducer.explain)
    rows: dict[str, Row] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    wrong: dict[str, str] = field(default_factory=dict)  # contender -> what it answered
    host_us: float | None = None  # cltune's call with the enqueue stubbed (see host_parts)
    launches: float | None = None  # enqueues per call


@dataclass
class Report:
    device: str
    platform: str
    op: str
    dtype: str
    repeats: int
    level: str  # fallback level of the tuned answer
    sizes: list[SizeResult]
    notes: list[str]
    floor_us: float | None = None  # the device's bare enqueue (host_parts)

    def any_wrong(self) -> bool:
        """Whether a config of cltune's answered wrong (the exit code); pyopencl disagreeing
        with numpy is listed, not cltune's failure."""
        return any(k != "pyopencl" for s in self.sizes for k in s.wrong)


def host_parts(q: cl.CommandQueue, results: Sequence[Any]) -> float:
    """After every result is timed: the host part of each one's cltune call (a `_host`
    attribute, set where the result was measured: the call with the enqueue stubbed,
    cltune.opencl.host_part) into its `host_us` and `launches`, and the device's bare-enqueue
    floor in µs (returned). Then `clear_caches()`: stubbed calls leave a chained scanner's
    tickets ahead of the device, so nothing made before may launch again."""
    floor = enqueue_floor(q).us
    for res in results:
        call = res.__dict__.pop("_host", None)
        if call is not None:
            part = measure_host_part(call, q)
            res.host_us, res.launches = part.us, part.launches
    clear_caches()
    return floor


def interleaved(samplers: dict[str, Sampler], repeats: int) -> dict[str, list[float]]:
    names = list(samplers)
    out: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(repeats):
        for i in range(len(names)):
            name = names[(rep + i) % len(names)]
            out[name].append(samplers[name]())
    return out


def wall(call: Callable[[], object], min_sample_s: float = 0.01) -> Sampler:
    """Wall time per call of a blocking `call`, averaged over enough calls for ~min_sample_s."""
    call()
    t0 = time.perf_counter()
    call()
    inner = max(1, min(BATCH, int(min_sample_s / max(time.perf_counter() - t0, 1e-7))))

    def sample() -> float:
        t = time.perf_counter()
        for _ in range(inner):
            call()
        return (time.perf_counter() - t) / inner
    return sample


def batch(call: Callable[[], object], finish: Callable[[], object]) -> Sampler:
    """Host time per call of BATCH back-to-back calls, then one blocking finish: the rate an
    application sustains when it does not wait for each result."""
    call()
    finish()

    def sample() -> float:
        t = time.perf_counter()
        for _ in range(BATCH):
            call()
        finish()
        return (time.perf_counter() - t) / BATCH
    return sample


def launched(la: Launcher, q: cl.CommandQueue, x: cla.Array, out: cla.Array) -> Sampler:
    """One config launched back to back (BATCH calls, one finish), as the tuner ranks its
    finalists (`Bench.per_call`)."""
    return batch(lambda: la.enqueue(q, x.base_data, x.offset // x.dtype.itemsize, x.size,
                                    out.base_data), q.finish)


def device_time(la: Launcher, pq: cl.CommandQueue, x: cla.Array) -> Sampler:
    out = cla.empty(pq, (), la.spec.result_dtype)

    def sample() -> float:
        return device_seconds(la.enqueue(pq, x.base_data, x.offset // x.dtype.itemsize, x.size,
                                         out.base_data))
    sample()
    return sample


def read_ceiling(ctx: cl.Context, pq: cl.CommandQueue, x: cla.Array) -> Sampler | None:
    """A streaming read of x's bytes at the fastest of two layouts (grid-stride float4, the
    GPU way; a contiguous float16 chunk per work-item, the CPU way) and a grid of launch
    shapes, so that the ceiling is not set low by a layout that suits another kind of device."""
    n4, n16 = x.nbytes // 16, x.nbytes // 64
    if n16 < 1:
        return None
    prg = cl.Program(ctx, READ_SRC).build()
    stride, chunks = prg.read_ceiling, prg.read_chunks
    cus, max_wg = pq.device.max_compute_units, pq.device.max_work_group_size
    runs: list[Callable[[], cl.Event]] = []
    keep = []  # output buffers stay alive while the samplers run
    for wg in (1, 8, 64, 256, 1024):
        if wg > max_wg:
            continue
        for per_cu in (1, 2, 4, 8, 16, 64):
            groups = max(1, min(-(-n4 // wg), cus * per_cu))
            g = groups * wg
            buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, g * 4)
            keep.append(buf)
            runs.append(lambda g=g, wg=wg, buf=buf: stride(pq, (g,), (wg,), x.base_data,
                                                           np.uint64(n4), buf))
            chunk = -(-n16 // g)
            runs.append(lambda g=g, wg=wg, buf=buf, chunk=chunk: chunks(
                pq, (g,), (wg,), x.base_data, np.uint64(n16), np.uint64(chunk), buf))

    def timed(run: Callable[[], cl.Event]) -> float:
        ev = run()
        ev.wait()
        return (ev.profile.end - ev.profile.start) * 1e-9

    best = min(runs, key=lambda run: statistics.median(timed(run) for _ in range(3)))
    return lambda: (timed(best), keep)[0]


def torch_rows(host: np.ndarray, op: str) -> dict[str, Sampler]:
    import torch  # lazy: optional and heavy (only on NVIDIA devices where torch sees CUDA)

    t = torch.from_numpy(host).cuda()
    fn = getattr(torch, TORCH_OP[op])
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def dev() -> float:
        start.record()
        fn(t)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3

    def batch() -> float:
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn(t)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / BATCH

    fn(t)
    torch.cuda.synchronize()
    return {"torch-dev": dev, "torch": batch}


def torch_usable(info: DeviceInfo) -> str:
    """'' when torch rows can run beside this device, else why not (a note for the report)."""
    if not info.is_nvidia:
        return ""  # not a CUDA device: no torch row, nothing to say
    try:
        import torch  # lazy: optional and heavy; only asked on NVIDIA devices
    except ImportError:
        return "torch is not importable: no torch rows"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device: no torch rows"
    return "ok"


def _close(spec: OpSpec, got: float, want: float, n: int) -> bool:
    if spec.op in ("min", "max") or not spec.is_float:
        return got == want
    return bool(np.isclose(got, want, rtol=max(1e-5, 1e-7 * np.sqrt(n)), atol=1e-6))


def measure_size(r: Any, info: DeviceInfo, ctx: cl.Context, q: cl.CommandQueue,
                 pq: cl.CommandQueue, n: int, repeats: int, torch_ok: bool,
                 pool: ThreadPoolExecutor) -> SizeResult:
    """Every contender on the same n random inputs (validated first), interleaved."""
    spec: OpSpec = r.spec
    rng = np.random.default_rng(n)
    if not spec.is_float:
        host = rng.integers(1, 3, n) if spec.op == "prod" else rng.integers(-1000, 1000, n)
    else:
        host = rng.uniform(0.999, 1.001, n) if spec.op == "prod" else rng.random(n)
    host = host.astype(spec.np_dtype)
    want = float(NP_OP[spec.op](host.astype(np.float64)))
    x = cla.to_device(q, host)
    x.finish()
    res = SizeResult(n, str(r.explain(n)))
    tuned = Launcher(ctx, q.device, info, spec, r.explain(n).config)
    # the builtin config an untuned device serves at this size
    base = Launcher(ctx, q.device, info, spec, builtin_config(info, spec, n))
    out = cla.empty(q, (), spec.result_dtype)
    cla_op = getattr(cla, spec.op) if spec.op != "prod" else None
    answers: dict[str, Callable[[], float]] = {
        "cltune": lambda: float(r(x).get()),
        "tuned": lambda: float((tuned.enqueue(q, x.base_data, 0, n, out.base_data), out.get())[1]),
        "builtin": lambda: float((base.enqueue(q, x.base_data, 0, n, out.base_data),
                                  out.get())[1]),
    }
    same = base.cfg == tuned.cfg  # the tuned answer is the builtin config: nothing to compare
    if same:
        del answers["builtin"]
    if cla_op is not None:
        answers["pyopencl"] = lambda: float(cla_op(x).get())
    for name, f in answers.items():
        got = f()
        if not _close(spec, got, want, n):
            res.wrong[name] = f"{got!r} (numpy: {want!r})"
    samplers: dict[str, Sampler] = {
        "cltune": wall(lambda: r(x).get()),
        "cltune-batch": batch(lambda: r(x), q.finish),
        "cltune-dev": device_time(tuned, pq, x),
        "tuned": launched(tuned, q, x, out),
        "numpy": wall(lambda: NP_OP[spec.op](host)),
    }
    if not same:
        samplers["builtin"] = launched(base, q, x, out)
    cores = os.cpu_count() or 1
    if cores > 1:
        parts, f = np.array_split(host, cores), NP_OP[spec.op]
        samplers["numpy-Nt"] = wall(lambda: f(np.array(list(pool.map(f, parts)))))
    if cla_op is not None:
        samplers["pyopencl"] = wall(lambda: cla_op(x).get())
    ceiling = read_ceiling(ctx, pq, x)
    if ceiling is not None:
        samplers["read-ceiling"] = ceiling
    if torch_ok:
        samplers.update(torch_rows(host, spec.op))
    for name in res.wrong:  # a wrong answer is reported, never timed
        samplers.pop(name, None)
    for name, v in interleaved(samplers, repeats).items():
        med = statistics.median(v)
        q4 = statistics.quantiles(v, n=4) if len(v) > 1 else [med, med, med]
        res.rows[name] = Row(med, host.nbytes / med / 1e9, 100 * (q4[2] - q4[0]) / med,
                             tuple(v))
    res.ratios = {f"{a}/{b}": res.rows[b].median_s / res.rows[a].median_s
                  for a, b in RATIOS if a in res.rows and b in res.rows}
    if same:
        res.ratios["tuned/builtin"] = 1.0  # one config: tuning kept the builtin one
    if "cltune-batch" in res.rows:
        res.__dict__["_host"] = lambda: r(x)  # measured after every size (host_parts)
    return res


def run_benchmark(q: cl.CommandQueue, info: DeviceInfo, op: str, dtype: str, sizes: list[int],
                  repeats: int, db: str | None) -> Report:
    """The benchmark of `get_reducer(q, op, dtype, db=db)` on each size."""
    ctx = q.context
    pq = cl.CommandQueue(ctx, q.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    r = get_reducer(q, op=op, dtype=dtype, db=db)
    if r.spec.op == "dot":
        raise ValueError("cltune bench measures one-array reductions; dot is not offered")
    why = torch_usable(info)
    notes = [why] if why not in ("", "ok") else []
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = [measure_size(r, info, ctx, q, pq, n, repeats, why == "ok", pool)
                   for n in sizes]
    floor = host_parts(q, results)
    return Report(info.name, info.platform_version, r.spec.op, r.spec.dtype, repeats, r.level,
                  results, notes, floor)


def require_matplotlib() -> None:
    """Raise a clear ImportError now (before a long benchmark) when the plot cannot be made."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--plot needs matplotlib: pip install matplotlib (cltune's [plot] "
                          "extra)")


def plot(report: Report, path: str) -> None:
    """GB/s against n per contender (PNG). Needs matplotlib."""
    require_matplotlib()
    import matplotlib  # lazy: optional (cltune[plot]) and slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after use("Agg"): no display needed

    names = list(dict.fromkeys(k for s in report.sizes for k in s.rows))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        pts = [(s.n, s.rows[name].gbps) for s in report.sizes if name in s.rows]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel=f"n ({report.dtype} elements)", ylabel="GB/s (bytes read / median time)",
           title=f"{report.op}/{report.dtype} on {report.device}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
