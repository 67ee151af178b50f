#!/usr/bin/env python3
"""`cltune.var` (or `--stats var,mean,norm2,argmax`) of a whole float32 array at the sizes #39
item 2 names (3·10^6 took 31.5 µs a call on the H200 where torch.var took 12.6): what serves
each size, and the per-call wall time of the expression kernel under forced configs (passes,
groups per compute unit, work-group size; `--grid wg:items:g:passes,...` for a few) beside
torch's, back to back in blocks, every answer checked against numpy first.

    python scripts/experiments/var_sizes.py --device NVIDIA --sizes 1e6,3e6,2^22,2^24
    python scripts/experiments/var_sizes.py --device NVIDIA --stats var,mean,norm2,argmax \
        --sizes 1e6,3e6,2^22,2^24,2^27 --grid 256:2:8:1,256:4:2:1,256:4:1:1,512:2:4:1
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


#: per statistic: the kernel's extra arguments, numpy's answer (float64), torch's call
STATS = {
    "var": ((np.float64(0),), lambda h: h.astype(np.float64).var(),
            lambda t, torch: torch.var(t, unbiased=False)),
    "mean": ((), lambda h: h.astype(np.float64).mean(), lambda t, torch: torch.mean(t)),
    "norm2": ((), lambda h: np.sqrt((h.astype(np.float64) ** 2).sum()),
              lambda t, torch: torch.linalg.vector_norm(t)),
    "argmax": ((), lambda h: float(np.argmax(h)), lambda t, torch: torch.argmax(t)),
}


def _value(got: np.ndarray) -> float:
    return float(got["idx"]) if got.dtype.names else float(got)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="1e6,3e6,2^22,2^24")
    ap.add_argument("--stats", default="var")
    ap.add_argument("--grid", default="", help="wg:items:groups_per_cu:passes,... (default: "
                    "the whole GRID)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=5)
    a = ap.parse_args()
    grid = GRID if not a.grid else [
        dict(zip(("wg", "items", "groups_per_cu", "passes"), map(int, g.split(":")), strict=True))
        for g in a.grid.split(",")]
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    for stat in a.stats.split(","):
        extra, ref_of, torch_call = STATS[stat]
        knl = stats_kernels.kernel(stat, ctx, np.float32)
        st = knl._state(dev)
        for n in (size_of(s) for s in a.sizes.split(",")):
            h = rng.random(n, dtype=np.float32)
            x = cla.to_device(q, h)
            ref = ref_of(h)
            print(f"{stat} n={n}: served {knl.explain(n)}", flush=True)

            def call(x=x, knl=knl, extra=extra):  # noqa: ANN001, ANN202
                return knl(x, *extra)

            served = per_call_us(q.finish, call, a.calls, a.blocks)
            line = [f"  served {served:7.2f} us"]
            if torch is not None:
                t = torch.from_numpy(h).cuda()
                tv = per_call_us(torch.cuda.synchronize, lambda t=t, f=torch_call: f(t, torch),
                                 a.calls, a.blocks)
                line.append(f"torch {tv:7.2f} us")
            print("; ".join(line), flush=True)
            base = st.choices
            try:
                for kw in grid:
                    cfg = ExprConfig(layout="strided", **kw)
                    try:
                        cfg.check()
                    except ValueError:
                        continue
                    st.choices = Forced(base, ExprChoice(cfg, None))
                    st.by_n.clear()
                    st.served.clear()
                    try:
                        got = _value(knl(x, *extra).get())
                    except cl.Error as e:
                        print(f"  {cfg.short():40s} {type(e).__name__}", flush=True)
                        continue
                    ok = abs(got - ref) <= 1e-5 * abs(ref)
                    us = per_call_us(q.finish, call, a.calls, a.blocks)
                    print(f"  {cfg.short():40s} {us:7.2f} us{'' if ok else '  WRONG'}",
                          flush=True)
            finally:
                st.choices = base
                st.by_n.clear()
                st.served.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
