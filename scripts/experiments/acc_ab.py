"""#22 item 2 on the H200: what accumulating a float32 1-D sum in double (`acc=native` where
fp64 exists) costs against compensated float (`acc=kahan`), per served config, in device time
(profiling events, median of blocks) and accuracy against numpy's own float32 answer.

    python scripts/experiments/acc_ab.py --device NVIDIA --sizes 2^20,2^24,2^26,2^28
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^20,2^24,2^28")
    ap.add_argument("--op", default="sum")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    import cltune
    from cltune.core.ops import OpSpec
    from cltune.device.select import select
    from cltune.families.reduce.launch import Launcher

    warnings.simplefilter("ignore")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    pq = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    spec = OpSpec(a.op, "float32")
    r = cltune.get_reducer(pq, a.op, np.float32, db="/nonexistent/acc-ab.db")
    rng = np.random.default_rng(1)
    print(f"{dev.name}: {a.op}/float32, device time per launch (median), rel. error")
    for n in (1 << int(s.split("^")[1]) for s in a.sizes.split(",")):
        h = (rng.random(n) if a.op == "sum" else 1 + (rng.random(n) - 0.5) * 1e-6).astype(
            np.float32)
        x = cla.to_device(pq, h)
        ref = h.astype(np.float64).sum() if a.op == "sum" else h.astype(np.float64).prod()
        npe = abs(float(getattr(np, a.op)(h)) / ref - 1)
        cfg = r.explain(n).config
        row = [f"n=2^{n.bit_length() - 1} {cfg.short()}"]
        for acc in ("native", "kahan"):
            la = Launcher(ctx, dev, info, spec, replace(cfg, acc=acc))
            out = cla.empty(pq, (), np.float32)
            la.enqueue(pq, x.base_data, 0, n, out.base_data)
            pq.finish()
            got = float(out.get())
            ts = []
            for _ in range(a.reps):
                evs = la.enqueue(pq, x.base_data, 0, n, out.base_data)
                evs[-1].wait()
                ts.append((evs[-1].profile.end - evs[0].profile.start) * 1e-3)
            med = statistics.median(ts)
            row.append(f"{acc}: {med:8.1f} us {h.nbytes / med / 1e3:7.0f} GB/s "
                       f"err {abs(got / ref - 1):.2e}")
        row.append(f"numpy err {npe:.2e}")
        print(" | ".join(row))


if __name__ == "__main__":
    main()
