"""Host cost per call of the warm reducer against one bare pyopencl enqueue (issue 14, item 2).

Rows, all in ONE process on the same data, in interleaved blocks (the starting row rotates per
round); a block is CALLS back-to-back calls then one `queue.finish()`, and a row's figure is the
median over BLOCKS blocks of the block's time / CALLS (µs per call):

- `bare enqueue`: `cl.enqueue_nd_range_kernel` of a trivial kernel (one work-item), arguments
  set once: the floor any OpenCL call from Python pays;
- `same kernels, bare`: the served config's own kernels (stage 1, and stage 2 for two passes),
  arguments set once, enqueued as bare calls: host floor plus this reduction's device work;
- `launcher.enqueue`: `Launcher.enqueue` (argument setting, scratch, events);
- `r(x)`, `r(x, out=o)`: the public call (a fresh 0-d result per call / one reused result);
  `r(view)`: r(x[:]), an array whose flags pyopencl has not computed (slices, `cla.empty`,
  results of array arithmetic);
- `recorded launch` (with `--command-buffer`, where the device offers cl_khr_command_buffer):
  the same kernels recorded once in a command buffer, `clEnqueueCommandBufferKHR` per call
  through ctypes, beside `same kernels, ctypes` (the bare launch through the same ctypes path);
- `torch.sum` when torch is importable and sees a CUDA device.

Ratios are time(row) / time(bare enqueue): the target is r(x) and r(x, out=o) <= 1.1. `host CPU`
is the calling thread's CPU time per call while enqueuing (time.thread_time): our Python and the
driver's enqueue, without the device's share (which on a CPU device competes for the same cores).

    python scripts/per_call.py --device 1 --calls 2000 --blocks 15 --command-buffer
    python scripts/per_call.py --device 0 --json /tmp/per-call.json   # e.g. the H200
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune import get_reducer
from cltune.core.buckets import parse_sizes
from cltune.device.select import select
from cltune.families.reduce.api import Reducer
from cltune.families.reduce.kernel import _build

Block = Callable[[int], tuple[float, float]]  # calls -> (wall, host CPU) seconds per call
TRIVIAL = "__kernel void trivial(__global float *o) { o[get_global_id(0)] = 1.0f; }"


def block(call: Callable[[], object], finish: Callable[[], object]) -> Block:
    """`calls` back-to-back calls, then one finish: wall seconds per call, and the calling
    thread's CPU seconds per call while it enqueued (the host cost, whatever the device does)."""
    call()
    finish()

    def run(calls: int) -> tuple[float, float]:
        t, c = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            call()
        c = time.thread_time() - c
        finish()
        return (time.perf_counter() - t) / calls, c / calls
    return run


def bare_kernels(r: Reducer, x: cla.Array) -> tuple[list[tuple[cl.Kernel, tuple, tuple]], Any]:
    """The served config's kernels as own kernel objects (the reducer never touches their
    arguments), arguments set once; and the buffers they use (kept alive by the caller)."""
    n, q = x.size, r.queue
    la = r._eng.launcher_for(n)[0]
    # a build of its own (the binary cache makes it cheap): kernels no launcher touches
    b, plan, cfg = _build(q.context, q.device, la.info, la.spec, la.cfg, False), la.plan(n), la.cfg
    k1, k2 = b.stage1, b.stage2
    m = plan.groups * b.partials_per_group
    mf = cl.mem_flags
    partials = cl.Buffer(q.context, mf.READ_WRITE | mf.COPY_HOST_PTR,
                         hostbuf=np.zeros(max(m * b.acc_itemsize, 8), np.uint8))
    ticket = cl.Buffer(q.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(1, np.uint32))
    out = cl.Buffer(q.context, mf.READ_WRITE, 8)
    vals = {"x": x.base_data, "xoff": np.uint32(0), "n": np.uint32(n),
            "chunk": np.uint32(plan.chunk), "partials": partials,
            "tile": cl.LocalMemory(b.local_elems * b.acc_itemsize), "ticket": ticket, "out": out}
    k1.set_args(*[vals[name] for name in la._s1.names])
    launches = [(k1, (plan.global_size,), (plan.wg,))]
    if cfg.passes == 2:
        k2.set_args(partials, np.uint32(m), out, cl.LocalMemory(cfg.wg * b.acc_itemsize))
        launches.append((k2, (cfg.wg,), (cfg.wg,)))
    return launches, (partials, ticket, out)


