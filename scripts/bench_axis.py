#!/usr/bin/env python3
"""Axis and segmented reductions, side by side in one process: cltune's `r(x, axis=k)` and
`r.segments` against torch (`sum(dim=k)`, `segment_reduce`) on CUDA when importable, numpy on
the host and a Python loop of `pyopencl.array.sum` over rows (the pyopencl way) on any device.

Timed in blocks (never alternating call by call: two CUDA contexts time-slice), medians of
--repeats blocks; results are validated against numpy first. Device time: OpenCL profiling
events (cltune) and CUDA events (torch), per call over back-to-back calls; end to end: wall
time per call of back-to-back calls with one wait at the end.

    python scripts/bench_axis.py --device 0 --json out.json --plot axis.png
    python scripts/bench_axis.py --device 0 --shapes 1048576x16,4096x4096 --no-segments
    python scripts/bench.py axis --device 0 ...   (the same, from scripts/bench.py)
"""

# ruff: noqa: B023, E731 - the timing lambdas run within their loop iteration, never later
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

SHAPES = "1048576x16,262144x64,65536x256,4096x4096,16x1048576,4194304x4,16777216x2,16384x16384"


def _blocks(fn, calls: int, repeats: int) -> float:
    """Median over `repeats` blocks of the seconds per call of `calls` back-to-back calls."""
    fn(1)
    return statistics.median(fn(calls) for _ in range(repeats))


def _ocl_wall(q: cl.CommandQueue, call):  # noqa: ANN001, ANN202
    def run(k: int) -> float:
        q.finish()
        t0 = time.perf_counter()
        for _ in range(k):
            res = call()
        res.finish() if hasattr(res, "finish") else q.finish()
        q.finish()
        return (time.perf_counter() - t0) / k
    return run


def _ocl_device(q: cl.CommandQueue, call):  # noqa: ANN001, ANN202
    """Per call: from the first kernel's start to the last one's end, median of k calls."""
    def run(k: int) -> float:
        t = []
        for _ in range(k):
            q.finish()
            evs = call()
            evs[-1].wait()
            t.append((evs[-1].profile.end - evs[0].profile.start) * 1e-9)
        return statistics.median(t)
    return run


def _torch_device(torch, fn):  # noqa: ANN001, ANN202
    def run(k: int) -> float:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(k):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3 / k
    return run


