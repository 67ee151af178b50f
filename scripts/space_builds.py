"""Build every config the expression space offers on a device, for cltune's statistics kernels
(argmax/argmin, norms, mean, var, ...) over several dtypes, and report those that do not build.

A config the space offers must build wherever it is offered (issue #22 item 7): the tuner
prunes a failing one, but the runtime's derived configs come from the same space. Run it on
every new device or driver; it builds in this process (use it on a device you trust, or with
CLTUNE_TRUST_DRIVER=1 semantics in mind).

    python scripts/space_builds.py --device 0 [--ops argmax,var] [--dtypes float32,int32]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pyopencl as cl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0", help="index, P:D or name substring (as cltune's)")
    ap.add_argument("--ops", default="", help="comma-separated (default: every statistic)")
    ap.add_argument("--dtypes", default="float32,float64,int32,int64,uint8")
    ap.add_argument("--limit", type=int, default=0, help="at most this many configs per kernel")
    a = ap.parse_args()

    from cltune.device.select import select
    from cltune.families.expr.launch import ExprLauncher
    from cltune.families.expr.target import make_space
    from cltune.opencl.build import BuildError
    from cltune.stats.kernels import OPS, kernel

    warnings.simplefilter("ignore")
    info, dev = select(a.device)
    ctx = cl.Context([dev])
    ops = [o for o in a.ops.split(",") if o] or list(OPS)
    bad = total = 0
    t0 = time.perf_counter()
    print(f"device: {dev.name} ({dev.platform.name} {dev.platform.version}, "
          f"driver {dev.driver_version})")
    for dt in (np.dtype(d) for d in a.dtypes.split(",") if d):
        if dt == np.float64 and not dev.double_fp_config:
            continue
        for op in ops:
            try:
                knl = kernel(op, ctx, dt)
            except (TypeError, ValueError) as e:
                print(f"  {op}/{dt}: not offered ({e})")
                continue
            space = make_space(info, knl.spec.dtype_out.itemsize)
            cfgs = space.configs()[: a.limit or None]
            fails: dict[str, list[str]] = {}
            for cfg in cfgs:
                total += 1
                try:
                    ExprLauncher(ctx, dev, info, knl.spec, cfg).built()
                except (BuildError, cl.Error) as e:
                    bad += 1
                    first = next((ln for ln in str(e).splitlines() if "error" in ln.lower()),
                                 str(e).splitlines()[0] if str(e) else "?")
                    fails.setdefault(first.strip()[:200], []).append(cfg.short())
            print(f"  {op}/{dt}: {len(cfgs)} configs, {sum(map(len, fails.values()))} fail")
            for why, which in fails.items():
                print(f"    {len(which)}x {why}\n      e.g. {', '.join(which[:4])}")
    print(f"{total} builds, {bad} failed, {time.perf_counter() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
