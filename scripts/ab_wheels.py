"""Two builds of cltune side by side: per-call time of `get_reducer(q)(x)` for each, alternated.

Each build is a directory that holds an installed cltune (e.g. `pip install --no-deps --target
DIR WHEEL`). Rounds alternate A, B, B, A, ... in fresh processes (a process imports one build);
each round times `--calls` back-to-back calls per size after a warm-up, blocking once at the
end, and checks the result against numpy. Medians over rounds and the ratio B/A are printed
(below 1: B is faster). Both builds answer from the same fallback level (no database: shipped
results or the builtin config), so they run the same configs unless the builds differ there.

    python scripts/ab_wheels.py --a /tmp/old --b /tmp/new --device 0 --sizes 2^12,2^20,2^24
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import numpy as np
a = json.loads(sys.argv[1])
import cltune, pyopencl as cl, pyopencl.array as cla
from cltune.device.select import select
info, dev = select(a["device"])
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev)
r = cltune.get_reducer(q, db=a["db"])
out = {"file": cltune.__file__, "per_call_us": {}, "config": {}}
for n in a["sizes"]:
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    xd = cla.to_device(q, x)
    got = float(r(xd).get())
    want = float(x.astype(np.float64).sum())
    assert abs(got - want) <= 1e-3 * abs(want) + 1e-3, (n, got, want)
    for _ in range(a["warmup"]):
        r(xd)
    q.finish()
    t0 = time.perf_counter()
    for _ in range(a["calls"]):
        res = r(xd)
    res.get()
    out["per_call_us"][n] = (time.perf_counter() - t0) / a["calls"] * 1e6
    out["config"][n] = r.explain(n).config.short()
print(json.dumps(out))
"""


def parse_sizes(text: str) -> list[int]:
    return [1 << int(p.split("^")[1]) if "^" in p else int(p) for p in text.split(",")]


def run(build: str, args: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": build + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYTHONSAFEPATH": "1"}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                       text=True, env=env, timeout=600, cwd="/")
    if r.returncode:
        raise SystemExit(f"build {build} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="directory with build A (e.g. the old wheel)")
    ap.add_argument("--b", required=True, help="directory with build B (e.g. the new wheel)")
    ap.add_argument("--device", default="0")
    ap.add_argument("--sizes", default="2^12,2^20,2^24")
    ap.add_argument("--rounds", type=int, default=6, help="per build, alternated")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--db", default="/nonexistent/cltune-ab.db",
                    help="results database both builds read (default: none)")
    ap.add_argument("--json", help="write the raw rounds here")
    a = ap.parse_args()
    args = {"device": a.device, "sizes": parse_sizes(a.sizes), "calls": a.calls,
            "warmup": a.warmup, "db": a.db}
    rounds: dict[str, list[dict]] = {"A": [], "B": []}
    order = [("A", a.a), ("B", a.b)]
    for i in range(a.rounds):
        for name, build in order if i % 2 == 0 else order[::-1]:
            rounds[name].append(run(build, args))
    for name in "AB":
        print(f"{name}: {rounds[name][0]['file']}")
    print(f"{'n':>10} {'A us/call':>10} {'B us/call':>10} {'B/A':>6}  configs (A | B)")
    for n in args["sizes"]:
        med = {k: statistics.median(r["per_call_us"][str(n)] for r in v)
               for k, v in rounds.items()}
        print(f"{n:>10} {med['A']:>10.2f} {med['B']:>10.2f} {med['B'] / med['A']:>6.3f}  "
              f"{rounds['A'][0]['config'][str(n)]} | {rounds['B'][0]['config'][str(n)]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rounds, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
