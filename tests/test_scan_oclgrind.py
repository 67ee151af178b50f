"""kernels/scan.cl under Oclgrind: no data races (within a group and across its three
launches), no divergent barriers, no invalid accesses, right answers.

One child process launches ScanLaunchers of small configs (local tree; tiles staged through
__local memory or read directly; several groups, so the reduce -> carries -> scan path runs)
on lengths that are not multiples of anything: whole arrays, rows (an axis), CSR segments with
an empty one, columns, inclusive and exclusive, at an element offset. A negative control shows
the harness is not vacuous: the group scan without the barrier between its read and its write
is reported as a race.
"""

from __future__ import annotations

import pytest
from support.oclgrind import run_marked

pytestmark = [pytest.mark.oclgrind, pytest.mark.multiprocess]
MARK = "CLTUNE-SCAN-OCLGRIND "

SCRIPT = r'''
import numpy as np
import cltune.families.scan.kernel as sk
from cltune.families.scan.config import ScanConfig as C
from cltune.families.scan.family import ScanVariant
import cltune.families.scan.launch as sl
from cltune.families.scan.launch import ScanLauncher, plan
sl.TILE_COLS = True  # GPUs' short columns by a group's carries (off until measured)
from cltune.families.scan.reference import compare, reference, roundings, run_view, sample

if NEGATIVE:  # the group scan's tree without the barrier between its reads and writes
    src = sk.scan_source()
    cut = """            pf = sf[lid - off];
        }
        barrier(CLK_LOCAL_MEM_FENCE);"""
    assert cut in src
    sk.scan_source = lambda: src.replace(cut, """            pf = sf[lid - off];
        }""", 1)
ROWS = [C("rows", wg=4, items=2, stage=1, group_scan=0, groups_per_cu=4),
        C("rows", wg=8, items=4, stage=0, group_scan=0, groups_per_cu=2),
        C("rows", wg=1, items=8, stage=2, group_scan=0, groups_per_cu=8)]
if info.int64_atomics:  # the chained pass: a tile a group, look-back over the state words
    ROWS += [C("rows", wg=4, items=2, stage=1, chain=1), C("rows", wg=8, items=4, chain=1),
             C("rows", wg=4, items=2, stage=1, groups_per_cu=16, chain=3),
             C("rows", wg=1, items=8, stage=2, groups_per_cu=16, chain=3),
             C("rows", wg=1, items=16, stage=2, groups_per_cu=4, chain=3)]
COLS = [C("cols", wg=4, items=2, stage=0, group_scan=0, groups_per_cu=8),
        C("cols", wg=1, items=64, stage=0, group_scan=0, groups_per_cu=8)]  # a wide strip
# the GPUs' cut, forced: groups of wc strips by wg / wc chunks, top lanes per column
GPU_COLS = [C("cols", wg=8, items=1, stage=0, group_scan=0, groups_per_cu=64)]
_defines = sk.build_defines  # and the GPUs' build: rows loaded in batches before their stores
sk.build_defines = lambda v, c, f, **kw: _defines(v, c, f, **{**kw, "gpu": c in GPU_COLS})
CASES = [((301,), 0, False, None), ((301,), 0, True, None), ((7, 45), 1, False, None),
         ((120,), 0, True, np.array([0, 3, 3, 50, 51, 119, 120])), ((37, 6), 0, True, None),
         ((3, 29, 5), 1, False, None), ((1500, 3), 0, True, None), ((41, 70), 0, True, None),
         ((43, 5), 1, True, None)]  # rows shorter than a vector: flagged vectors
VARIANTS = [("sum", "float32"), ("sum", "int32"), ("max", "float32")]
if NEGATIVE:
    ROWS, COLS, GPU_COLS, CASES, VARIANTS = ROWS[:1], [], [], CASES[:1], VARIANTS[:1]
out = {"runs": []}
for op, dtype in VARIANTS:
    for shape, axis, excl, offs in CASES:
        outer = int(np.prod(shape[:axis])); r = shape[axis]; inner = int(np.prod(shape[axis + 1:]))
        for cfg in ([*COLS, *GPU_COLS] if inner > 1 else ROWS):
            v = ScanVariant(op, dtype, cfg.layout)
            la = ScanLauncher(ctx, dev, info, v, cfg)
            if cfg in GPU_COLS:
                la.plan = (lambda c: lambda o, r, i: plan(c, 1, o, r, i, gpu=True))(cfg)
            x = sample(v, shape, seed=len(out["runs"]))
            try:
                got = run_view(la, q, x, (outer, r, inner), excl, offs, xoff=1)
                want, scale = reference(v, x, axis, excl, offs)
                p = la.plan(outer, r, inner)
                chk = compare(v, got.reshape(shape), want.reshape(shape), scale,
                              roundings(v, cfg, p.groups, p.chunk, r, p.lanes))
                err, groups = chk.reason, p.groups
            except Exception as e:
                err, groups = f"{type(e).__name__}: {e}"[:300], 0
            out["runs"].append({"cfg": cfg.short(), "variant": str(v), "shape": shape,
                                "error": err, "groups": groups, "gpu": cfg in GPU_COLS,
                                "lanes": getattr(p, "lanes", 1) if groups else 0,
                                "tile": bool(groups and getattr(p, "tile", False))})
print(MARK + json.dumps(out), flush=True)
'''


