# ruff: noqa  (one-off experiment, kept terse)
"""Score the GPU axis rules on a sweep log (scripts/experiments/axis_gpu_sweep.py --json, e.g.
docs/logs/h200-axis-sweep-2026-12-03.json): for every shape and axis, the time of the config
today's builtin rule picks (cltune.families.axis.defaults, with an H200-like DeviceInfo) and of
the one the sweep's run served, over the best config of the sweep; geometric means per
layout. A rule's pick that the sweep did not launch is listed as missing (not scored).

    python scripts/experiments/axis_rule_fit.py docs/logs/h200-axis-sweep-2026-12-03.json
"""
import json, math, sys
from types import SimpleNamespace as NS

from cltune.families.axis.defaults import builtin_axis_config

H200 = NS(type="gpu", max_wg=1024, local_mem=49152, is_nvidia=True, int64_atomics=True,
          compute_units=132, vector_cap=lambda b: 16)
log = json.load(open(sys.argv[1] if len(sys.argv) > 1 else
                     "docs/logs/h200-axis-sweep-2026-12-03.json"))
score = {}
for row in log["rows"]:
    a, b = (int(v) for v in row["shape"].split("x"))
    kind = row["kind"]  # rows: a rows of b; cols: a reduced rows of b columns
    times = {c[0]: c[1] for c in row["configs"]}
    best = min(times.values())
    rule = builtin_axis_config(H200, kind, a, b, 4).short()
    t_rule, t_served = times.get(rule), times.get(row["served"])
    torch = row.get("torch_us")
    print(f"{row['shape']:>12} axis {row['axis']} {kind}: best {best:6.1f} | rule "
          + (f"{t_rule:6.1f} ({t_rule / best:.2f}x)" if t_rule else "  missing  ")
          + f" [{rule}] | served then {t_served:6.1f} ({t_served / best:.2f}x)"
          + (f" | torch {torch:6.1f}" if torch else ""))
    s = score.setdefault(kind, {"rule": [], "served": []})
    if t_rule:
        s["rule"].append(t_rule / best)
    s["served"].append(t_served / best)
for kind, s in score.items():
    for who, rs in s.items():
        if rs:
            gm = math.exp(sum(map(math.log, rs)) / len(rs))
            print(f"{kind:4s} {who:6s}: geometric mean {gm:.3f}x the best, worst {max(rs):.2f}x "
                  f"({len(rs)} cases)")
