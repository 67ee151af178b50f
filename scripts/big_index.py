"""Reduce a real array of more than 2**32 elements (64-bit index path) and check it exactly.

    python scripts/big_index.py --device NVIDIA [--extra 1027]

int32 ones: the exact sum is n, so any lost or repeated element shows. Also a slice at an
offset past 2**32 and the 32-bit path on a small input, with explain() for both.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune import get_reducer
from cltune.device.select import select


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--extra", type=int, default=1027)
    ap.add_argument("--db", default=None)
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    n = 2**32 + a.extra
    x = cla.empty(q, (n,), np.int32)
    x.fill(np.int32(1))
    q.finish()
    r = get_reducer(q, dtype=np.int32, db=a.db)
    for label, arr, want in (("whole", x, n), ("x[2**32 - 5:]", x[2**32 - 5:], a.extra + 5),
                             ("x[3:2**32 + 9]", x[3:2**32 + 9], 2**32 + 6)):
        t = time.perf_counter()
        got = int(r(arr).get())
        dt = time.perf_counter() - t
        print(f"{label}: n={arr.size} got {got} want {want} "
              f"{'OK' if got == want else 'WRONG'} ({dt * 1e3:.1f} ms) | {r.explain(arr.size)}",
              flush=True)
    small = cla.to_device(q, np.ones(1000, np.int32))
    print("small:", int(r(small).get()) == 1000, r.explain(1000))


if __name__ == "__main__":
    main()