def _libopencl() -> ctypes.CDLL:
    """The OpenCL ICD loader: the system's, else the one a pyopencl wheel bundles."""
    try:
        return ctypes.CDLL("libOpenCL.so.1")
    except OSError:
        libs = Path(cl.__file__).parent.parent / "pyopencl.libs"
        for path in sorted(libs.glob("libOpenCL*")):
            return ctypes.CDLL(str(path))
        raise


class CommandBuffer:
    """cl_khr_command_buffer through ctypes (pyopencl does not wrap it): kernels recorded once,
    one `clEnqueueCommandBufferKHR` per call."""

    def __init__(self, q: cl.CommandQueue, launches: list[tuple[cl.Kernel, tuple, tuple]]) -> None:
        lib = _libopencl()
        get = lib.clGetExtensionFunctionAddressForPlatform
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
        vp, u32, pp = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_size_t)

        def fn(name: str, res: Any, *args: Any) -> Any:
            addr = get(q.device.platform.int_ptr, name.encode())
            if not addr:
                raise RuntimeError(f"{name} not found")
            return ctypes.CFUNCTYPE(res, *args)(addr)

        i32 = ctypes.c_int32
        create = fn("clCreateCommandBufferKHR", vp, u32, ctypes.POINTER(vp), vp,
                    ctypes.POINTER(i32))
        record = fn("clCommandNDRangeKernelKHR", i32, vp, vp, vp, vp, u32, pp, pp, pp, u32, vp,
                    vp, vp)
        finalize = fn("clFinalizeCommandBufferKHR", i32, vp)
        self._enqueue = fn("clEnqueueCommandBufferKHR", i32, u32, vp, vp, u32, vp, vp)
        self._ndrange = lib.clEnqueueNDRangeKernel
        self._ndrange.restype = i32
        self._ndrange.argtypes = [vp, vp, u32, pp, pp, pp, u32, vp, vp]
        err = i32(0)
        self._q = vp(q.int_ptr)
        self.simultaneous = False
        for props in ((ctypes.c_uint64 * 3)(0x1293, 1, 0), None):  # SIMULTANEOUS_USE, or not
            self._cb = create(1, ctypes.byref(self._q), props, ctypes.byref(err))
            if err.value == 0:
                self.simultaneous = props is not None
                break
        if err.value:
            raise RuntimeError(f"clCreateCommandBufferKHR: {err.value}")
        self._sizes = [((ctypes.c_size_t * 1)(g[0]), (ctypes.c_size_t * 1)(lo[0]), vp(k.int_ptr))
                       for k, g, lo in launches]
        for g, lo, k in self._sizes:
            rc = record(self._cb, None, None, k, 1, None, g, lo, 0, None, None, None)
            if rc:
                raise RuntimeError(f"clCommandNDRangeKernelKHR: {rc}")
        if rc := finalize(self._cb):
            raise RuntimeError(f"clFinalizeCommandBufferKHR: {rc}")

    def launch(self) -> None:
        if rc := self._enqueue(0, None, self._cb, 0, None, None):
            raise RuntimeError(f"clEnqueueCommandBufferKHR: {rc}")

    def bare(self) -> None:
        for g, lo, k in self._sizes:
            if rc := self._ndrange(self._q, k, 1, None, g, lo, 0, None, None):
                raise RuntimeError(f"clEnqueueNDRangeKernel: {rc}")


def torch_block(n: int) -> Block | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    t = torch.rand(n, device="cuda")
    return block(lambda: torch.sum(t), torch.cuda.synchronize)


def check(name: str, got: float, want: float) -> None:
    if not np.isclose(got, want, rtol=1e-4):
        raise SystemExit(f"{name} answered {got}, numpy {want}: not timed")


