# ruff: noqa  (one-off experiment, kept terse)
"""The radix top-k with 2-3 groups a row under Oclgrind (races, invalid accesses) and against the
reference: radix configs with and without kept counts, local and global sort; ROWS, K, FEW (few
distinct values), SEL (case indices). Run from the repository root:
    SEL=0,1,2 python scripts/experiments/topk_radix_oclgrind.py"""
import sys
sys.path.insert(0, "tests")
from support.oclgrind import run_marked
SCRIPT = r'''
import json
import numpy as np
import pyopencl.array as cla
from cltune.families.topk import launch as topk_launch
from cltune.families.topk.config import TopkConfig
from cltune.families.topk.kernel import TopkSpec, spec_for
from cltune.families.topk.launch import TopkLauncher, groups
from cltune.families.topk.reference import compare, reference, sample
rng = np.random.default_rng(3)
out = {"runs": []}
import os
cases = [(TopkConfig("radix", 8, 4, 4), 1 << 24, True), (TopkConfig("radix", 8, 4, 4), 0, True),
         (TopkConfig("radix", 8, 4, 4), 0, False), (TopkConfig("radix", 16, 8, 11), 1 << 24, True),
         (TopkConfig("radix", 16, 8, 11), 0, True), (TopkConfig("radix", 1, 8, 8), 1 << 24, False)]
sel = os.environ.get("SEL")
if sel: cases = [cases[int(c)] for c in sel.split(",")]
for cfg, keep, local_sort in cases:
    topk_launch.KEEP_BYTES = keep
    rows, m, k = int(os.environ.get('ROWS', 1)), 9001, int(os.environ.get('K', 5))
    h = sample(np.dtype(np.float32), rows, m, rng)
    if os.environ.get('FEW'): h = rng.integers(0, 3, (rows, m)).astype(np.float32)
    err = ""
    try:
        spec = spec_for(np.dtype(np.float32), k, info)
        spec = TopkSpec(spec.dtype, spec.kp, local_sort)
        la = TopkLauncher(ctx, dev, info, spec, cfg)
        v = cla.empty(q, rows * k, np.float32)
        i = cla.empty(q, rows * k, np.int64)
        la.run(q, cla.to_device(q, h.ravel()), 0, m, rows, k, True, v, i)
        err = compare(v.get().reshape(rows, k), i.get().reshape(rows, k), *reference(h, k))
    except Exception as e:
        err = f"{type(e).__name__}: {e}"[:300]
    out["runs"].append({"cfg": cfg.short(), "keep": keep, "local": local_sort, "error": err,
                        "gpr": groups(cfg, info.compute_units, m, rows)})
print(MARK + json.dumps(out), flush=True)
'''
res, summary = run_marked(SCRIPT, "OG ")
print(res.returncode, summary)
import collections, re as _re
c = collections.Counter()
for r in res.reports:
    lines = tuple(int(x) for x in _re.findall(r"At line (\d+)", r.text))
    c[(r.kernel, r.message.split(' at ')[0] + ' ' + r.message.split()[-3], lines)] += 1
for k, v in c.most_common(): print(v, k)