def test_scan_kernels_are_clean_under_oclgrind():
    res, summary = run_marked(SCRIPT, MARK)
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong[:10]
    assert any(r["groups"] > 1 for r in summary["runs"])  # the three-launch path ran
    assert any(r["gpu"] and r["lanes"] > 1 for r in summary["runs"])  # GPUs' top lanes ran
    assert any(r["gpu"] and r["tile"] for r in summary["runs"])  # short columns' group carries
    assert any(r["cfg"].endswith("chain") and r["groups"] > 4 for r in summary["runs"]), \
        "Oclgrind has cl_khr_int64_base_atomics: the chained pass must be checked"
    assert any("chunks" in r["cfg"] and r["groups"] > 4 for r in summary["runs"])
    assert any(r["variant"].endswith("/cols") for r in summary["runs"])
    assert any(r["cfg"].startswith("cols wg1 i64") and r["groups"] > 1 for r in summary["runs"])
    assert res.reports == [], res.summary(limit=8)


def test_negative_control_group_scan_without_barrier_races():
    res, summary = run_marked(SCRIPT, MARK, negative=True)
    assert summary, res.summary()
    assert any(r.kind == "data-race" for r in res.reports), res.summary(limit=4)


GENERIC = r'''
import numpy as np
import pyopencl.array as cla
from cltune.families.scan.generic import GenericScanKernel

out = {"runs": []}
h = (np.arange(301, dtype=np.int32) * 7) % 11 - 5
fl = ((np.arange(301) % 37) == 0).astype(np.int32)
x, f = cla.to_device(q, h), cla.to_device(q, fl)
y = cla.empty(q, (301,), np.int32)
k = GenericScanKernel(ctx, np.int32, "__global int *x, __global int *fl, __global int *y",
                      "x[i]", "across_seg_boundary ? b : a+b", "0", "y[i] = prev_item",
                      is_segment_start_expr="fl[i]")
k(x, f, y)
seg = np.cumsum(fl) - 1
want = np.concatenate([np.concatenate([[0], np.cumsum(h[seg == s])[:-1]])
                       for s in range(seg.max() + 1)])
out["runs"].append({"what": "segmented exclusive", "ok": bool((y.get() == want).all())})
a = cla.to_device(q, np.concatenate([h, [0]]).astype(np.int32))
GenericScanKernel(ctx, np.int32, "__global int *ary", "ary[i]", "a+b", "0",
                  "ary[i + 1] = item;")(a, size=301)
out["runs"].append({"what": "in place, shifted", "ok": bool((a.get()[1:] == np.cumsum(h)).all())})
# vetting's check of the segmented kernel: its launches against clt_gs_serial
from cltune.families.scan.generic import check_scan
why = check_scan(ctx, q, dev, info, k._ctor, [], [x, f, y], 301)
out["runs"].append({"what": "vetting check", "ok": why == ""})
# the tiled layout (GPUs' builtin): tiles through __local memory, several tiles a chunk, a
# short last tile, groups of 8 and 16; segmented exclusive and in place shifted
from cltune.families.scan.gscan_config import GScanConfig
from cltune.families.scan.gscan_target import GScanLauncher
for cfg in (GScanConfig("tiled", 8, 1, 4), GScanConfig("tiled", 16, 2, 2),
            GScanConfig("tiled", 8, 64, 1)):
    y2 = cla.empty(q, (301,), np.int32)
    GScanLauncher(k, dev, cfg).enqueue(q, (x, f, y2), 301)
    a2 = cla.to_device(q, np.concatenate([h, [0]]).astype(np.int32))
    sh = GenericScanKernel(ctx, np.int32, "__global int *ary", "ary[i]", "a+b", "0",
                           "ary[i + 1] = item;")
    GScanLauncher(sh, dev, cfg).enqueue(q, (a2,), 301)
    ok = bool((y2.get() == want).all() and (a2.get()[1:] == np.cumsum(h)).all())
    out["runs"].append({"what": "tiled " + cfg.short(), "ok": ok})
tiled = GScanConfig("tiled", 8, 2, 4).to_dict()
why = check_scan(ctx, q, dev, info, {**k._ctor, "_config": tiled}, [], [x, f, y], 301)
out["runs"].append({"what": "vetting check, tiled", "ok": why == ""})
print(MARK + json.dumps(out), flush=True)
'''


