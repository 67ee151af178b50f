"""The radix passes of a whole-array sort (#42) per kernel shape: each shape's answer checked
against numpy's stable argsort first, then µs per call (median of blocks) of cltune.sort and
argsort, the kernels' device time by profiling events (keys, hist, scan, scatter/split,
values), and torch.sort beside where torch sees a GPU. An experiment: shapes are forced.

    python scripts/experiments/sort_passes_ab.py --device NVIDIA --sizes 2^20,2^24 \\
        --shapes 256:8:8:2,128:8:4:8
    python scripts/experiments/sort_passes_ab.py --device NVIDIA --onesweep vol \\
        --looks w1,w4,w4+p2,nolook     # onesweep's look-back window, the counters, no look-back

`--looks`: onesweep variants, each its own row, of `+`-joined items: `wN` its look-back
reading N words of a digit at once (sort.ONESWEEP_WINDOW), `p2` the
tile sort's counters two to a word (sort.TILE_PACK2), and source edits made in memory
(EDITS): `noidx` no __local indices (keys-only sorts), `nolook` no look-back and `nowrite` no
tile written (their answers are wrong and not checked: timing only, what the rest costs).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune.families.scan.sort as S
from cltune.device.select import select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_timing import cuda_torch, per_call_us, size_of  # noqa: E402


def kernel_times(q: cl.CommandQueue, fn) -> dict[str, float]:  # noqa: ANN001
    """µs of device time per kernel name in one call of fn on a profiling queue."""
    seen: list[tuple[str, cl.Event]] = []
    real = cl.enqueue_nd_range_kernel

    def spy(queue, kernel, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        ev = real(queue, kernel, *a, **k)
        seen.append((kernel.function_name, ev))
        return ev

    cl.enqueue_nd_range_kernel = spy
    try:
        fn()
        q.finish()
    finally:
        cl.enqueue_nd_range_kernel = real
    out: dict[str, float] = collections.defaultdict(float)
    for name, ev in seen:
        ev.wait()
        out[name] += (ev.profile.end - ev.profile.start) * 1e-3
    return dict(out)


#: --looks' source edits (timing only where the third item is 1: the answer is then wrong)
EDITS = {
    "nolook": ("before = clt_os_before(look, t, d, vol);", "before = 0u;", 1),  # no look-back
    "noidx": ("    __local idx_t ti[PADW(TILE)];", "    __local idx_t ti[1];", 0),  # keys only
    "nowrite": ("    barrier(CLK_LOCAL_MEM_FENCE);\n    TILE_WRITE(base)\n}\n\n/* rows",
                "    barrier(CLK_LOCAL_MEM_FENCE);\n}\n\n/* rows", 1),  # onesweep writes nothing
}


def _edited(text: str, edits: tuple) -> str:
    for old, new, _ in edits:
        if old not in text:
            raise SystemExit(f"sort.cl has no {old!r} to edit")
        text = text.replace(old, new)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--shapes", default="device",
                    help="wg:items:bits:chunks-per-CU,... or 'device'")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--looks", default="",
                    help="onesweep look-back forms window:early,... or nolook")
    ap.add_argument("--onesweep", default="both", choices=("both", "on", "off", "vol", "osv"),
                    help="whole arrays by onesweep, by the chunks' passes, or each in turn")
    a = ap.parse_args()
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    pq = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    print(f"# {dev.name}, {a.dtype}; default shape {S.device_shape(dev, 4, 4)}")
    real_shape = S.device_shape
    for text in a.sizes.split(","):
        n = size_of(text)
        h = (rng.standard_normal(n) * 1000).astype(a.dtype)
        want = np.argsort(h, kind="stable")
        line = [f"n={text}"]
        if torch is not None:
            t = torch.from_numpy(h).cuda()
            us = per_call_us(torch.cuda.synchronize, lambda t=t: torch.sort(t), a.calls, a.repeats)
            line.append(f"torch.sort {us:.1f}")
        ways = {"both": ("os", "chunks"), "on": ("os",), "off": ("chunks",),
                "vol": ("osv", "os", "chunks"), "osv": ("osv",)}[a.onesweep]
        looks = a.looks.split(",") if a.looks else [None]
        real_text, real_look = S.kernel_file, dict(S.ONESWEEP_WINDOW)
        real_p2 = dict(S.TILE_PACK2)
        for shape_text, way, look in [(st, w, lk) for st in a.shapes.split(",") for w in ways
                                      for lk in (looks if w != "chunks" else [None])]:
            shape = None if shape_text == "device" else \
                tuple(int(v) for v in shape_text.split(":"))
            S.ONESWEEP_MAX = (1 << 30) if way in ("os", "osv") else 0
            if hasattr(S, "ONESWEEP_VOLATILE"):
                S.ONESWEEP_VOLATILE["gpu"] = way == "osv"
            if hasattr(S, "ONESWEEP_ON"):  # (ONESWEEP_MAX above says which way)
                S.ONESWEEP_ON["cpu"] = S.ONESWEEP_ON["gpu"] = (0, 0)
            S.device_shape = real_shape if shape is None else (lambda d, kb, ib, s=shape: s)
            S._programs = S.ContextCache()
            parts = look.split("+") if look else []
            edits = [EDITS[e] for e in parts if e in EDITS]
            S.kernel_file = lambda name, e=tuple(edits), rt=real_text: _edited(rt(name), e)
            for e in parts:
                if e[:1] == "w" and e[1:].isdigit():
                    S.ONESWEEP_WINDOW["gpu"] = int(e[1:])
                S.TILE_PACK2["gpu"] = S.TILE_PACK2["gpu"] or e == "p2"
            if look is not None:
                way = f"{way} {look}"
            try:
                for qq in (q, pq) if not any(EDITS.get(e, ("", "", 1))[2] for e in parts) else ():
                    xq = cla.to_device(qq, h)
                    pos = S.argsort(xq).get()
                    if not np.array_equal(pos, want):
                        line.append(f"{shape_text} {way} WRONG")
                        break
                else:
                    x = cla.to_device(q, h)
                    s_us = per_call_us(q.finish, lambda x=x: S.sort(x), a.calls, a.repeats)
                    a_us = per_call_us(q.finish, lambda x=x: S.argsort(x), a.calls, a.repeats)
                    xp = cla.to_device(pq, h)
                    kt = kernel_times(pq, lambda xp=xp: S.sort(xp))
                    parts = " ".join(f"{k.replace('clt_sort_', '')} {v:.0f}"
                                     for k, v in sorted(kt.items(), key=lambda kv: -kv[1]))
                    line.append(f"[{shape_text} {way}] sort {s_us:.1f} argsort {a_us:.1f} "
                                f"(kernels {sum(kt.values()):.0f}: {parts})")
            finally:
                S.device_shape = real_shape
                S.kernel_file = real_text
                S.ONESWEEP_WINDOW.update(real_look)
                S.TILE_PACK2.update(real_p2)
        print(" | ".join(line), "(us per call)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
