"""tune_kernel's searches scored on exhaustive tables, with no device (#45): each strategy
(cltune's names: `bayes_opt` is pool_search's Gaussian process, `tpe` Optuna's TPE,
`random_sample`) runs over `--seeds` seeds at each budget (a fraction of the valid configs)
against a table of every config's time; a search's score is the table's best time over the
best time it found (1: it found the best). Medians and means over the seeds, in one table.

Tables: Kernel Tuner cache files (what `scripts/bench_tuner.py` leaves in $TMPDIR as
bench-tuner-CASE.json after an exhaustive run, the median of `--table-rounds` runs), or the
compact form `--save` writes ({case: {"tune_params", "restrictions" (bench_tuner's case),
"times": {key: ms or null}}}), e.g. docs/logs/tuner-tables-pocl-2026-12-07.json:

    python scripts/search_sim.py --tables docs/logs/tuner-tables-pocl-2026-12-07.json
    python scripts/search_sim.py --cache-dir /tmp --cases vector_add,stencil --save OUT.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from bench_tuner import case  # scripts/ (the script's folder) is on sys.path

from cltune.user import strategies
from cltune.user.space import Space


def from_cache(path: Path, name: str) -> dict:
    tp = case(name, "cpu")[0][4]
    times = {}
    for e in json.loads(path.read_text())["cache"].values():
        t = e.get("time")
        times[",".join(str(e[p]) for p in tp)] = t if "__error__" not in e and \
            isinstance(t, (int, float)) else None
    return {"tune_params": tp, "times": times}


def score(table: dict, restrictions: object, strategy: str, budget: int, seed: int) -> float:
    sp = Space(table["tune_params"], restrictions)
    times = table["times"]
    best = [math.inf]

    def cost(cfg: dict, _next: object = None) -> float:
        t = times.get(sp.key(cfg))
        if t is None:
            return strategies.WORST
        best[0] = min(best[0], t)
        return t

    strategies.run(strategy, {"max_fevals": budget}, sp, seed, cost)
    return min(t for t in times.values() if t) / best[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=Path, help="a compact tables file (--save's)")
    ap.add_argument("--cache-dir", type=Path, help="bench_tuner.py's cache files' folder")
    ap.add_argument("--cases", default="vector_add,convolution,matmul,stencil,reduction")
    ap.add_argument("--strategies", default="bayes_opt,tpe,random_sample")
    ap.add_argument("--budgets", default="0.1,0.2,0.3", help="fractions of the valid configs")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--save", type=Path, help="write the tables read, compact")
    a = ap.parse_args()
    if a.tables:
        tables = {k: v for k, v in json.loads(a.tables.read_text()).items()
                  if k in a.cases.split(",")}
    elif a.cache_dir:
        tables = {n: from_cache(a.cache_dir / f"bench-tuner-{n}.json", n)
                  for n in a.cases.split(",")
                  if (a.cache_dir / f"bench-tuner-{n}.json").exists()}
    else:
        ap.error("give --tables or --cache-dir")
    if a.save:
        a.save.write_text(json.dumps(tables, indent=0))
    names = a.strategies.split(",")
    print(f"| case | valid of configs | budget | {' | '.join(names)} |")
    print(f"|---|---|---|{'---|' * len(names)}")
    for name, table in tables.items():
        restrictions = case(name, "cpu")[1].get("restrictions")
        valid = sum(t is not None for t in table["times"].values())
        for frac in (float(f) for f in a.budgets.split(",")):
            budget = max(1, int(valid * frac))
            cells = []
            for s in names:
                qs = [score(table, restrictions, s, budget, seed) for seed in range(a.seeds)]
                cells.append(f"{statistics.median(qs):.3f} ({statistics.mean(qs):.3f})")
            print(f"| {name} | {valid} of {len(table['times'])} | {budget} "
                  f"({frac:.0%}) | {' | '.join(cells)} |", flush=True)
    print(f"\nmedian (mean) over {a.seeds} seeds of the table's best time / the best found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
