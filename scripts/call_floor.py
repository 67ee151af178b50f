"""The host part of every warm public call beside the device's bare-enqueue floor (issue 39).

For each public call of issue 39's table (the 1-D reducer, reductions along axes, statistics
whole and along an axis, ReductionKernel, the scanner and cumsum), all in ONE process on the
same data, in interleaved blocks (the starting row rotates per round; a block is CALLS
back-to-back calls then one `queue.finish()`), medians over BLOCKS blocks, µs per call:

- `wall`: the block's time / CALLS: what an application waits per call, device work included;
- `host`: the calling thread's CPU time per call (`time.thread_time`): cltune's Python plus
  the driver's enqueue entry points;
- `stubbed`: the same with `clEnqueueNDRangeKernel` stubbed (pyopencl's entry point answers
  a completed event at once): cltune's Python alone, what issue 39 item 3 calls the per-call
  host part; `launches` is how many enqueues a call made there, and `per launch` the
  stubbed figure divided by them (issue 39's CPU target: <= 3 µs);
- `bare enqueue`: one `cl.enqueue_nd_range_kernel` of a one-work-item kernel, arguments set
  once: the floor any call from Python pays (its `stubbed` is the stub's own cost);
- `device` (with `--device-time`): the same calls made on a second queue of the context with
  profiling on, the kernels' own time per call (the sum of each launch's end − start): where
  `wall` is above both `device` and `bare + stubbed`, the gap is the driver's, not cltune's
  Python nor its kernels.

Every call's answer is checked against numpy before it is timed and again after the real
blocks; a wrong answer stops the script. The stubbed blocks come last: a stubbed call leaves
host and device out of step (a chained scan's ticket base moves on while no kernel takes a
ticket), so no real call is timed after them. `torch`: the same operation through torch on a
CUDA device, when one is there (blocks of its own, never interleaved call by call with OpenCL).

    python scripts/call_floor.py --device 1 --calls 1000 --blocks 9
    python scripts/call_floor.py --device 0 --json $OUT/call-floor.json --markdown   # H200
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from per_call import block as timed  # scripts/ (the script's folder) is on sys.path

import cltune
from cltune.device.select import select
from cltune.opencl.host_part import stubbed_enqueue

TRIVIAL = "__kernel void trivial(__global float *o) { o[get_global_id(0)] = 1.0f; }"


@dataclass
class Case:
    name: str
    call: Callable[[], Any]
    want: np.ndarray  # numpy's answer (float64 where numpy's own dtype would round)
    rtol: float
    torch: Callable[[], Any] | None = None
    rows: dict[str, list[float]] = field(default_factory=dict)
    #: the call's answer as numpy (a device array's get(); copy_if's kept elements)
    answer: Callable[[Any], Any] = lambda res: res.get()


def _check(c: Case, when: str) -> None:
    got = np.asarray(c.answer(c.call()), np.float64)
    want = np.asarray(c.want, np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=c.rtol, atol=c.rtol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise SystemExit(f"{c.name} {when}: answered unlike numpy (worst {err}): not timed")


def cases(q: cl.CommandQueue, rng: np.random.Generator, torch: Any) -> list[Case]:
    """Issue 39's table: each public call at the sizes it names (float32)."""
    out: list[Case] = []
    dev = "cuda" if torch is not None else None

    def t_of(h: np.ndarray) -> Any:
        return torch.from_numpy(h).to(dev) if dev else None

    def add(name: str, call: Callable[[], Any], want: Any, rtol: float = 1e-4,
            tcall: Callable[[], Any] | None = None,
            answer: Callable[[Any], Any] | None = None) -> None:
        out.append(Case(name, call, np.asarray(want), rtol, tcall))
        if answer is not None:
            out[-1].answer = answer

    r = cltune.get_reducer(q, "sum", np.float32)
    h1 = rng.random(4096, dtype=np.float32)
    x1 = cla.to_device(q, h1)
    t1 = t_of(h1)
    add("r(x) 4096", lambda: r(x1), h1.astype(np.float64).sum(),
        tcall=(lambda: torch.sum(t1)) if dev else None)
    add("get_reducer(q)(x) 4096", lambda: cltune.get_reducer(q)(x1),
        h1.astype(np.float64).sum(), tcall=(lambda: torch.sum(t1)) if dev else None)
    for shape in ((100, 100), (1000, 1000)):
        h = rng.random(shape, dtype=np.float32)
        x = cla.to_device(q, h)
        t = t_of(h)
        for axis in (1, 0):
            add(f"r(x, axis={axis}) {shape[0]}x{shape[1]}",
                (lambda x=x, a=axis: r(x, axis=a)), h.astype(np.float64).sum(axis=axis),
                tcall=(lambda t=t, a=axis: torch.sum(t, dim=a)) if dev else None)
    h = rng.random((1000, 1000), dtype=np.float32)
    x2 = cla.to_device(q, h)
    t2 = t_of(h)
    add("cltune.mean(x, axis=1) 1000x1000", lambda: cltune.mean(x2, axis=1),
        h.astype(np.float64).mean(axis=1), tcall=(lambda: torch.mean(t2, dim=1)) if dev else None)
    add("cltune.argmax(x) 4096", lambda: cltune.argmax(x1), np.argmax(h1), rtol=0,
        tcall=(lambda: torch.argmax(t1)) if dev else None)
    add("cltune.norm(x) 4096", lambda: cltune.norm(x1), np.linalg.norm(h1.astype(np.float64)),
        tcall=(lambda: torch.linalg.vector_norm(t1)) if dev else None)
    h3 = rng.random(3_000_000, dtype=np.float32)
    x3 = cla.to_device(q, h3)
    t3 = t_of(h3)
    add("cltune.var(x) 3e6", lambda: cltune.var(x3), h3.astype(np.float64).var(),
        tcall=(lambda: torch.var(t3, unbiased=False)) if dev else None)
    knl = cltune.ReductionKernel(q.context, np.float32, neutral="0", reduce_expr="a+b",
                                 map_expr="x[i]*y[i]", arguments="__global const float *x, "
                                 "__global const float *y")
    add("ReductionKernel dot 4096", lambda: knl(x1, x1, queue=q),
        (h1.astype(np.float64) ** 2).sum(), tcall=(lambda: torch.dot(t1, t1)) if dev else None)
    scan = cltune.get_scanner(q)
    for n in (1000, 65537, 1_000_003):
        hs = rng.random(n, dtype=np.float32)
        xs = cla.to_device(q, hs)
        ts = t_of(hs)
        want = np.cumsum(hs.astype(np.float64))
        if n == 1000:
            add("get_scanner(q)(x) 1000", lambda xs=xs: scan(xs), want,
                tcall=(lambda ts=ts: torch.cumsum(ts, 0)) if dev else None)
        add(f"cltune.cumsum(x) {n}", lambda xs=xs: cltune.cumsum(xs), want, rtol=1e-3,
            tcall=(lambda ts=ts: torch.cumsum(ts, 0)) if dev else None)
    # along axes (#40's short columns: one launch on GPUs, into a fresh result and into out=)
    ha = rng.random((17, 20011), dtype=np.float32)
    xa, ya = cla.to_device(q, ha), cla.empty(q, ha.shape, np.float32)
    ta = t_of(ha)
    ta2 = ta.clone() if dev else None
    wa = np.cumsum(ha.astype(np.float64), axis=0)
    add("cltune.cumsum(x, axis=0) 17x20011", lambda: cltune.cumsum(xa, axis=0), wa, rtol=1e-3,
        tcall=(lambda: torch.cumsum(ta, 0)) if dev else None)
    add("scanner(x, axis=0, out=y) 17x20011", lambda: scan(xa, axis=0, out=ya), wa, rtol=1e-3,
        tcall=(lambda: torch.cumsum(ta, 0, out=ta2)) if dev else None)
    # an application's scan kernel (pyopencl's GenericScanKernel contract; three launches)
    gsk = cltune.GenericScanKernel(q.context, np.float32, "__global const float *x, "
                                   "__global float *y", "x[i]", "a+b", "0", "y[i] = item")
    hg = rng.random(1000, dtype=np.float32)
    xg, yg = cla.to_device(q, hg), cla.empty(q, 1000, np.float32)
    tg = t_of(hg)
    add("GenericScanKernel(x, y) 1000", lambda: (gsk(xg, yg), yg)[1],
        np.cumsum(hg.astype(np.float64)), rtol=1e-3,
        tcall=(lambda: torch.cumsum(tg, 0)) if dev else None)
    # the warm histogram (one launch: its last group finishes, the edges with it)
    add("cltune.histogram(x, 256, (0, 1)) 4096", lambda: cltune.histogram(x1, 256, (0.0, 1.0)),
        np.histogram(h1, 256, (0.0, 1.0))[0], rtol=0,
        tcall=(lambda: torch.histc(t1, 256, 0.0, 1.0)) if dev else None,
        answer=lambda res: res[0].get())
    # compaction (3 launches): copy_if's kept elements with the count on the device, and
    # nonzero of a fixed size (nothing read back) of a ready mask
    t = np.float32(0.5)
    add("cltune.copy_if(x, x > t) 4096",
        lambda: cltune.copy_if(x1, "ary[i] > t", extra_args=[("t", t)]), h1[h1 > t], rtol=0,
        tcall=(lambda: t1[t1 > 0.5]) if dev else None,
        answer=lambda res: res[0][:int(res[1].get())].get())
    m1 = x1 > t
    k1 = int(np.count_nonzero(h1 > t))
    tm1 = t1 > 0.5 if dev else None
    add("cltune.nonzero(mask, size=k) 4096", lambda: cltune.nonzero(m1, size=k1),
        np.flatnonzero(h1 > t), rtol=0,
        tcall=(lambda: torch.nonzero_static(tm1, size=k1))
        if dev and hasattr(torch, "nonzero_static") else None,
        answer=lambda res: res[0].get())
    # an application's own kernel on device arrays (#45: PythonKernel.launch, one launch of
    # the given work-group; arguments set as the families' warm launches set theirs)
    src = ("__kernel void vector_add(__global float *c, __global const float *a, "
           "__global const float *b, int n) { int i = get_global_id(0); "
           "if (i < n) c[i] = a[i] + b[i]; }")
    n1 = np.int32(h1.size)
    yk = cla.empty(q, h1.size, np.float32)
    pk = cltune.PythonKernel("vector_add", src, int(n1), [np.zeros_like(h1), h1, h1, n1],
                             params={"block_size_x": 128}, queue=q, verbose=False)
    add("PythonKernel.launch vector_add 4096", lambda: (pk.launch(yk, x1, x1, n1), yk)[1],
        2 * h1, rtol=1e-6, tcall=(lambda: torch.add(t1, t1)) if dev else None)
    return out


