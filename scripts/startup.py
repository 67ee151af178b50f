"""First-call cost of get_reducer in a fresh process: cold (empty kernel cache) vs warm.

    python scripts/startup.py --device 0 [--db URL]

Runs three child processes: with an empty pyopencl binary cache (compiler runs), then twice with
that cache filled (a second process starts fast). Each reports get_reducer() + the first call
(lookup, build or cache load, launch, result on host) and a warm call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np, pyopencl as cl, pyopencl.array as cla
from cltune import get_reducer
from cltune.device.select import select
t_import = time.perf_counter() - t0
info, dev = select(sys.argv[1]); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
x = cla.to_device(q, np.ones(1 << 20, np.float32)); q.finish()
t = time.perf_counter(); r = get_reducer(q, db=sys.argv[2] or None)
t_get = time.perf_counter() - t
t = time.perf_counter(); v = r(x).get(); t_first = time.perf_counter() - t
t = time.perf_counter(); r(x).get(); t_warm = time.perf_counter() - t
assert v == 1 << 20
print(json.dumps({"import_s": t_import, "get_reducer_s": t_get, "first_call_s": t_first,
                  "warm_call_s": t_warm}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="0")
    ap.add_argument("--db", default="")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache, "POCL_CACHE_DIR": f"{cache}/pocl"}
        for label in ("cold cache", "warm cache", "warm cache"):
            out = subprocess.run([sys.executable, "-c", CHILD, a.device, a.db], env=env,
                                 capture_output=True, text=True, check=True).stdout
            d = json.loads(out.strip().splitlines()[-1])
            print(f"{label:>10}: import {d['import_s'] * 1e3:7.1f} ms | get_reducer "
                  f"{d['get_reducer_s'] * 1e3:7.1f} ms | first call {d['first_call_s'] * 1e3:7.1f}"
                  f" ms | warm call {d['warm_call_s'] * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
