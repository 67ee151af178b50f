"""Where the time of clt_sort_rows_local goes (#42): its kernel time by profiling events, whole
and with the network left out (the load and the stores alone), per work-group size, beside
the kernel's private and __local memory. An experiment: the source is edited in memory.

    python scripts/experiments/sort_rows_profile.py --device NVIDIA --shapes 4096x4096,65536x256
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import cltune.families.scan.sort as S
from cltune.device.select import select
from cltune.opencl.sources import kernel_file

NET = "for (uint k = 2u; k <= P; k <<= 1) {"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--shapes", default="4096x4096,16384x1024,65536x256,1x4096")
    ap.add_argument("--wg", default="64,128,256,512,1024")
    ap.add_argument("--rows-a-group", default="", help="R values to try (default: the plan's)")
    a = ap.parse_args()
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    S.LOCAL_ON["cpu"] = True  # measured on CPUs too
    q = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    src = kernel_file("sort.cl")
    assert NET in src
    progs = {}
    for label, text in (("whole", src), ("no-network", src.replace(NET, NET.replace(
            "k <= P", "k <= (P >> 31)")))):
        opts = S._options(0, False, S.device_shape(dev, 4, 4))
        progs[label] = cl.Program(ctx, text).build(options=opts).clt_sort_rows_local
    k0 = progs["whole"]
    wi = cl.kernel_work_group_info
    print(f"# {dev.name}: private {k0.get_work_group_info(wi.PRIVATE_MEM_SIZE, dev)} B, "
          f"static local {k0.get_work_group_info(wi.LOCAL_MEM_SIZE, dev)} B, "
          f"max wg {k0.get_work_group_info(wi.WORK_GROUP_SIZE, dev)}")
    rng = np.random.default_rng(0)
    for text in a.shapes.split(","):
        rows, cols = (int(v) for v in text.split("x"))
        h = rng.standard_normal((rows, cols)).astype(np.float32)
        x = cla.to_device(q, h)
        out = cla.empty_like(x)
        pos = cla.empty(q, x.shape, np.int64)
        log_p, r0, wg0 = S.local_plan(dev, 4, rows, cols)
        rs = [int(v) for v in a.rows_a_group.split(",") if v] or [r0]
        line = [f"{rows}x{cols} plan {(log_p, r0, wg0)}:"]
        for r in rs:
            for wg in [int(v) for v in a.wg.split(",")]:
                for label, k in progs.items():
                    k.set_scalar_arg_dtypes(
                        [None, np.uint64, np.uint64, np.uint32, np.uint32, np.uint32, np.uint32,
                         None, None, np.uint32, np.uint32, None])
                    k.set_args(x.data, 0, rows, cols, log_p, r, 0, out.data, pos.data, 1, 0,
                               cl.LocalMemory((r << log_p) * 8))  # float32: 8-byte words
                    groups = -(-rows // r)
                    ts = []
                    for _ in range(7):
                        ev = cl.enqueue_nd_range_kernel(q, k, (groups * wg,), (wg,))
                        ev.wait()
                        ts.append((ev.profile.end - ev.profile.start) * 1e-3)
                    if label == "whole":
                        ok = np.array_equal(out.get(), np.sort(h, axis=-1))
                    line.append(f"R{r} wg{wg} {label} {statistics.median(ts):.1f}"
                                f"{'' if label != 'whole' or ok else ' WRONG'}")
        print(" | ".join(line), "(us, kernel only)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