def device_time(q: cl.CommandQueue, c: Case, calls: int) -> float:
    """Seconds of kernel time per call of `c` (its queue has profiling on): every launch's
    event is kept (the ND-range entry point wrapped, passing through) and its end − start
    summed."""
    import pyopencl._cl as _cl
    seen: dict[int, cl.Event] = {}
    real = _cl.enqueue_nd_range_kernel

    def keep(*args: Any, **kw: Any) -> cl.Event:
        e = real(*args, **kw)
        seen[e.int_ptr] = e
        return e

    cl.enqueue_nd_range_kernel = _cl.enqueue_nd_range_kernel = keep
    try:
        for _ in range(calls):
            c.call()
    finally:
        cl.enqueue_nd_range_kernel = _cl.enqueue_nd_range_kernel = real
    q.finish()
    return sum(e.profile.end - e.profile.start for e in seen.values()) * 1e-9 / calls


def run(q: cl.CommandQueue, calls: int, blocks: int, only: str | None,
        dev_time: bool = False) -> dict[str, Any]:
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    rng = np.random.default_rng(39)
    cs = [c for c in cases(q, rng, torch) if not only or only in c.name]
    prg = cl.Program(q.context, TRIVIAL).build()
    k = prg.trivial
    o = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, 64)
    k.set_args(o)

    def bare() -> cl.Event:
        return cl.enqueue_nd_range_kernel(q, k, (1,), (1,))

    floor = Case("bare enqueue", bare, np.zeros(0), 0)
    q.finish()
    for c in cs:
        _check(c, "before")
        for _ in range(20):  # warm: the first calls tune nothing but build and arm
            c.call()
        q.finish()
    rows = [floor, *cs]
    for b in range(blocks):
        for c in rows[b % len(rows):] + rows[:b % len(rows)]:
            w, h = timed(c.call, q.finish)(calls)
            c.rows.setdefault("wall", []).append(w)
            c.rows.setdefault("host", []).append(h)
    for c in cs:
        _check(c, "after the timed blocks")
    if dev_time:
        qp = cl.CommandQueue(q.context, q.device,
                             properties=cl.command_queue_properties.PROFILING_ENABLE)
        for c, cp in zip(cs, [c for c in cases(qp, np.random.default_rng(39), None)
                              if not only or only in c.name], strict=True):
            _check(cp, "on the profiling queue")
            for _ in range(20):
                cp.call()
            qp.finish()
            c.rows["device"] = [device_time(qp, cp, min(calls, 200)) for _ in range(3)]
        fp = Case("bare enqueue", lambda: cl.enqueue_nd_range_kernel(qp, k, (1,), (1,)),
                  np.zeros(0), 0)
        floor.rows["device"] = [device_time(qp, fp, min(calls, 200)) for _ in range(3)]
    # last: a stubbed call breaks what the host and the device agree on (a chained scan's
    # ticket base moves on while no kernel takes tickets), so no real call follows these
    for b in range(blocks):
        for c in rows[b % len(rows):] + rows[:b % len(rows)]:
            count = [0]
            with stubbed_enqueue(q, count):
                _, s = timed(c.call, q.finish)(calls)
            c.rows.setdefault("stubbed", []).append(s)
            c.rows.setdefault("launches", []).append(count[0] / calls)
    if torch is not None:
        for c in cs:
            if c.torch is None:
                continue
            for _ in range(20):
                c.torch()
            torch.cuda.synchronize()
            c.rows["torch"] = [timed(c.torch, torch.cuda.synchronize)(calls)[0]
                               for _ in range(blocks)]
    res: dict[str, Any] = {}
    for c in rows:
        med = {k: statistics.median(v) for k, v in c.rows.items()}
        launches = round(med.get("launches", 1)) or 1
        row = {"wall_us": med["wall"] * 1e6, "host_us": med["host"] * 1e6,
               "stubbed_us": med["stubbed"] * 1e6, "launches": med.get("launches", 1.0),
               "stubbed_per_launch_us": med["stubbed"] * 1e6 / launches}
        if "torch" in med:
            row["torch_us"] = med["torch"] * 1e6
        if "device" in med:
            row["device_us"] = med["device"] * 1e6
        res[c.name] = row
    return res


