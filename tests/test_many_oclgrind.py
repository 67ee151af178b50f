"""kernels/many.cl under Oclgrind: no data races (within and across work-groups), no divergent
barriers, no invalid accesses, right answers array by array.

One child process launches ManyLaunchers of small configs on more arrays than a launch takes
(several launches into one result buffer, unused slots bound to the dummy buffer), of lengths
0, 1, 3 and longer ones that span many groups (the finishing kernel), at element offsets, for
an arithmetic, a norm (double accumulator), an integer and a selecting op. A negative control
shows the harness is not vacuous: the group's tree without its barrier is reported as a race.
"""

from __future__ import annotations

import pytest
from support.oclgrind import run_marked

pytestmark = [pytest.mark.oclgrind, pytest.mark.multiprocess]
MARK = "CLTUNE-MANY-OCLGRIND "

SCRIPT = r'''
import numpy as np
import cltune.families.many.kernel as mk
from cltune.families.many.config import ManyConfig as C
from cltune.families.many.family import ManyVariant
from cltune.families.many.launch import ManyLauncher
from cltune.families.many.reference import Problem, check, host_arrays, upload

if NEGATIVE:  # the group's tree without its barrier: must be reported
    src = mk.many_source()
    i = src.index("void clt_many(")
    cut = "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n    if (lid == 0) {"
    assert cut in src[i:]
    mk.many_source = lambda: src[:i] + src[i:].replace(cut, "    }\n    if (lid == 0) {", 1)
CFGS = [C(wg=8, vec=1, items=1, steps=1, slots=8),
        C(wg=8, vec=4, items=2, steps=1, slots=16),
        C(wg=16, vec=2, items=1, steps=2, slots=8),
        C(wg=1, vec=4, items=4, steps=2, slots=16)]  # CPUs' builtin shape: a work-item a group
VARIANTS = [("sum", "float32"), ("norm", "float32"), ("sum", "int32"), ("max", "int32")]
if NEGATIVE:
    CFGS, VARIANTS = CFGS[:1], VARIANTS[:1]
lengths = (0, 1, 3, 37, 301, 5, 64, 0, 129, 2, 17)
p = Problem(lengths, tuple(i % 3 for i in range(len(lengths))))
out = {"runs": []}
for op, dtype in VARIANTS:
    v = ManyVariant(op, dtype)
    prob = Problem(tuple(max(1, n) for n in lengths), p.offsets) if op == "max" else p
    arrays = host_arrays(v, prob, seed=3)
    bufs = upload(ctx, arrays)
    for cfg in CFGS:
        la = ManyLauncher(ctx, dev, info, v, cfg)
        try:
            chk = check(la, q, bufs, arrays, prob)
            err = chk.reason
        except Exception as e:
            err = f"{type(e).__name__}: {e}"[:300]
        out["runs"].append({"cfg": cfg.short(), "variant": str(v), "error": err,
                            "launches": len(la.layout(prob.offsets, prob.lengths).parts),
                            "split": any(x.split for x in
                                         la.layout(prob.offsets, prob.lengths).parts)})
print(MARK + json.dumps(out), flush=True)
'''


def test_many_kernels_are_clean_under_oclgrind():
    res, summary = run_marked(SCRIPT, MARK)
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong[:10]
    # not vacuous: several launches per call, and arrays finished by the second kernel
    assert all(r["launches"] >= 1 for r in summary["runs"])
    assert any(r["launches"] > 1 for r in summary["runs"])
    assert any(r["split"] for r in summary["runs"])
    assert res.reports == [], res.summary(limit=8)


def test_negative_control_tree_without_barrier_races():
    res, summary = run_marked(SCRIPT, MARK, negative=True)
    assert summary, res.summary()
    assert any(r.kind == "data-race" for r in res.reports), res.summary(limit=4)