def _host(fn):  # noqa: ANN001, ANN202
    def run(k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        return (time.perf_counter() - t0) / k
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="0")
    ap.add_argument("--db", default=None, help="tuning database (default: cltune's)")
    ap.add_argument("--shapes", default=SHAPES, help="ROWSxCOLS,... (fp32 each)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20, help="calls per block")
    ap.add_argument("--no-segments", action="store_true")
    ap.add_argument("--no-axis", action="store_true", help="segments only")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--loop-rows", type=int, default=4096,
                    help="time the pyopencl loop over rows up to this many rows")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import cltune
    from cltune.device.select import select
    from cltune.families.axis.api import axis_engine, explain_axis
    from cltune.families.axis.segments import explain_segments

    info, dev = select(a.device)
    ctx = cl.Context([dev])
    pq = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    q = cl.CommandQueue(ctx, dev)
    torch = None
    if not a.no_torch:
        try:
            import torch as _t
            torch = _t if _t.cuda.is_available() else None
        except ImportError:
            torch = None
    r = cltune.get_reducer(q, "sum", np.float32, db=a.db)
    rp = cltune.get_reducer(pq, "sum", np.float32, db=a.db)
    eng = axis_engine(rp)
    print(f"device: {info.name} ({info.platform_version[:50]}); torch: "
          f"{torch.__version__ if torch else 'no'}; medians of {a.repeats} blocks")
    rows_out = []
    rng = np.random.default_rng(0)
    for text in [] if a.no_axis else a.shapes.split(","):
        m_, n_ = (int(v) for v in text.lower().split("x"))
        x = rng.random((m_, n_), dtype=np.float32)
        xd = cla.to_device(q, x)
        flat = xd.reshape(m_ * n_)
        nbytes = x.nbytes
        la1 = rp._eng.launcher_for(flat.size)[0]  # the 1-D config r(flat) runs
        out1 = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8)
        one_d = _blocks(_ocl_device(pq, lambda: la1.enqueue(pq, flat.base_data, 0, flat.size,
                                                            out1)), a.calls, a.repeats)
        for axis in (1, 0):
            want = x.sum(axis=axis, dtype=np.float64)
            got = r(xd, axis=axis).get()
            err = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(x).sum(axis=axis))))
            ex = explain_axis(rp, x.shape, axis)
            kind, (ka, kb) = ex.variant.rsplit("/", 1)[1], ex.shape
            la = eng.launcher(ex.config, "cols" if kind == "cols" else "rows")
            if kind == "rows":
                dcall = lambda: la.rows(pq, xd.base_data, 0, ka, kb, out.base_data)
            else:
                dcall = lambda: la.cols(pq, xd.base_data, 0, 1, ka, kb, out.base_data)
            out = cla.empty(q, want.shape, np.float32)
            row = {"shape": text, "axis": axis, "config": ex.config.short(), "level": ex.level,
                   "class": ex.size_class, "max_rel_err": err}
            row["cltune_dev_us"] = _blocks(_ocl_device(pq, dcall), a.calls, a.repeats) * 1e6
            row["cltune_e2e_us"] = _blocks(_ocl_wall(q, lambda: r(xd, axis=axis)), a.calls,
                                           a.repeats) * 1e6
            row["sum1d_dev_us"] = one_d * 1e6
            row["numpy_us"] = _blocks(_host(lambda: x.sum(axis=axis)), max(1, a.calls // 4),
                                      a.repeats) * 1e6
            if torch is not None:
                xt = torch.from_numpy(x).cuda()
                row["torch_dev_us"] = _blocks(_torch_device(torch, lambda: xt.sum(dim=axis)),
                                              a.calls, a.repeats) * 1e6
                del xt
            if axis == 1 and m_ <= a.loop_rows and info.type == "cpu" or (axis == 1 and m_ <= 64):
                rows_views = [xd[i] for i in range(m_)]
                row["pyopencl_loop_us"] = _blocks(_ocl_wall(q, lambda: [cla.sum(v) for v in
                                                                        rows_views][-1]),
                                                  1, max(3, a.repeats // 2)) * 1e6
            row["gbps"] = nbytes / row["cltune_dev_us"] / 1e3
            row["sum1d_gbps"] = nbytes / one_d / 1e9
            rows_out.append(row)
            _print(row)
    seg_rows = [] if a.no_segments else _segments(a, q, pq, r, rp, eng, torch, explain_segments)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info.name, "axis": rows_out, "segments": seg_rows}, f, indent=1)
    if a.plot:
        _plot(a.plot, info.name, rows_out)
    return 0


def _print(row: dict) -> None:
    t = row.get("torch_dev_us")
    ratio = f" torch/cltune {t / row['cltune_dev_us']:.2f}x" if t else ""
    loop = row.get("pyopencl_loop_us")
    loop_s = f" loop/cltune {loop / row['cltune_e2e_us']:.1f}x" if loop else ""
    print(f"{row['shape']:>14} axis {row['axis']}: cltune {row['cltune_dev_us']:8.1f} us dev "
          f"({row['gbps']:6.0f} GB/s, {row['gbps'] / row['sum1d_gbps']:.2f} of 1-D sum) "
          f"{row['cltune_e2e_us']:8.1f} us e2e | numpy {row['numpy_us']:9.1f} us "
          f"(numpy/cltune e2e {row['numpy_us'] / row['cltune_e2e_us']:.2f}x){ratio}{loop_s} "
          f"[{row['config']}; {row['level']} {row['class']}; err {row['max_rel_err']:.1e}]",
          flush=True)


def _segments(a, q, pq, r, rp, eng, torch, explain_segments) -> list[dict]:  # noqa: ANN001
    rng = np.random.default_rng(1)
    cases = {"2^16 x 256": np.full(1 << 16, 256), "2^20 x 16": np.full(1 << 20, 16)}
    pl = np.minimum((rng.pareto(1.2, 1 << 18) * 16).astype(np.int64) + 1, 1 << 16)
    cases["power-law"] = pl
    out = []
    for name, lens in cases.items():
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        x = rng.random(int(offs[-1]), dtype=np.float32)
        xd, od = cla.to_device(q, x), cla.to_device(q, offs)
        got = r.segments(xd, od).get()
        want = np.add.reduceat(x.astype(np.float64), offs[:-1])
        err = float(np.max(np.abs(got - want) / np.maximum(1, want)))
        ex = explain_segments(rp, lens.size, x.size)
        la = eng.launcher(ex.config, "rows")
        res = cla.empty(q, (lens.size,), np.float32)
        init = la.built().acc_dtype.type(-0.0)
        errb = eng.err(pq)
        dcall = lambda: la.segs(pq, xd.base_data, 0, x.size, od.base_data, False,
                                lens.size, init, errb, res.base_data)
        row = {"case": name, "segments": int(lens.size), "n": int(x.size),
               "config": ex.config.short(), "level": ex.level, "max_rel_err": err}
        row["cltune_dev_us"] = _blocks(_ocl_device(pq, dcall), a.calls, a.repeats) * 1e6
        row["cltune_e2e_us"] = _blocks(_ocl_wall(q, lambda: r.segments(xd, od)), a.calls,
                                       a.repeats) * 1e6
        if torch is not None:
            xt = torch.from_numpy(x).cuda()
            lt = torch.from_numpy(lens.astype(np.int64)).cuda()
            row["torch_dev_us"] = _blocks(_torch_device(torch, lambda: torch.segment_reduce(
                xt, "sum", lengths=lt, axis=0)), a.calls, a.repeats) * 1e6
        row["gbps"] = x.nbytes / row["cltune_dev_us"] / 1e3
        out.append(row)
        t = row.get("torch_dev_us")
        print(f"segments {name:>11} ({lens.size} of mean {x.size / lens.size:.0f}): cltune "
              f"{row['cltune_dev_us']:8.1f} us dev ({row['gbps']:.0f} GB/s) "
              f"{row['cltune_e2e_us']:8.1f} us e2e"
              + (f" | torch {t:8.1f} us, torch/cltune {t / row['cltune_dev_us']:.2f}x"
                 if t else "")
              + f" [{row['config']}; {row['level']}; err {err:.1e}]", flush=True)
    return out


def _plot(path: str, name: str, rows: list[dict]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot needs matplotlib (pip install 'cltune[plot]')", file=sys.stderr)
        return
    labels = [f"{r['shape']}\naxis {r['axis']}" for r in rows]
    xs = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.7), 4.5))
    ax.bar(xs - 0.2, [r["gbps"] for r in rows], 0.4, label="cltune")
    if any("torch_dev_us" in r for r in rows):
        ax.bar(xs + 0.2, [r["cltune_dev_us"] * r["gbps"] / r.get("torch_dev_us", np.inf)
                          for r in rows], 0.4, label="torch")
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_ylabel("GB/s (device time)")
    ax.set_title(f"sum along an axis, fp32, {name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
