#!/usr/bin/env python3
"""`cltune.var` of a whole float32 array at the sizes #39 item 2 names (3·10^6 took 31.5 µs a
call on the H200 where torch.var took 12.6): what serves each size, and the per-call wall time
of the expression kernel under forced configs (passes, groups per compute unit, work-group
size) beside torch.var, back to back in blocks, every answer checked against numpy first.

    python scripts/experiments/var_sizes.py --device NVIDIA --sizes 1e6,3e6,2^22,2^24
    python scripts/experiments/var_sizes.py --device 1 --sizes 1e5,1e6 --calls 20   # a CPU

A forced config is served as if tuned on this device (`exact`: not vetted in the worker),
so run it only on a driver that runs the shipped configs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_timing import cuda_torch, per_call_us, size_of  # noqa: E402 - scripts/: shared

from cltune.device.select import select  # noqa: E402
from cltune.families.expr.config import ExprConfig  # noqa: E402
from cltune.families.expr.serve import ExprChoice  # noqa: E402
from cltune.stats import kernels as stats_kernels  # noqa: E402

GRID = [dict(passes=p, groups_per_cu=g, wg=w, items=i)
        for p in (1, 2) for g in (1, 2, 4, 8) for w, i in ((256, 4), (512, 2), (1024, 1))]


class Forced:
    """The device state's choices with every size served `ch` (as tuned here: `exact`)."""

    def __init__(self, base, ch: ExprChoice) -> None:  # noqa: ANN001
        self.base, self.ch = base, ch

    def serve(self, n: int) -> tuple[ExprChoice, str, str]:
        return self.ch, "exact", "forced"

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.base, name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="1e6,3e6,2^22,2^24")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=5)
    a = ap.parse_args()
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    knl = stats_kernels.kernel("var", ctx, np.float32)
    st = knl._state(dev)
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    for n in (size_of(s) for s in a.sizes.split(",")):
        h = rng.random(n, dtype=np.float32)
        x = cla.to_device(q, h)
        ref = h.astype(np.float64).var()
        ddof = np.float64(0)
        print(f"n={n}: served {knl.explain(n)}", flush=True)
        def call(x=x, ddof=ddof):  # noqa: ANN001, ANN202
            return knl(x, ddof)

        served = per_call_us(q.finish, call, a.calls, a.blocks)
        line = [f"  served {served:7.2f} us"]
        if torch is not None:
            t = torch.from_numpy(h).cuda()
            tv = per_call_us(torch.cuda.synchronize, lambda t=t: torch.var(t, unbiased=False),
                             a.calls, a.blocks)
            line.append(f"torch.var {tv:7.2f} us")
        print("; ".join(line), flush=True)
        base = st.choices
        try:
            for kw in GRID:
                cfg = ExprConfig(layout="strided", **kw)
                try:
                    cfg.check()
                except ValueError:
                    continue
                ch = ExprChoice(cfg, None)
                st.choices = Forced(base, ch)
                st.by_n.clear()
                st.served.clear()
                try:
                    got = float(knl(x, ddof).get())
                except cl.Error as e:
                    print(f"  {cfg.short():40s} {type(e).__name__}", flush=True)
                    continue
                ok = abs(got - ref) <= 1e-5 * ref
                us = per_call_us(q.finish, call, a.calls, a.blocks)
                print(f"  {cfg.short():40s} {us:7.2f} us{'' if ok else '  WRONG'}", flush=True)
        finally:
            st.choices = base
            st.by_n.clear()
            st.served.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