def measure(r: Reducer, n: int, args: argparse.Namespace, trivial: cl.Kernel,
            notes: list[str]) -> dict[str, Any]:
    q = r.queue
    host = np.random.default_rng(n).random(n, dtype=np.float32)
    want = float(host.astype(np.float64).sum())
    x = cla.to_device(q, host)
    o = cla.empty(q, (), np.float32)
    la = r._eng.launcher_for(n)[0]
    launches, keep = bare_kernels(r, x)
    check("r(x)", float(r(x).get()), want)
    check("r(x, out=o)", float(r(x, out=o).get()), want)
    view = x[:]  # a view: pyopencl computes its flags lazily (before 2026-12 a slow path)
    check("r(view)", float(r(view).get()), want)
    for k, g, lo in launches:
        cl.enqueue_nd_range_kernel(q, k, g, lo)
    got = np.zeros(1, np.float32)
    cl.enqueue_copy(q, got, keep[2])
    check("same kernels, bare", float(got[0]), want)

    def same() -> None:
        for k, g, lo in launches:
            cl.enqueue_nd_range_kernel(q, k, g, lo)

    rows: dict[str, Block] = {
        "bare enqueue": block(lambda: cl.enqueue_nd_range_kernel(q, trivial, (1,), (1,)),
                              q.finish),
        "same kernels, bare": block(same, q.finish),
        "launcher.enqueue": block(lambda: la.enqueue(q, x.base_data, 0, n, o.base_data),
                                  q.finish),
        "r(x)": block(lambda: r(x), q.finish),
        "r(x, out=o)": block(lambda: r(x, out=o), q.finish),
        "r(view)": block(lambda: r(view), q.finish),
    }
    if args.command_buffer:
        try:
            cb = CommandBuffer(q, launches)
            cb.launch()
            q.finish()
            cl.enqueue_copy(q, got, keep[2])
            check("recorded launch", float(got[0]), want)
            rows["same kernels, ctypes"] = block(cb.bare, q.finish)
            rows["recorded launch"] = block(cb.launch, q.finish)
            if not cb.simultaneous:
                notes.append("command buffer made without CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR")
        except (OSError, RuntimeError) as e:
            notes.append(f"no recorded-launch row: {e}")
    tb = torch_block(n)
    if tb is not None:
        rows["torch.sum"] = tb
    names = list(rows)
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for b in range(args.blocks):
        for i in range(len(names)):
            name = names[(b + i) % len(names)]
            w, c = rows[name](args.calls)
            wall[name].append(w * 1e6)
            cpu[name].append(c * 1e6)
    med = {k: statistics.median(v) for k, v in wall.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {"n": n, "config": str(r.explain(n)),
            "rows": {k: {"median_us": med[k], "vs_bare": med[k] / med["bare enqueue"],
                         "host_cpu_us": mcpu[k], "cpu_vs_bare": mcpu[k] / mcpu["bare enqueue"],
                         "samples_us": wall[k], "cpu_samples_us": cpu[k]} for k in names}}


def render(res: dict[str, Any], markdown: bool) -> str:
    head = ["per call", "median µs", "min µs", "vs bare", "host CPU µs", "vs bare"]
    lines = [[k, f"{v['median_us']:.2f}", f"{min(v['samples_us']):.2f}", f"{v['vs_bare']:.2f}",
              f"{v['host_cpu_us']:.2f}", f"{v['cpu_vs_bare']:.2f}"]
             for k, v in res["rows"].items()]
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(r) + " |" for r in lines])
    w = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in [head, *lines])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", required=True, help="index, P:D or name (as `cltune devices`)")
    p.add_argument("--db", default=None, help="tuning database URL (default: cltune's)")
    p.add_argument("--sizes", default="2^12,2^16", help="comma-separated, e.g. 2^12,2^16")
    p.add_argument("--calls", type=int, default=2000, help="back-to-back calls per block")
    p.add_argument("--blocks", type=int, default=9, help="blocks per row (median over them)")
    p.add_argument("--command-buffer", action="store_true",
                   help="add a recorded-launch row where cl_khr_command_buffer is offered")
    p.add_argument("--markdown", action="store_true", help="print tables as Markdown")
    p.add_argument("--json", default=None, help="write medians and samples here")
    args = p.parse_args(argv)
    info, dev = select(args.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    r = get_reducer(q, "sum", np.float32, db=args.db)
    trivial = cl.Program(ctx, TRIVIAL).build().trivial
    scratch = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    trivial.set_args(scratch)
    notes: list[str] = []
    if args.command_buffer and "cl_khr_command_buffer" not in dev.extensions.split():
        notes.append("the device does not offer cl_khr_command_buffer")
        args.command_buffer = False
    print(f"device: {info.name} | {info.platform_version} | pyopencl {cl.VERSION_TEXT} | "
          f"{args.blocks} blocks of {args.calls} back-to-back calls, one finish each | "
          f"{datetime.datetime.now().isoformat(timespec='seconds')}")
    report: dict[str, Any] = {"device": info.name, "platform": info.platform_version,
                              "argv": sys.argv, "calls": args.calls, "blocks": args.blocks,
                              "sizes": []}
    for n in (1 << k for k in parse_sizes(args.sizes)):
        res = measure(r, n, args, trivial, notes)
        print(f"\nn = {n} ({res['config']})\n{render(res, args.markdown)}")
        report["sizes"].append(res)
    for note in dict.fromkeys(notes):
        print(f"note: {note}")
    report["notes"] = notes
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"json written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
