"""Sorts along rows (#42): the one-launch sorts of rows — in __local memory
(clt_sort_rows_local, over the plans it could take: elements a group, work-group caps), 8
rows a work-item in vector lanes (clt_sort_rows_vec) and a group a row by the in-group radix
sort (clt_sort_rows_radix: rows of 1024-4096, 32-bit keys) — beside the radix passes, whatever the
device's kind would take, and torch.sort(dim=1) on a CUDA device (else numpy's sort), one
process, per call in blocks. Every answer is checked against numpy's stable order first.

    python scripts/experiments/sort_rows_ab.py --device 1 --shapes 65536x256,4096x4096
    python scripts/experiments/sort_rows_ab.py --device NVIDIA --group 1024,2048,4096 --wg 256,1024
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_timing import cuda_torch, per_call_us  # noqa: E402

import cltune  # noqa: E402
import cltune.families.scan.sort as S  # noqa: E402
from cltune.device.select import select  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--shapes", default="65536x256,16384x1024,4096x4096,262144x64,1048576x16,"
                                        "8x4096,1x4096,1x1000")
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--group", default="", help="elements a group to try (GPU plans)")
    ap.add_argument("--wg", default="", help="work-group caps to try")
    ap.add_argument("--paths", default="local,vec,radix,rradix",
                    help="which sorts to time (radix: the passes; rradix: the in-group radix "
                         "sort of a row, clt_sort_rows_radix)")
    ap.add_argument("--rshapes", default="",
                    help="wg:items:bits shapes of the in-group radix sort to time too")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    torch = cuda_torch()
    kind = "cpu" if dev.type & cl.device_type.CPU else "gpu"
    on = {"local": (True, False), "vec": (False, True), "radix": (False, False),
          "rradix": (False, False)}
    print(f"# {dev.name} | {dev.platform.version} | torch {'yes' if torch else 'no'}")
    rng = np.random.default_rng(0)
    orig_plan, orig_group = S.local_plan, dict(S.GROUP_ELEMENTS)
    for dt in a.dtypes.split(","):
        for text in a.shapes.split(","):
            rows, cols = (int(v) for v in text.split("x"))
            h = (rng.standard_normal((rows, cols)) * 100).astype(dt)
            x = cla.to_device(q, h)
            want = np.argsort(h, axis=-1, kind="stable")
            line = [f"{dt} {rows}x{cols}:"]

            def timed(label: str, x: cla.Array = x, want: np.ndarray = want,
                      line: list = line) -> None:
                got = cltune.argsort(x).get()
                if not np.array_equal(got, want):
                    line.append(f"{label} WRONG")
                    return
                us = per_call_us(q.finish, lambda: cltune.sort(x), a.calls, a.repeats)  # noqa: B023
                line.append(f"{label} {us:.1f}")

            S.LOCAL_ON[kind], S.VEC_ON[kind] = on["local"]
            S.RADIX_ROWS_ON[kind] = False
            paths = a.paths.split(",")
            plans = [("local", None, None)] if "local" in paths else []
            for g in [int(v) for v in a.group.split(",") if v] or [0]:
                for w in [int(v) for v in a.wg.split(",") if v] or [0]:
                    if g or w:
                        plans.append((f"g{g}w{w}", g, w))
            for label, g, w in plans:
                S.GROUP_ELEMENTS.update(orig_group)
                if g:
                    S.GROUP_ELEMENTS[kind] = g
                p = S.local_plan(dev, 8 if np.dtype(dt).itemsize == 8 else 4, rows, cols)
                if w and p is not None:
                    S.local_plan = lambda *_a, p=p, w=w: (p[0], p[1], min(p[2], w))
                tag = label + (f"{p}" if p and label == "local" else "")
                timed(tag)
                S.local_plan = orig_plan
            S.GROUP_ELEMENTS.update(orig_group)
            for mode in [m for m in ("vec", "radix", "rradix") if m in paths]:
                S.LOCAL_ON[kind], S.VEC_ON[kind] = on[mode]
                S.RADIX_ROWS_ON[kind] = mode == "rradix"
                if mode != "rradix" or S.radix_rows_shape(
                        dev, 8 if np.dtype(dt).itemsize == 8 else 4, cols) is not None:
                    timed(mode)
                if mode == "rradix":
                    real = S.radix_rows_shape
                    for rs in [t for t in a.rshapes.split(",") if t]:
                        wg_, it_, b_ = (int(v) for v in rs.split(":"))
                        if wg_ * it_ < cols:
                            continue
                        S.radix_rows_shape = lambda *_a, r=(wg_, it_, b_, 1), **_k: r
                        try:
                            timed(f"rradix{wg_}x{it_}b{b_}")
                        finally:
                            S.radix_rows_shape = real
            if torch is not None:
                t = torch.from_numpy(h).cuda()
                us = per_call_us(torch.cuda.synchronize, lambda t=t: torch.sort(t, dim=1),
                                 a.calls, a.repeats)
                line.append(f"torch {us:.1f}")
            else:
                for kind_ in ("quicksort", "stable"):
                    us = per_call_us(lambda: None, lambda h=h, k=kind_: np.sort(h, -1, kind=k),
                                     1, 3)
                    line.append(f"numpy-{kind_} {us:.1f}")
            print(" | ".join(line), "(us per call)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
