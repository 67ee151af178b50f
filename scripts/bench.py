"""The GPU campaign's benchmark: `cltune bench` (cltune.cli.bench, whose samplers it uses) plus
the rows only the H200 write-ups need (batches of pyopencl, stage 1 alone, host overhead).

All contenders run in ONE process on the same data, interleaved round-robin per repeat (the
starting contender rotates), and every figure is the median over the repeats. Waits are blocking
only (`.get()`, `event.wait()`, `queue.finish()`, `torch.cuda.synchronize()`); nothing polls.

    # CPU (generic mode), as run for docs/logs/benchmarks-*.md. Device 1 = Debian's PoCL 3.1 in
    # `cltune devices` there (pick yours by index from `cltune devices`); tune, then benchmark:
    cltune tune --device 1 --db sqlite:////tmp/bench.db --storage sqlite:////tmp/bench-studies.db \
        --sizes 2^20,2^24 --trials 40 --timeout 170
    cltune tune --device 1 --op max --db sqlite:////tmp/bench.db \
        --storage sqlite:////tmp/bench-studies.db --sizes 2^24 --trials 40 --timeout 170
    python scripts/bench.py --device 1 --db sqlite:////tmp/bench.db --sizes 2^20,2^24,2^26 \
        --repeats 31 --overhead --markdown --json /tmp/bench-sum.json
    python scripts/bench.py --device 1 --db sqlite:////tmp/bench.db --op max --sizes 2^24 \
        --repeats 31 --markdown --json /tmp/bench-max.json

    # GPU mode: adds torch.sum (CUDA) rows, an OpenCL streaming-read ceiling and a plot
    python scripts/bench.py --device 0 --db URL --torch --plot /tmp/bench.png

Rows: `cltune` = r(x).get() wall time; `cltune-dev` = the same kernels' device time from
profiling events; `numpy` = numpy.<op>(host) wall time; `pyopencl` = pyopencl.array.<op>(x).get()
wall time; `numpy-Nt` (CPU mode) = numpy.<op> over N slices in N threads, this host's own
N-core SIMD reference. GPU mode adds `cltune-batch` (BATCH back-to-back r(x), then
queue.finish()) and
`pyopencl-batch` (the same for pyopencl.array.<op>(x): like for like, no read-back in either),
`cltune-stage1` (device time of stage 1 alone), `read-ceiling` (device time of a float4
grid-stride streaming-read kernel at the fastest of a few launch shapes), `torch-dev` (CUDA
events) and `torch` (BATCH back-to-back calls, then synchronize). Ratios are throughput
ratios, like for like (see RATIOS): > 1 means cltune is faster.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune import get_reducer
from cltune.cli.bench import (
    BATCH,
    batch,
    device_time,
    interleaved,
    read_ceiling,
    torch_rows,
    wall,
)
from cltune.core.buckets import count_label, parse_counts, parse_sizes
from cltune.device.select import info_for, select
from cltune.families.reduce.api import Reducer
from cltune.families.reduce.launch import Launcher

NP_OP = {"sum": np.sum, "max": np.max, "min": np.min}
CLA_OP = {"sum": cla.sum, "max": cla.max, "min": cla.min}
GPU_SIZES = "2^12,2^16,2^20,2^24,2^26,2^28"


POOL = ThreadPoolExecutor(os.cpu_count() or 1)
Sampler = Callable[[], float]  # one sample: seconds per call
#: (cltune row, other row): ratio = time(other) / time(cltune row), printed when both exist
RATIOS = (("cltune", "numpy"), ("cltune", "pyopencl"), ("cltune", "numpy-2t"),
          ("cltune-stage1", "read-ceiling"),
          ("cltune-dev", "torch-dev"), ("cltune-batch", "torch"),
          ("cltune-batch", "pyopencl-batch"))


def numpy_threads(host: np.ndarray, op: str, pool: ThreadPoolExecutor, k: int) -> Sampler:
    """numpy.<op> over k contiguous slices in k threads (numpy releases the GIL in reductions),
    then combined: what this host's cores stream with numpy's own SIMD loops -- a CPU
    reference for how far a k-core reduction can go on this machine."""
    parts = np.array_split(host, k)
    f = NP_OP[op]

    def call() -> object:
        return f(np.array(list(pool.map(f, parts))))
    return wall(call)


def launcher(r: Reducer, n: int, q: cl.CommandQueue) -> Launcher:
    """The kernels r runs for n elements: a Launcher of the config `r.explain(n)` names, on
    r's context (cltune.families.reduce.kernel's build cache hands it the reducer's built
    program)."""
    return Launcher(q.context, q.device, info_for(q.device), r.spec, r.explain(n).config)


def cltune_stage1(r: Reducer, x: cla.Array, pq: cl.CommandQueue) -> Sampler:
    """Device time of cltune's stage-1 kernel alone (the whole reduction when single-pass)."""
    la = launcher(r, x.size, pq)
    out = cla.empty(pq, (), r.spec.result_dtype)

    def sample() -> float:
        evs = la.enqueue(pq, x.base_data, x.offset // x.dtype.itemsize, x.size, out.base_data)
        evs[-1].wait()
        return (evs[0].profile.end - evs[0].profile.start) * 1e-9
    sample()
    return sample


def torch_available(want: bool) -> bool:
    if not want:
        return False
    try:
        import torch
    except ImportError as e:
        print(f"note: --torch given but torch is not importable ({e}); no torch rows")
        return False
    if not torch.cuda.is_available():
        print("note: --torch given but torch sees no CUDA device; no torch rows")
        return False
    return True


def check(name: str, got: float, host: np.ndarray, op: str) -> bool:
    want = float(NP_OP[op](host.astype(np.float64)))
    ok = bool(np.isclose(got, want, rtol=1e-4 if op == "sum" else 0.0))
    if not ok:
        print(f"  WRONG RESULT: {name} = {got!r}, numpy (float64) = {want!r}")
    return ok


def summarise(samples: dict[str, list[float]], nbytes: int) -> dict[str, dict[str, Any]]:
    res = {}
    for k, v in samples.items():
        med = statistics.median(v)
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [med, med, med]
        res[k] = {"median_s": med, "gbps": nbytes / med / 1e9,
                  "iqr_pct": 100 * (q[2] - q[0]) / med, "samples": v}
    return res


def table(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    w = [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=True)]
    return "\n".join("  ".join(c.rjust(k) for c, k in zip(r, w, strict=True))
                     for r in [head, *rows])


def run_sizes(args: argparse.Namespace, ctx: cl.Context, q: cl.CommandQueue,
              pq: cl.CommandQueue, r: Reducer, use_torch: bool) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    sizes = parse_counts(args.sizes or (GPU_SIZES if args.torch else "2^20,2^24,2^26"))
    return {str(n): bench_size(args, ctx, q, pq, r, use_torch,
                               rng.random(n, dtype=np.float32)) for n in sizes}


def bench_size(args: argparse.Namespace, ctx: cl.Context, q: cl.CommandQueue,
               pq: cl.CommandQueue, r: Reducer, use_torch: bool,
               host: np.ndarray) -> dict[str, Any]:
    n, op = host.size, args.op
    x = cla.to_device(q, host)
    x.finish()
    size = f"{n * 4 / 2**20:g} MiB" if n >= 2**18 else f"{n * 4 / 2**10:g} KiB"
    print(f"\n== {op}/float32, n = {count_label(n)} ({size}) ==")
    print(f"  config: {r.explain(n)}")
    check("cltune", float(r(x).get()), host, op)
    check("pyopencl", float(CLA_OP[op](x).get()), host, op)
    samplers: dict[str, Sampler] = {
        "cltune": wall(lambda: r(x).get()),
        "cltune-dev": device_time(launcher(r, x.size, pq), pq, x),
        "numpy": wall(lambda: NP_OP[op](host)),
        "pyopencl": wall(lambda: CLA_OP[op](x).get()),
    }
    cores = os.cpu_count() or 1
    if not args.torch and cores > 1:
        samplers[f"numpy-{cores}t"] = numpy_threads(host, op, POOL, cores)
    if args.torch:
        samplers["cltune-batch"] = batch(lambda: r(x), q.finish)
        samplers["pyopencl-batch"] = batch(lambda: CLA_OP[op](x), q.finish)
        samplers["cltune-stage1"] = cltune_stage1(r, x, pq)
        samplers["read-ceiling"] = read_ceiling(ctx, pq, x)
    if use_torch:
        samplers.update(torch_rows(host, op))
    s = summarise(interleaved(samplers, args.repeats), n * 4)
    ratios = {f"{a}/{b}": s[b]["median_s"] / s[a]["median_s"]
              for a, b in RATIOS if a in s and b in s}
    rows = [[k, f"{v['median_s'] * 1e6:,.1f}", f"{v['gbps']:.2f}", f"{v['iqr_pct']:.0f}%"]
            for k, v in s.items()]
    print(table(["contender", "median µs", "GB/s", "IQR"], rows, args.markdown))
    print("  ratios (throughput, >1 = cltune faster): "
          + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    return {"config": str(r.explain(n)), "rows": s, "ratios": ratios}


def run_overhead(args: argparse.Namespace, ctx: cl.Context, q: cl.CommandQueue,
                 r: Reducer) -> dict[str, Any]:
    """Per-call host cost of the warm reducer vs a bare enqueue of the same kernels."""
    n = 1 << parse_sizes(args.overhead_n)[0]
    host = np.random.default_rng(1).random(n, dtype=np.float32)
    x = cla.to_device(q, host)
    x.finish()
    la = launcher(r, n, q)
    b, plan, cfg = la.built(False), la.plan(n), la.cfg
    # own kernel objects of the same built program: the reducer never touches their arguments
    k1, k2 = cl.Kernel(b.stage1.program, "clt_stage1"), cl.Kernel(b.stage2.program, "clt_stage2")
    m = plan.groups * b.partials_per_group
    mf = cl.mem_flags
    partials = cl.Buffer(ctx, mf.READ_WRITE, m * b.acc_itemsize)
    ticket = cl.Buffer(ctx, mf.READ_WRITE, 4)
    cl.enqueue_fill_buffer(q, ticket, np.uint32(0), 0, 4)
    out = cl.Buffer(ctx, mf.READ_WRITE, max(8, r.spec.result_dtype.itemsize))
    k1.set_args(x.base_data, np.uint32(0), np.uint32(n), np.uint32(plan.chunk), partials,
                cl.LocalMemory(b.local_elems * b.acc_itemsize), ticket, out)
    k2.set_args(partials, np.uint32(m), out, cl.LocalMemory(cfg.wg * b.acc_itemsize))
    # (kernels do not own their buffer arguments: these locals stay alive while bare() runs)

    def bare() -> None:
        cl.enqueue_nd_range_kernel(q, k1, (plan.global_size,), (plan.wg,))
        if cfg.passes == 2:
            cl.enqueue_nd_range_kernel(q, k2, (cfg.wg,), (cfg.wg,))

    bare()
    got = np.empty(1, r.spec.result_dtype)
    cl.enqueue_copy(q, got, out)
    check("bare enqueue", float(got[0]), host, args.op)
    print(f"\n== host overhead: {args.op}/float32, n = {n}, {BATCH} back-to-back calls, then "
          f"queue.finish() ==\n  config: {r.explain(n)}")
    samplers = {"cltune r(x)": batch(lambda: r(x), q.finish),
                "bare enqueue": batch(bare, q.finish),
                "pyopencl": batch(lambda: CLA_OP[args.op](x), q.finish)}
    s = summarise(interleaved(samplers, args.repeats), n * 4)
    rows = [[k, f"{v['median_s'] * 1e6:.1f}", f"{v['iqr_pct']:.0f}%",
             f"{v['median_s'] / s['bare enqueue']['median_s']:.2f}"] for k, v in s.items()]
    print(table(["per call", "µs", "IQR", "vs bare"], rows, args.markdown))
    return {"n": n, "config": str(r.explain(n)), "rows": s,
            "ratio_cltune_bare": s["cltune r(x)"]["median_s"] / s["bare enqueue"]["median_s"]}


def plot(path: str, results: dict[str, Any]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib is not importable; no plot written to {path}")
        return
    ns = [int(n) for n in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in results[str(ns[0])]["rows"]:
        ax.plot(ns, [results[str(n)]["rows"][name]["gbps"] for n in ns], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="n (float32 elements)", ylabel="GB/s (bytes read / median time)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["axis"], ["segments"]):  # the axis family's modes: scripts/bench_axis.py
        import runpy

        sys.argv = ["bench_axis.py", *argv[1:], *(["--no-axis"] if argv[0] == "segments"
                                                   else [])]
        runpy.run_path(str(Path(__file__).with_name("bench_axis.py")), run_name="__main__")
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="`bench.py axis ...` / `bench.py segments ...`: the "
                                "axis and segment modes (scripts/bench_axis.py, same options)")
    p.add_argument("--device", required=True, help="index, P:D or name (as `cltune devices`)")
    p.add_argument("--db", required=True, help="tuning database URL")
    p.add_argument("--sizes", default=None,
                   help=f"default 2^20,2^24,2^26 ({GPU_SIZES} with --torch)")
    p.add_argument("--op", default="sum", choices=sorted(NP_OP))
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--json", default=None, help="write all samples and medians here")
    p.add_argument("--markdown", action="store_true", help="print tables as Markdown")
    p.add_argument("--overhead", action="store_true", help="add the host-overhead section")
    p.add_argument("--overhead-n", default="2^12")
    p.add_argument("--torch", action="store_true", help="GPU mode: torch rows, read ceiling")
    p.add_argument("--plot", default=None, help="PNG of GB/s vs n (needs matplotlib)")
    args = p.parse_args(argv)

    info, dev = select(args.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    pq = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    r = get_reducer(q, op=args.op, dtype=np.float32, db=args.db)
    use_torch = torch_available(args.torch)
    print(f"device: {info.name} | {info.platform_version} | {info.compute_units} CUs\n"
          f"date: {datetime.datetime.now().isoformat(timespec='seconds')} | numpy "
          f"{np.__version__} | pyopencl {cl.VERSION_TEXT} | repeats {args.repeats} | "
          f"db level: {r.level}")
    report: dict[str, Any] = {"device": info.name, "platform": info.platform_version,
                              "op": args.op, "argv": sys.argv, "repeats": args.repeats,
                              "date": datetime.datetime.now().isoformat(timespec="seconds")}
    report["sizes"] = run_sizes(args, ctx, q, pq, r, use_torch)
    if args.overhead:
        report["overhead"] = run_overhead(args, ctx, q, r)
    if args.plot:
        plot(args.plot, report["sizes"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"json written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
