"""kernels/expr.cl (cltune.ReductionKernel, cltune.stats.api) under Oclgrind: no data races, no
divergent barriers, no invalid accesses, right answers.

One child process builds ExprLaunchers for both layouts (strided: a group's work-items read
consecutive elements; contiguous: each streams its own chunk), several work-group sizes,
accumulator counts and group counts (Oclgrind has one compute unit, so groups_per_cu is the
group count), with the accumulator restart (CLT_BLOCK) at its default and at 2 steps so that
small inputs cross it, for a plain float sum, a two-argument dot with a scalar, the struct
argmax (with its per-element fold) and the one-pass variance, on odd sizes with ragged tails.
Two passes only: the single-pass finish is offered on NVIDIA alone (see
cltune.families.expr.defaults.single_pass_passes); the negative control shows that it is reported
as an
inter-group race, which is why. The uninitialised-value checker stays off (see
tests/test_oclgrind.py for the Oclgrind 21.10 defects).
"""

from __future__ import annotations

import pytest
from support.oclgrind import run_marked

pytestmark = [pytest.mark.oclgrind, pytest.mark.multiprocess]
MARK = "CLTUNE-EXPR-OCLGRIND "

SCRIPT = r'''
import numpy as np
import pyopencl.array as cla
import cltune.families.expr.kernel as es
from cltune.stats import api as stats
from cltune.families.expr.config import ExprConfig as C
from cltune.families.expr.launch import ExprLauncher
from cltune.opencl.expression import ExprSpec

KEEP = []
BLOCK = {"value": None}
_options = es.build_options
def options(cfg, **kw):
    extra = [] if BLOCK["value"] is None else [f"-DCLT_BLOCK={BLOCK['value']}"]
    return [*_options(cfg, **kw), *extra]
es.build_options = options
if NEGATIVE:
    CONFIGS = [C("strided", 8, 1, 4, 1)]
    BLOCKS = [None]
else:
    CONFIGS = [C("strided", 8, 2, 4, 2), C("strided", 16, 1, 2, 2),
               C("contiguous", 1, 4, 4, 2), C("contiguous", 4, 2, 2, 2),
               C("strided", 8, 4, 0, 2)]
    BLOCKS = [None, 2]
rng = np.random.default_rng(5)
SIZES = [1, 7, 33, 257, 1031]
sum_spec = ExprSpec.make(np.float32, "0", "a+b", "x[i]", "__global const float *x")
dot_spec = ExprSpec.make(np.float32, "0", "a+b", "x[i]*y[i]*s",
                         "__global const float *x, __global const float *y, float s")
argmax = stats.kernel("argmax", ctx, np.float32)
var = stats.kernel("var", ctx, np.float32)
CASES = [("sum", sum_spec), ("dot", dot_spec), ("argmax", argmax.spec), ("var", var.spec)]
if NEGATIVE:
    CASES = [("sum", sum_spec)]
out = {"runs": []}
for block in BLOCKS:
    BLOCK["value"] = block
    es._builds.clear()
    for cfg in CONFIGS:
        for name, spec in CASES:
            la = ExprLauncher(ctx, dev, info, spec, cfg)
            KEEP.append(la)
            for n in SIZES:
                h = rng.standard_normal(n).astype(np.float32)
                if name == "argmax" and n > 30:
                    h[[3, n - 2]] = h.max() + 1  # a tie: the first wins
                hy = rng.standard_normal(n).astype(np.float32)
                x, y = cla.to_device(q, h), cla.to_device(q, hy)
                KEEP += [x, y]
                res = cla.empty(q, (), spec.dtype_result)
                KEEP.append(res)
                args = {"sum": [x.base_data, 0], "dot": [x.base_data, 0, y.base_data, 0,
                                                         np.float32(0.5)],
                        "argmax": [x.base_data, 0], "var": [x.base_data, 0, 0.0]}[name]
                try:
                    la.enqueue(q, args, 0, 1, n, res.base_data, 0)
                    got = res.get()[()]
                    h64, y64 = h.astype(np.float64), hy.astype(np.float64)
                    want = {"sum": h64.sum(), "dot": (h64 * y64).sum() * 0.5,
                            "argmax": np.argmax(h), "var": h64.var()}[name]
                    if name == "argmax":
                        err = "" if int(got) == int(want) else f"{got} != {want}"
                    else:
                        scale = max(1.0, float(np.abs(h64).sum()))
                        ok = abs(float(got) - float(want)) <= 1e-5 * scale
                        err = "" if ok else f"{got} != {want}"
                except Exception as e:
                    err = f"{type(e).__name__}: {e}"[:300]
                out["runs"].append({"cfg": cfg.short(), "block": block, "case": name,
                                    "n": n, "error": err})
print(MARK + json.dumps(out), flush=True)
'''


def _run(negative: bool):
    return run_marked(SCRIPT, MARK, negative=negative)


def test_expression_kernels_are_clean_under_oclgrind():
    res, summary = _run(False)
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong[:10]
    ran = {(r["cfg"].split()[0], r["block"], r["case"]) for r in summary["runs"]}
    for layout in ("strided", "contiguous"):
        for block in (None, 2):
            for case in ("sum", "dot", "argmax", "var"):
                assert (layout, block, case) in ran
    assert res.reports == [], res.summary(limit=8)


def test_negative_control_single_pass_struct_partials_race():
    """The single-pass finish's plain partial stores are an inter-group race by OpenCL's
    memory model: Oclgrind reports it, so cltune offers passes=1 on NVIDIA only."""
    res, summary = _run(True)
    assert summary, res.summary()
    assert any(r.kind == "data-race" for r in res.reports), res.summary(limit=4)
