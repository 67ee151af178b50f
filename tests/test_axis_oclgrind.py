"""kernels/axis.cl under Oclgrind: no data races (within and across work-groups), no divergent
barriers, no invalid accesses, right answers output by output.

One child process builds AxisLaunchers for the rows, cols and segments layouts, both
finishes (a second kernel, and onepass: the last group of a block finishes behind an atomic
ticket, partials exchanged through atomics), long segments (a device-side list read by the
whole-group kernel), on small odd shapes that split rows and columns over groups (Oclgrind has
one compute unit, so groups_per_cu is the group count). A negative control shows the harness
is not vacuous: the one-pass finish with plain partials is reported as an inter-group race.
The uninitialised-value checker stays off (Oclgrind 21.10 segfaults on vloadN with it and
mistracks reused buffers; see tests/test_oclgrind.py).
"""

from __future__ import annotations

import pytest
from support.oclgrind import run_marked

pytestmark = [pytest.mark.oclgrind, pytest.mark.multiprocess]
MARK = "CLTUNE-AXIS-OCLGRIND "

SCRIPT = r'''
from dataclasses import replace
import numpy as np
import cltune.families.axis.kernel as ak
from cltune.families.axis.reference import Problem, bounds, compare, reference, run_once
from cltune.families.axis.config import AxisConfig as C
from cltune.families.axis.launch import AxisLauncher
from cltune.core.ops import OpSpec
from cltune.core.inputs import make_input

KEEP = []
if NEGATIVE:  # plain stores/loads of the one-pass partials: must be reported
    src = ak.axis_source()
    ak.axis_source = lambda: src.replace("#elif CLT_PASSES == 1\n", "#elif 0\n", 1)
ROWS = [C(wg=8, lanes=1, vec=1, items=1, groups_per_cu=2),
        C(wg=8, lanes=4, vec=1, items=2, groups_per_cu=4),
        C(wg=8, lanes=4, vec=1, items=1, groups_per_cu=4, onepass=1),
        C(wg=16, lanes=16, vec=1, items=2, groups_per_cu=4, onepass=1)]
COLS = [C(wg=8, lanes=0, cols=4, vec=1, items=2, groups_per_cu=4),
        C(wg=8, lanes=0, cols=2, vec=1, items=1, groups_per_cu=4, onepass=1),
        C(wg=8, lanes=0, cols=8, vec=1, items=1, groups_per_cu=2),
        C(wg=8, lanes=0, cols=2, vec=1, items=2, groups_per_cu=4, lockstep=1),
        C(wg=8, lanes=0, cols=4, vec=1, items=3, groups_per_cu=4, stream=1)]
# clt_ax_packed (blocks of vec rows: rows of 2, 4, 8, 16 <= vec folded as a tree of vectors,
# other lengths <= 16 transposed; CPUs: Oclgrind's device says GPU too, so the launcher is
# told it is a CPU): whole blocks, the tail rows
PACKED = [C(wg=1, lanes=1, vec=4, items=2, groups_per_cu=2),
          C(wg=2, lanes=1, vec=8, items=1, groups_per_cu=4),
          C(wg=1, lanes=1, vec=16, items=1, groups_per_cu=2)]
# clt_ax_cols_narrow (1..16 columns read as a flat array; CPUs, streamed columns): whole
# blocks of vec rows, the tail rows, several outer blocks
NARROW = [C(wg=4, lanes=0, cols=1, vec=4, items=2, groups_per_cu=2, stream=1)]
# clt_ax_rows and clt_ax_segs as CPUs build them (CLT_AX_BLOCKED: a group takes a contiguous
# block of row units; the launcher told it is a CPU): blocks that end mid-way, rows split into
# pieces, long segments handed to their own groups
BLOCKED = [C(wg=1, lanes=1, vec=4, items=2, groups_per_cu=2),
           C(wg=4, lanes=2, vec=1, items=1, groups_per_cu=4)]
if NEGATIVE:
    ROWS, COLS, PACKED, NARROW, BLOCKED = [ROWS[2]], [], [], [], []
lens = np.array([0, 3, 700, 1, 0, 40, 5])
SEGS = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
PROBLEMS = {"rows": [Problem(3, 37, 1), Problem(1, 301, 1), Problem(5, 2, 1)],
            "cols": [Problem(1, 37, 3), Problem(2, 29, 5), Problem(1, 200, 2)],
            "segs": [Problem(1, int(SEGS[-1]), 1, SEGS)],
            "packed": [Problem(37, 4, 1), Problem(11, 2, 1), Problem(9, 8, 1), Problem(2, 2, 1),
                       Problem(21, 4, 1), Problem(17, 16, 1),
                       Problem(19, 7, 1), Problem(8, 12, 1), Problem(3, 5, 1)],
            "blocked": [Problem(3, 37, 1), Problem(1, 301, 1), Problem(9, 70, 1),
                        Problem(41, 33, 1)],
            "narrow": [Problem(1, 37, 3), Problem(2, 29, 5), Problem(1, 9, 2), Problem(1, 40, 16),
                       Problem(3, 8, 1)]}
out = {"runs": []}
for op, dtype in [("sum", "float32"), ("max", "float32"), ("sum", "int32")]:
    spec = OpSpec(op, dtype)
    for cfg in ROWS + COLS + PACKED + NARROW + BLOCKED:
        packed, narrow, blocked = cfg in PACKED, cfg in NARROW, cfg in BLOCKED
        la = AxisLauncher(ctx, dev, replace(info, type="cpu") if packed or narrow or blocked
                          else info, spec, cfg)
        KEEP.append(la)
        kinds = ["packed"] if packed else ["narrow"] if narrow else ["blocked", "segs"] \
            if blocked \
            else ["rows", "segs"] if cfg.lanes else ["cols"]
        if NEGATIVE:
            kinds = ["rows"]
        for kind in kinds:
            for p in PROBLEMS[kind]:
                xs = make_input(spec, p.n)
                try:
                    got = run_once(la, q, p, xs)
                    want, scale = reference(spec, p, xs)
                    b = bounds(la, p, scale) if spec.is_float else np.zeros(p.outputs)
                    err = compare(spec, got, want, b)
                except Exception as e:
                    err = f"{type(e).__name__}: {e}"[:300]
                expect = packed and 2 <= p.r <= 16 and p.outer >= cfg.vec  # a block of rows
                if la.packs(p.outer, p.r) != expect:
                    err = err or f"packed {la.packs(p.outer, p.r)}, expected {expect}"
                if la.narrows(p.r, p.inner) != (kind == "narrow"):
                    err = err or f"narrow {la.narrows(p.r, p.inner)} for {kind}"
                out["runs"].append({"cfg": cfg.short(), "spec": str(spec), "kind": kind,
                                    "shape": [p.outer, p.r, p.inner], "error": err})
print(MARK + json.dumps(out), flush=True)
'''


def _run(negative: bool):
    return run_marked(SCRIPT, MARK, negative=negative)


def test_axis_kernels_are_clean_under_oclgrind():
    res, summary = _run(False)
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong[:10]
    # not vacuous: every layout, both finishes and the segments ran
    ran = {(r["kind"], "1p" in r["cfg"]) for r in summary["runs"]}
    assert ran >= {("rows", False), ("rows", True), ("cols", False), ("cols", True),
                   ("segs", False), ("packed", False), ("narrow", False)}
    assert res.reports == [], res.summary(limit=8)


def test_negative_control_plain_partials_race():
    res, summary = _run(True)
    assert summary, res.summary()
    assert any(r.kind == "data-race" for r in res.reports), res.summary(limit=4)