def render(res: dict[str, Any], markdown: bool) -> str:
    cols = ["wall_us", "host_us", "stubbed_us", "launches", "stubbed_per_launch_us"]
    if any("device_us" in r for r in res.values()):
        cols.append("device_us")
    if any("torch_us" in r for r in res.values()):
        cols.append("torch_us")
    floor = res["bare enqueue"]["wall_us"]
    head = ["call", "wall µs", "host µs", "stubbed µs", "launches", "stubbed / launch µs",
            *(["device µs"] if "device_us" in cols else []),
            *(["torch µs"] if "torch_us" in cols else []), "wall − bare µs"]
    lines = []
    for name, r in res.items():
        vals = ["–" if c not in r else f"{r[c]:.0f}" if c == "launches" else f"{r[c]:.2f}"
                for c in cols]
        lines.append([name, *vals, f"{r['wall_us'] - floor:+.2f}"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(ln) + " |" for ln in lines]
        return "\n".join(out)
    w = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=True)]
    return "\n".join("  ".join(str(x).rjust(n) for x, n in zip(ln, w, strict=True))
                     for ln in [head, *lines])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0", help="cltune device selector (index, P:D, name)")
    ap.add_argument("--calls", type=int, default=1000, help="calls per block")
    ap.add_argument("--blocks", type=int, default=9, help="blocks per row (median)")
    ap.add_argument("--only", help="only the calls whose name contains this")
    ap.add_argument("--device-time", action="store_true",
                    help="also the kernels' own time per call (a profiling queue)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", action="store_true", help="a markdown table")
    a = ap.parse_args(argv)
    if a.calls < 1 or a.blocks < 1:
        ap.error("--calls and --blocks must be at least 1")
    info, dev = select(a.device)
    ctx = cl.Context([dev])  # kept: Intel's runtime drops a context its queue still names
    q = cl.CommandQueue(ctx, dev)
    res = run(q, a.calls, a.blocks, a.only, a.device_time)
    print(f"# {info.name} | {info.platform_version} | {a.calls} calls x {a.blocks} blocks, "
          f"medians | {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(render(res, a.markdown))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info.name, "platform": info.platform_version,
                       "calls": a.calls, "blocks": a.blocks, "results": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
