"""Where NVIDIA's OpenCL build time goes, and whether builds in several processes overlap
(#45: tune_kernel's wall time on GPUs is its builds). Kernel Tuner's convolution example
(tests/data/kernel_tuner) with distinct define sets: a build from source, the same program
made again from its binary (the PTX), threads of one process, and 2/4/8 processes at once.

    CUDA_CACHE_DISABLE=1 python scripts/experiments/build_procs.py [--platform NVIDIA]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import threading
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "tests" / "data" / "kernel_tuner" / "convolution.cl"
COMBOS = [(bx, by, tx, ty) for bx in (16, 32, 48, 64) for by in (1, 2, 4, 8, 16, 32)
          for tx in (1, 2) for ty in (1, 2)]


def _ctx(platform: str):  # noqa: ANN202
    import pyopencl as cl

    plat = next(p for p in cl.get_platforms() if platform.lower() in p.name.lower())
    dev = plat.get_devices()[0]
    return cl, cl.Context([dev]), dev


def _opts(c: tuple) -> list[str]:
    bx, by, tx, ty = c
    return [f"-Dblock_size_x={bx}", f"-Dblock_size_y={by}", f"-Dtile_size_x={tx}",
            f"-Dtile_size_y={ty}", "-Dimage_height=4096", "-Dimage_width=4096"]


def _proc(platform: str, combos: list, q: mp.Queue) -> None:
    t0 = time.perf_counter()
    cl, ctx, dev = _ctx(platform)
    t1 = time.perf_counter()
    src = SRC.read_text()
    for c in combos:
        cl.Program(ctx, src).build(options=_opts(c))
    q.put((t1 - t0, time.perf_counter() - t1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="NVIDIA", help="a part of the platform's name")
    a = ap.parse_args()
    cl, ctx, dev = _ctx(a.platform)
    src = SRC.read_text()
    at = 0

    def take(n: int) -> list:
        nonlocal at
        part, at = COMBOS[at:at + n], at + n
        return part

    src_s, bin_s = [], []
    for c in take(8):
        t = time.perf_counter()
        prg = cl.Program(ctx, src).build(options=_opts(c))
        src_s.append(time.perf_counter() - t)
        binary = prg.get_info(cl.program_info.BINARIES)[0]
        t = time.perf_counter()
        p2 = cl.Program(ctx, [dev], [binary]).build()
        p2.convolution_kernel  # noqa: B018 - the kernel made, as a launch would
        bin_s.append(time.perf_counter() - t)
    print("from source s:", " ".join(f"{x:.3f}" for x in src_s), flush=True)
    print("from binary s:", " ".join(f"{x:.3f}" for x in bin_s), flush=True)
    print(f"median source {sorted(src_s)[4]:.3f} s, binary {sorted(bin_s)[4]:.3f} s "
          f"({len(binary)} bytes of binary)", flush=True)

    part = take(8)
    t0 = time.perf_counter()
    ths = [threading.Thread(target=lambda c=c: cl.Program(ctx, src).build(options=_opts(c)))
           for c in part]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    print(f"8 threads: 8 builds in {time.perf_counter() - t0:.2f} s wall", flush=True)

    mpc = mp.get_context("spawn")
    for n in (1, 2, 4, 8):
        parts = [take(2) for _ in range(n)]
        q = mpc.Queue()
        t0 = time.perf_counter()
        ps = [mpc.Process(target=_proc, args=(a.platform, p, q)) for p in parts]
        for p in ps:
            p.start()
        got = [q.get() for _ in ps]
        for p in ps:
            p.join()
        w = time.perf_counter() - t0
        print(f"{n} processes x2 builds: {2 * n} builds in {w:.2f} s wall "
              f"({w / (2 * n):.3f} s/build); context {max(g[0] for g in got):.2f} s, "
              f"builds {max(g[1] for g in got):.2f} s in the slowest", flush=True)


if __name__ == "__main__":
    main()
