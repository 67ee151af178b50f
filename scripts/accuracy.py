"""Relative error of cltune's float32 sums and products against numpy's own float32 answer on
the same data (a float64 reference for both), whole and along both axes: the rows of issue
#22 item 2 (rows of 100003 values near 1, and uniform values in [0, 1)).

Served configs as an application gets them (database, shipped results or builtin); prints one
row per (op, data, layout) with cltune's and numpy's worst relative error and their ratio
(<= 1: cltune is at least as accurate as numpy).

    python scripts/accuracy.py --device 0
    python scripts/accuracy.py --device NVIDIA --rows 8 --cols 100003
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla


def rel(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) / ref - 1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0", help="index, P:D or name substring")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--cols", type=int, default=100003)
    ap.add_argument("--db", default=None, help="tuning database (default: the user's)")
    a = ap.parse_args()

    import cltune
    from cltune.device.select import select

    warnings.simplefilter("ignore")
    _, dev = select(a.device)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    data = {"near 1": (1 + (rng.random((a.rows, a.cols)) - 0.5) * 1e-3).astype(np.float32),
            "uniform": rng.random((a.rows, a.cols)).astype(np.float32)}
    print(f"device: {dev.name} ({dev.platform.name}, driver {dev.driver_version}); "
          f"{a.rows} x {a.cols} float32")
    print(f"{'op':5s} {'data':8s} {'layout':8s} {'cltune':>10s} {'numpy':>10s} {'ratio':>6s}")
    worst = 0.0
    for op in ("sum", "prod"):
        r = cltune.get_reducer(q, op, np.float32, db=a.db)
        for name, h in data.items():
            if op == "prod" and name == "uniform":
                continue  # underflows to 0 in float32
            f64 = h.astype(np.float64)
            ref = f64.sum(axis=1) if op == "sum" else f64.prod(axis=1)
            npf = getattr(np, op)
            cols = np.ascontiguousarray(h.T)
            rows_ref = [float(x) for x in ref]
            whole_ref = np.array([float(f64[0].sum() if op == "sum" else f64[0].prod())])
            cases = {
                "1-D": (r(cla.to_device(q, h[0])).get().reshape(1), npf(h[0]).reshape(1),
                        whole_ref),
                "axis 1": (r(cla.to_device(q, h), axis=1).get(), npf(h, axis=1),
                           np.array(rows_ref)),
                "axis 0": (r(cla.to_device(q, cols), axis=0).get(), npf(cols, axis=0),
                           np.array(rows_ref)),
            }
            for layout, (got, mine, want) in cases.items():
                e, en = rel(got, want), rel(mine, want)
                ratio = e / en if en else float("inf") if e else 1.0
                worst = max(worst, ratio)
                print(f"{op:5s} {name:8s} {layout:8s} {e:10.3g} {en:10.3g} {ratio:6.2f}")
    print(f"worst ratio cltune/numpy: {worst:.2f}")
    return 0 if worst <= 1.0 + 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
