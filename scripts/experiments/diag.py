"""Per-step timings of building, validating and running configs on one device (diagnostics).

    python scripts/experiments/diag.py --device NVIDIA
"""

from __future__ import annotations

import argparse
import time

import pyopencl as cl

from cltune.core.inputs import make_input
from cltune.core.ops import OpSpec
from cltune.device.select import select
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import compare, error_bound, reference, run_once
from cltune.families.reduce.space import make_space


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="0")
    ap.add_argument("--ops", default="sum/float32,max/float32,sum/int32,dot/float32,"
                    "prod/float64,min/int64,sum/float16")
    a = ap.parse_args()
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    for item in a.ops.split(","):
        op, dt = item.split("/")
        spec = OpSpec(op, dt)
        t = time.perf_counter()
        space = make_space(ctx, dev, info, spec)
        print(f"{spec}: space {time.perf_counter() - t:.2f}s strategies={space.values['strategy']}"
              f" excluded={list(space.excluded)} base={space.base_multiple}", flush=True)
        for strat in space.values["strategy"]:
            wg = 256 if strat != "serial" else 64
            for passes in (1, 2):
                cfg = Config(strat, wg, wg if strat == "local_tree" else 0, 4, 4, 4, passes)
                la = Launcher(ctx, dev, info, spec, cfg)
                t = time.perf_counter()
                try:
                    la.built(False)
                except Exception as e:  # noqa: BLE001 - diagnostics
                    print(f"  {cfg.short()}: BUILD FAILED {e}", flush=True)
                    continue
                tb = time.perf_counter() - t
                msgs = []
                for n in (1, 1025, 2**20 + 3):
                    xs = make_input(spec, n)
                    want, scale = reference(spec, xs)
                    t = time.perf_counter()
                    got = run_once(la, q, xs)
                    why = compare(spec, got, want, error_bound(la, n, scale) if spec.is_float
                                  else 0.0)
                    msgs.append(f"n={n} {time.perf_counter() - t:.3f}s {'ok' if not why else why}")
                print(f"  {cfg.short()}: build {tb:.2f}s; " + "; ".join(msgs), flush=True)


if __name__ == "__main__":
    main()
