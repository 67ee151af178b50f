#!/usr/bin/env python3
"""What crash-proofing costs an application: the first call of `get_reducer(q)(x)` (and of a
`cltune.ReductionKernel` and a statistic) in a fresh process, with the vetting verdicts cold
(once per driver: the configs run in the worker first; the compilers' caches empty too), warm
(verdicts read from the cache file, compilers' caches warm) and off (`CLTUNE_TRUST_DRIVER=1`,
compilers' caches empty: what a first call cost before vetting existed), and the health check
of every device (the first `cltune devices`).

Each scenario runs in its own process, `--repeats` times, interleaved; medians are printed with
the ratio to the `off` case. The health verdict is made once beforehand and shared by every
scenario (it is what `cltune devices` costs, printed on its own).

    python scripts/isolation_cost.py --device 0:0 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np, pyopencl as cl, pyopencl.array as cla
import cltune
from cltune.device.select import select
info, dev = select(sys.argv[1])
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
x = cla.to_device(q, np.random.default_rng(0).random(1 << 20).astype(np.float32))
t1 = time.perf_counter()
r = cltune.get_reducer(q)
v = r(x).get()
t2 = time.perf_counter()
r(x).get()
t3 = time.perf_counter()
k = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]*x[i]", "__global const float *x")
k(x).get()
t4 = time.perf_counter()
cltune.argmax(x)
t5 = time.perf_counter()
print(json.dumps({"import+select": t1 - t0, "get_reducer first call": t2 - t1,
                  "second call": t3 - t2, "ReductionKernel first call": t4 - t3,
                  "argmax first call": t5 - t4}))
"""


def run(device: str, cache: str, env_extra: dict[str, str]) -> dict[str, float]:
    env = {**os.environ, "CLTUNE_CACHE_DIR": cache, **env_extra}
    out = subprocess.run([sys.executable, "-c", CHILD, device], capture_output=True, text=True,
                         env=env, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", required=True, help="index, P:D or name (as `cltune devices`)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="cltune-isolation-")
    health_dir = os.path.join(base, "health")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cltune", "devices", "--json", "--db",
                    os.path.join(base, "none.db")], env={**os.environ,
                                                         "CLTUNE_CACHE_DIR": health_dir},
                   capture_output=True, check=True, timeout=900)
    print(f"health check of every device (first `cltune devices`): "
          f"{time.perf_counter() - t0:.2f} s")
    rows: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "off": []}
    warm_dir = os.path.join(base, "warm")
    shutil.copytree(health_dir, warm_dir)
    run(a.device, warm_dir, {})  # fills the vetting verdicts of `warm`
    for i in range(a.repeats):
        cold_dir = os.path.join(base, f"cold{i}")
        shutil.copytree(health_dir, cold_dir)  # health known, no vetting verdict yet
        # `cold` and `off`: a new driver, so the compilers' caches (PoCL's kcache, pyopencl's
        # binaries, both under XDG_CACHE_HOME) start empty too
        fresh = {"XDG_CACHE_HOME": tempfile.mkdtemp(dir=base)}
        rows["cold"].append(run(a.device, cold_dir, fresh))
        rows["warm"].append(run(a.device, warm_dir, {}))
        fresh = {"XDG_CACHE_HOME": tempfile.mkdtemp(dir=base), "CLTUNE_TRUST_DRIVER": "1"}
        rows["off"].append(run(a.device, health_dir, fresh))
    keys = list(rows["off"][0])
    med = {s: {k: statistics.median(r[k] for r in v) for k in keys} for s, v in rows.items()}
    print(f"{'seconds (median of ' + str(a.repeats) + ')':32s}" + "".join(
        f"{s:>10s}" for s in rows) + "   cold-off  warm-off")
    for k in keys:
        print(f"{k:32s}" + "".join(f"{med[s][k]:10.3f}" for s in rows)
              + f"{med['cold'][k] - med['off'][k]:10.3f}{med['warm'][k] - med['off'][k]:10.3f}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
