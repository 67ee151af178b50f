"""How long an OpenCL driver builds Kernel Tuner's convolution example (tests/data/kernel_tuner),
one build at a time and in 2, 4 and 8 threads of one process: whether building configs ahead
in more threads would shorten a tune (#45). On an H100 through NVIDIA's driver a build took
0.35-1.4 s, and threads did not overlap them (docs/logs/benchmarks-2026-11-30-to-2026-12-06.md).

    python scripts/experiments/build_threads.py [--platform NVIDIA]
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import pyopencl as cl

SRC = Path(__file__).resolve().parents[2] / "tests" / "data" / "kernel_tuner" / "convolution.cl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="NVIDIA", help="a part of the platform's name")
    a = ap.parse_args()
    src = SRC.read_text()
    plat = next(p for p in cl.get_platforms() if a.platform.lower() in p.name.lower())
    ctx = cl.Context([plat.get_devices()[0]])
    combos = [(bx, by, tx, ty) for bx in (16, 32, 48, 64) for by in (1, 2, 4, 8)
              for tx in (1, 2) for ty in (1, 2)]

    def build(c: tuple[int, int, int, int]) -> float:
        bx, by, tx, ty = c
        t = time.perf_counter()
        cl.Program(ctx, src).build(options=[
            f"-Dblock_size_x={bx}", f"-Dblock_size_y={by}", f"-Dtile_size_x={tx}",
            f"-Dtile_size_y={ty}", "-Dimage_height=4096", "-Dimage_width=4096"])
        return time.perf_counter() - t

    seq = [build(c) for c in combos[:12]]
    print("sequential builds s:", " ".join(f"{x:.3f}" for x in seq),
          "median", sorted(seq)[6], flush=True)
    at = 12
    for nt in (2, 4, 8):  # each combo built once (no cache hit): 2 builds a thread
        part, at = combos[at:at + 2 * nt], at + 2 * nt
        res: list[float] = []
        t0 = time.perf_counter()
        ths = [threading.Thread(target=lambda c=c, res=res: res.append(build(c)))
               for c in part]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        w = time.perf_counter() - t0
        print(f"{nt} threads x2: {len(part)} builds in {w:.2f} s wall "
              f"({w / len(part):.3f} s/build; each {sorted(res)[len(res) // 2]:.3f})", flush=True)


if __name__ == "__main__":
    main()
