# ruff: noqa  (one-off experiment, kept terse)
"""Score today's GPU heuristic of expressions along an axis (`expr_axis/defaults.choose`) on
sweep logs of scripts/experiments/stats_axis_gpu_sweep.py: per case, the time of the config
the rule picks (the best of its groups_per_cu variants in the log) over the best config's,
geometric mean and worst per statistic and layout, beside the rule the sweep ran with.

    python scripts/experiments/stats_axis_rule_fit.py docs/logs/h200-stats-axis-sweep-2026-12-03.json docs/logs/h200-stats-axis-sweep-mean-norm-2026-12-03.json
"""
import json, math, sys
from types import SimpleNamespace as NS
from cltune.families.expr_axis.defaults import choose

H200 = NS(type="gpu", max_wg=1024, compute_units=132)
ACC = {"var": 32, "argmax": 16, "mean": 8, "norm2": 8}
G = lambda v: math.exp(sum(map(math.log, v)) / len(v))
strip = lambda c: " ".join(w for w in c.split() if not w.startswith("g/cu="))
now, then = {}, {}
for path in sys.argv[1:]:
    for row in json.load(open(path))["rows"]:
        o, c = (int(v) for v in row["shape"].split("x"))
        view = (o, c, 1) if row["axis"] == 1 else (1, o, c)
        best = row["configs"][0]["us"]
        want = strip(choose(H200, *view, ACC[row["op"]]).short())
        ts = [x["us"] for x in row["configs"] if strip(x["config"]) == want]
        key = (row["op"], row["kind"])
        if not ts:
            print("not in the sweep's grid:", row["shape"], row["op"], row["axis"], want)
            continue
        now.setdefault(key, []).append(min(ts) / best)
        b = [x["us"] for x in row["configs"] if x["config"] == row["builtin"]]
        if b:
            then.setdefault(key, []).append(b[0] / best)
for key in sorted(now):
    v, w = now[key], then.get(key, [])
    print(f"{key[0]:>7} {key[1]}: today {G(v):.3f} (worst {max(v):.2f}, {len(v)} cases)"
          + (f"; the sweep's rule {G(w):.3f} (worst {max(w):.2f})" if w else ""))
for kind in ("rows", "cols"):
    v = sum((now[k] for k in now if k[1] == kind), [])
    w = sum((then[k] for k in then if k[1] == kind), [])
    print(f"{kind}: today {G(v):.3f} worst {max(v):.2f}; the sweeps' rules {G(w):.3f} worst {max(w):.2f}")