def test_generic_scan_kernels_are_clean_under_oclgrind():
    """cltune.GenericScanKernel: segmented, exclusive through prev_item, and in place with
    shifted outputs (the inputs are read once, before any output is written); vetting's
    check of the segmented one (clt_gs_serial); the tiled layout's launches (several tiles a
    chunk, a short last tile) and its check."""
    res, summary = run_marked(GENERIC, MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert len(summary["runs"]) == 7 and all(r["ok"] for r in summary["runs"]), summary["runs"]
    assert res.reports == [], res.summary(limit=8)


COMPACT = r'''
import numpy as np
import pyopencl.array as cla
import cltune
import cltune.families.scan.compact as compact

out = {"runs": []}
h = ((np.arange(1001, dtype=np.int32) * 7) % 11 - 5).astype(np.int32)
x = cla.to_device(q, h)
# tiled (several tiles and chunks), CPUs', and NVIDIA's ballots (emulated: 2 warps, 3 rows)
# (groups of 24 and 96: the counts' sum in halves rounded up)
for shape, ballot in (((8, 4, 3), 0), ((4, 2, 2), 0), ((1, 1, 2), 0), ((64, 3, 2), 2),
                      ((24, 2, 3), 0), ((96, 1, 2), 2)):
    compact._shape_of = lambda dev, size, ballot=False, shape=shape: shape
    compact._use_ballot = lambda dev, ballot=ballot: ballot
    t, f, c, _ = cltune.partition(x[1:], "ary[i] > 0")
    k = h[1:]
    n = int(c.get())
    ok = n == (k > 0).sum() and (t.get()[:n] == k[k > 0]).all() and \
        (f.get()[:k.size - n] == k[k <= 0]).all()
    idx = cltune.nonzero(x)[0].get()
    # a fixed size past the count: the scatter fills the tail, a block a group
    nz = np.flatnonzero(h)
    sized = cltune.nonzero(x, size=nz.size + 37, fill_value=-3)[0].get()
    ok = ok and (sized[:nz.size] == nz).all() and (sized[nz.size:] == -3).all()
    out["runs"].append({"shape": shape, "ballot": ballot,
                        "ok": bool(ok and (idx == nz).all())})
# 4-byte indices, a fixed size past the count (the fill read from no element) and 2-D unravel
want = np.nonzero(h.reshape(7, 143))
got = cltune.nonzero(x.reshape(7, 143), size=want[0].size + 5, fill_value=-1,
                     index_dtype=np.int32)
ok = all((g.get()[:w.size] == w).all() and (g.get()[w.size:] == -1).all()
         for g, w in zip(got, want))
out["runs"].append({"shape": "sized-int32", "ballot": 0, "ok": bool(ok)})
# vetting's check: every call form against the one-work-item walk (clt_sel_serial), 4-byte
# indices with the unravel kernel
why = compact.check_select(ctx, q, dev, info, "int32", "ary[i] > 0", [], "", 2, (8, 4, 3, 0),
                           h, [])
out["runs"].append({"shape": "vetting check", "ballot": 0, "ok": why == ""})
print(MARK + json.dumps(out), flush=True)
'''


def test_compaction_kernels_are_clean_under_oclgrind():
    """kernels/compact.cl's count, top and scatter (partition's two sides, nonzero's indices,
    vetting's serial walk)
    with tiled groups staging through __local memory, with one work-item a chunk, and by
    warp ballots (emulated), groups of sizes that are not powers of two, each with nonzero's
    tail of a fixed size filled by the scatter;
    nonzero's 4-byte indices of a fixed size, unravelled in 2-D."""
    res, summary = run_marked(COMPACT, MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert len(summary["runs"]) == 8 and all(r["ok"] for r in summary["runs"]), summary["runs"]
    assert res.reports == [], res.summary(limit=8)


LB_WARP = r'''
import numpy as np
import cltune.families.scan.kernel as sk
from cltune.families.scan.config import ScanConfig as C
from cltune.families.scan.family import ScanVariant
from cltune.families.scan.launch import ScanLauncher
from cltune.families.scan.reference import compare, reference, roundings, run_view, sample

src = sk.scan_source()
sk.scan_source = lambda: ("#define CLT_LB_WARP 2\n" + src +
                          "\n#if LB_WARP != 2\n#error not the emulated walk\n#endif\n")
out = {"runs": []}
for op, dtype in (("sum", "float32"), ("sum", "int32"), ("max", "float32")):
    v = ScanVariant(op, dtype)
    # chain=1: the state words read by atomics (chain=2's volatile loads race by the rules)
    for cfg in (C("rows", wg=32, items=1, stage=1, chain=1), C("rows", wg=32, items=2, chain=1)):
        la = ScanLauncher(ctx, dev, info, v, cfg)
        for n, excl, offs in ((1201, False, None), (1201, True, np.array([0, 40, 40, 700, 1201]))):
            x = sample(v, (n,), seed=len(out["runs"]))
            got = run_view(la, q, x, (1, n, 1), excl, offs, xoff=1)
            want, scale = reference(v, x, 0, excl, offs)
            p = la.plan(1, n, 1)
            chk = compare(v, got, want, scale, roundings(v, cfg, p.groups, p.chunk, n, p.lanes))
            out["runs"].append({"cfg": cfg.short(), "variant": str(v), "error": chk.reason,
                                "groups": p.groups})
print(MARK + json.dumps(out), flush=True)
'''


def test_warp_wide_look_back_is_clean_under_oclgrind():
    """NVIDIA's look-back walk (a warp, ballots and shuffles) with those emulated in __local
    memory (groups of one warp): no races over the state words or the emulation's scratch, no
    divergent barriers, right answers over 19 and 38 groups, segments and exclusive."""
    res, summary = run_marked(LB_WARP, MARK)
    if res.returncode == 0 and summary and not summary["runs"]:
        pytest.skip("no 64-bit atomics")
    assert res.returncode == 0 and summary, res.summary()
    wrong = [r for r in summary["runs"] if r["error"]]
    assert not wrong, wrong[:10]
    assert all(r["groups"] >= 19 for r in summary["runs"])
    assert res.reports == [], res.summary(limit=8)


SORT = r'''
import numpy as np
import pyopencl.array as cla
import cltune.families.scan.sort as S

out = {"runs": []}
rng = np.random.default_rng(4)
S.ONESWEEP_ON["cpu"] = (0, 0)  # whole arrays in groups by onesweep (Oclgrind is a CPU device)
# tiles of 12 x 3 (each sorted in __local memory, 6-bit digits: rounds of 4 and 2 bits) and
# 1 x 37 in chunks (3 and 2 a compute unit), a partial last tile, rows (their own bits sorted
# last), 32- and 64-bit keys, descending
for shape in ((12, 3, 6, 3), (1, 37, 8, 2)):
    for dt in ("float32", "int64"):
        h = (rng.standard_normal(1001) * 100).astype(dt)
        x = cla.to_device(q, h)
        for rows, desc, own in ((1, False, False), (7, True, False), (7, False, True)):
            cols = h.size // rows
            v = x[:rows * cols].reshape(rows, cols) if rows > 1 else x
            s = S._order(q, v, rows, cols, desc, shape, vet=False, own_rows=own,
                         idx64=own)
            _, pos, _ = S._gather(q, s.prg, s.idx, v.size, cols if rows > 1 else 0, None, True,
                                  s.waits)
            hh = h[:rows * cols].reshape(rows, cols)
            want = np.stack([S.reference_order(r, desc) for r in hh])
            # (a group a row: each row its own histogram's prefix; 64-bit indices)
            ok = np.array_equal(pos.get().reshape(rows, cols), want)
            # the values and positions as the calls take them: written by the last pass
            vals, pos = S._sorted(q, v, rows, cols, desc, True, True, shape=shape, vet=False,
                                  own_rows=own, idx64=own)
            ok = ok and np.array_equal(pos.get().reshape(rows, cols), want) and \
                vals.get().tobytes() == np.take_along_axis(hh, want, 1).tobytes()
            # 1-D: the chunks' passes too (a group form's default there is onesweep)
            if rows == 1:
                vals, pos = S._sorted(q, v, 1, cols, desc, True, True, shape=shape, vet=False,
                                      onesweep=False)
                ok = ok and np.array_equal(pos.get(), want[0]) and \
                    vals.get().tobytes() == h[want[0]].tobytes()
            # the values from their keys, the indices not moved (1-D)
            if rows == 1:
                vals = S._values(q, S._order(q, v, 1, cols, desc, shape, vet=False,
                                             want_idx=False), v).get()
                ok = ok and vals.tobytes() == h[want[0]].tobytes()
            out["runs"].append({"shape": shape, "dtype": dt, "rows": rows, "own": own,
                                "ok": bool(ok)})
# the tile sort's build options: the look-back reading 3 words at once, the counts two to a word
S.ONESWEEP_WINDOW["cpu"], S.TILE_PACK2["cpu"] = 3, True
S._programs = S.ContextCache()
h = (rng.standard_normal(1001) * 100).astype("float32")
x = cla.to_device(q, h)
want = S.reference_order(h, False)
for onesweep in (True, False):
    vals, pos = S._sorted(q, x, 1, h.size, False, True, True, shape=(12, 3, 6, 3), vet=False,
                          onesweep=onesweep)
    ok = np.array_equal(pos.get(), want) and vals.get().tobytes() == h[want].tobytes()
    out["runs"].append({"window": 3, "pack2": True, "onesweep": onesweep, "ok": bool(ok)})
S.ONESWEEP_WINDOW["cpu"], S.TILE_PACK2["cpu"] = 1, False
S._programs = S.ContextCache()
# rows in __local memory: several rows a group with a partial last group, an odd work-group,
# a row at an offset; values (NaN and -0 by index) and positions
for dt in ("float32", "int64"):
    h = (rng.standard_normal(1200) * 100).astype(dt)
    if dt == "float32":
        h[::37] = np.nan
        h[5::41] = -0.0
    x = cla.to_device(q, h)
    for v, rows, cols, plan, desc in ((x[:21].reshape(3, 7), 3, 7, (3, 2, 4), False),
                                      (x[3:1003], 1, 1000, (10, 1, 7), True),
                                      (x[:960].reshape(4, 240), 4, 240, (8, 3, 64),
                                       False),
                                      (x[:900].reshape(9, 100), 9, 100, (7, 2, 16), True)):
        hh = v.get().reshape(rows, cols)
        want = np.stack([S.reference_order(r, desc) for r in hh])
        # in __local memory, then 8 rows a work-item in vector lanes (9 rows: a partial 2nd)
        vplan = S.vec_plan(q.device, 8 if dt == "int64" else 4, rows, cols, force=True)
        for how, go in (("local", lambda: S._rows_local(q, v, rows, cols, desc, plan, True,
                                                        True, vet=False)),
                        ("vec", lambda: S._rows_vec(q, v, rows, cols, desc, vplan, True, True,
                                                    vet=False))):
            if how == "vec" and vplan is None:  # 8 rows of 1024 pass Oclgrind's __local
                continue
            vals, pos = go()
            ok = np.array_equal(pos.get().reshape(rows, cols), want) and \
                vals.get().tobytes() == np.take_along_axis(hh, want, 1).tobytes()
            out["runs"].append({how: plan, "dtype": dt, "rows": rows, "ok": bool(ok)})
# the transposes that sort along another axis: float32 values at an offset, there and back
prg, _ = S._program(q, np.dtype(np.float32), False, None, False)
h = rng.standard_normal(5 + 3 * 17 * 29).astype(np.float32)
v = cla.to_device(q, h)[5:]
t = S._transposed(q, prg, v, 3, 17, 29)
ok = t.get().tobytes() == np.ascontiguousarray(h[5:].reshape(3, 17, 29).transpose(0, 2, 1)
                                               ).tobytes()
ok = ok and S._transposed(q, prg, t, 3, 29, 17).get().tobytes() == h[5:].tobytes()
out["runs"].append({"transpose": True, "ok": bool(ok)})
# the gathers by int64 positions: 4-byte words at an offset, 3-byte values a byte at a time
perm = rng.permutation(300)
pdev = cla.to_device(q, perm.astype(np.int64))
hb = np.frombuffer(np.arange(900, dtype=np.uint8).tobytes(), "V3")
ok = S.take(q, v[:300], pdev, None, prg).get().tobytes() == h[5:305][perm].tobytes()
ok = ok and S.take(q, cla.to_device(q, hb), pdev, None, prg).get().tobytes() == \
    hb[perm].tobytes()
out["runs"].append({"take": True, "ok": bool(ok)})
# rows by the in-group radix sort: groups of 32 x 32 items (counts in __local memory) and of
# 16 x 15 (packed in registers), NaN and -0 by index, a row at an offset
h = rng.standard_normal(1200).astype(np.float32)
h[::37] = np.nan
h[5::41] = -0.0
x = cla.to_device(q, h)
for v, rows, cols, shape, desc in ((x[3:1003], 1, 1000, (32, 32, 4, 1), True),
                                   (x[:960].reshape(4, 240), 4, 240, (16, 15, 4, 1), False)):
    hh = v.get().reshape(rows, cols)
    want = np.stack([S.reference_order(r, desc) for r in hh])
    vals, pos = S._rows_radix(q, v, rows, cols, desc, shape, True, True, vet=False)
    ok = np.array_equal(pos.get().reshape(rows, cols), want) and \
        vals.get().tobytes() == np.take_along_axis(hh, want, 1).tobytes()
    out["runs"].append({"rradix": shape, "ok": bool(ok)})
print(MARK + json.dumps(out), flush=True)
'''


def test_sort_kernels_are_clean_under_oclgrind():
    """kernels/sort.cl's keys, histogram, scan, scatter (tiles sorted in __local memory by groups,
    and one work-item a chunk; indices moved or not), onesweep (every pass's histogram in one
    launch, a pass's tiles by decoupled look-back; a look-back of 3 words at once and the tile
    sort's counts two to a word too), values and gather, and the one-launch
    sorts of rows (in __local memory; in vector lanes; by the in-group radix sort), the
    transposes for other axes, the gathers by positions: right order, no race, no invalid
    access."""
    res, summary = run_marked(SORT, MARK)
    assert res.returncode == 0 and summary, res.summary()
    assert len(summary["runs"]) == 32, summary["runs"]
    assert sum("vec" in r for r in summary["runs"]) == 6
    assert [r for r in summary["runs"] if not r["ok"]] == []
    assert res.reports == [], res.summary(limit=8)
