"""The GPU heuristic of expressions along an axis (statistics: var's 32-byte accumulators,
argmin/argmax's 16-byte ones, mean's and the norms' 8-byte ones), which no CPU run reaches:
fitted to H200 sweeps of ~50 configs per case on 24 untuned shapes
(scripts/experiments/stats_axis_gpu_sweep.py, docs/logs/h200-stats-axis-sweep-*.json; scored
by scripts/experiments/stats_axis_rule_fit.py; docs/expressions.md)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from cltune.families.expr_axis.config import AxisExprConfig
from cltune.families.expr_axis.defaults import (
    COL_ITEM_BYTES,
    MAX_COL_LANES,
    MIN_ROW_ELEMS_PER_LANE,
    MIN_ROW_ITEMS,
    ROW_ELEMS_PER_ACC_BYTE,
    SHORT_COL,
    TALL_LANES,
    TALL_OUTPUTS,
    choose,
)
from cltune.families.expr_axis.launch import axis_plan

H200 = NS(type="gpu", max_wg=1024, compute_units=132)
SMALL_GPU = NS(type="gpu", max_wg=64, compute_units=8)


@pytest.mark.parametrize("acc", [8, 16, 32])
@pytest.mark.parametrize("outer,r", [(4000, 3000), (6000, 777), (123, 45678), (65432, 123),
                                     (500, 500), (1000000, 7), (16, 1 << 20), (1, 1),
                                     (3, 2), (1 << 20, 16)])
def test_gpu_rows_a_lane_per_slice_of_the_row_more_for_small_launches(acc, outer, r):
    cfg = choose(H200, outer, r, 1, acc)
    assert cfg.layout == "rows" and cfg.wg == 256 and cfg.items == 4
    per_lane = max(MIN_ROW_ELEMS_PER_LANE, ROW_ELEMS_PER_ACC_BYTE * acc)
    assert cfg.lanes >= min(cfg.wg, -(-r // per_lane))  # every lane a slice of the row
    assert cfg.lanes < 2 * max(1, -(-r // per_lane)) or outer * cfg.lanes // 2 < MIN_ROW_ITEMS
    assert (outer * cfg.lanes >= MIN_ROW_ITEMS or cfg.lanes == cfg.wg
            or cfg.lanes * cfg.items >= r)
    assert AxisExprConfig.from_mapping(cfg.to_dict()) == cfg
    assert choose(SMALL_GPU, outer, r, 1, acc).wg <= 64


@pytest.mark.parametrize("acc", [8, 16, 32])
@pytest.mark.parametrize("r,inner", [(4000, 3000), (6000, 777), (123, 45678), (65432, 123),
                                     (16, 1 << 20), (1 << 20, 16), (3, 5), (1, 7), (2500, 6400)])
def test_gpu_cols_split_the_axis_over_lanes_while_outputs_are_few(acc, r, inner):
    cfg = choose(H200, 1, r, inner, acc)
    short = cfg.lanes == 1 and r <= SHORT_COL
    assert cfg.layout == "cols" and cfg.strip == (2 if short else 1)
    # var 4 accumulators, argmax 2, 8-byte ones 4 on few lanes and 1 on many; columns of at
    # most SHORT_COL rows: two outputs a work-item, one accumulator each
    if short:
        assert cfg.items == (2 if acc == 16 else 1) and cfg.wg == (128 if acc >= 32 else 256)
        return
    tall = inner <= TALL_OUTPUTS and cfg.lanes >= TALL_LANES
    assert cfg.items == ((2 if acc >= 32 else 1) if tall
                         else {32: 4, 16: 2}.get(acc, 4 if cfg.lanes <= 8 else 1))
    cap = TALL_LANES if inner <= TALL_OUTPUTS else MAX_COL_LANES
    assert 1 <= cfg.lanes <= cap and (cfg.lanes == 1 or cfg.lanes * cfg.items <= r)
    want = COL_ITEM_BYTES // acc // inner
    if cfg.lanes < cap and cfg.lanes * 2 * cfg.items <= r and not (
            inner <= TALL_OUTPUTS and cfg.lanes * 2 >= TALL_LANES):
        assert cfg.lanes * 2 > want  # no more lanes would fit the launch's budget
    assert cfg.lanes <= max(1, want)
    p = axis_plan(cfg, H200.compute_units, 1, r, inner)
    assert p.groups * cfg.outputs_per_group >= inner and p.split * p.chunk >= r


def test_the_fitted_cases():
    """Picks of the sweeps (the winners, or within 1.15x of them) for var (32-byte
    accumulators), argmax (16-byte ones), mean and norms (8-byte ones)."""
    assert choose(H200, 4000, 3000, 1, 32).short() == "rows wg=256 lanes=16 items=4"
    assert choose(H200, 6000, 777, 1, 32).short() == "rows wg=256 lanes=4 items=4"
    assert choose(H200, 123, 45678, 1, 32).short() == "rows wg=256 lanes=256 items=4"
    assert choose(H200, 2500, 6400, 1, 16).short() == "rows wg=256 lanes=64 items=4"
    assert choose(H200, 1, 4000, 3000, 32).short() == "cols wg=256 lanes=16 items=4 g/cu=16"
    assert choose(H200, 1, 65432, 123, 16).short() == "cols wg=256 lanes=32 items=2 g/cu=16"
    assert choose(H200, 1, 16, 1 << 20, 32).short() == "cols wg=256 lanes=1 items=4 g/cu=16"
    # mean and norms (8-byte accumulators), the second sweep
    assert choose(H200, 4000, 3000, 1, 8).short() == "rows wg=256 lanes=32 items=4"
    assert choose(H200, 777, 12345, 1, 8).short() == "rows wg=256 lanes=128 items=4"
    assert choose(H200, 1, 3000, 5000, 8).short() == "cols wg=256 lanes=32 items=1 g/cu=16"
    assert choose(H200, 1, 777, 12345, 8).short() == "cols wg=256 lanes=16 items=1 g/cu=16"
    # millions of short columns (H100, 8x1048576 along 0)
    assert choose(H200, 1, 8, 1 << 20, 32).short() == "cols wg=128 lanes=1 items=1 strip=2 g/cu=16"
    assert choose(H200, 1, 4, 2000003, 8).short() == "cols wg=256 lanes=1 items=1 strip=2 g/cu=16"
    assert choose(H200, 1, 7, 1500001, 16).short() == "cols wg=256 lanes=1 items=2 strip=2 g/cu=16"
    # tall-narrow blocks (H100, 1000003x8 .. 3000017x3, 1048576x16, 600011x13 along 0)
    assert choose(H200, 1, 3000017, 3, 32).short() == "cols wg=256 lanes=64 items=2 g/cu=16"
    for acc in (8, 16):
        assert choose(H200, 1, 3000017, 3, acc).short() == "cols wg=256 lanes=64 items=1 g/cu=16"
        assert choose(H200, 1, 1500001, 7, acc).short() == "cols wg=256 lanes=64 items=1 g/cu=16"


def test_gpu_plans_split_few_long_rows_and_give_stage2_lanes():
    """GPU plans (H100 sweeps of 8x1048576, 4x2000003, 1x4194304 along rows and 1048576x8,
    2000003x7 along 0): a row is split until a work-item keeps 16 of its elements, a column
    block until it keeps 64 rows; stage 2 gives each of few outputs up to a work-group of
    lanes (outputs x lanes within STAGE2_ITEMS); CPUs keep a work-item an output."""
    from cltune.families.expr_axis.launch import STAGE2_ITEMS, device_plan

    rows = choose(H200, 8, 1 << 20, 1, 8)
    p = device_plan(rows, H200, 8, 1 << 20, 1)
    assert p.split == (1 << 20) // (rows.lanes * rows.items * 16) and p.lanes2 == p.split
    cols = choose(H200, 1, 1 << 20, 8, 8)
    p = device_plan(cols, H200, 1, 1 << 20, 8)
    assert p.split == (1 << 20) // (cols.lanes * cols.items * 64)
    assert p.lanes2 == min(cols.wg, 1 << (p.split.bit_length() - 1)) > 1
    for outer, r, inner in ((1000, 5000, 1), (1, 5000, 1000), (3, 7, 5), (1, 1 << 22, 1)):
        cfg = choose(H200, outer, r, inner, 32)
        p = device_plan(cfg, H200, outer, r, inner)
        assert p.lanes2 <= max(1, min(p.split, cfg.wg))
        assert p.lanes2 == 1 or outer * inner * p.lanes2 <= STAGE2_ITEMS
        cpu = NS(type="cpu", max_wg=8192, compute_units=2)
        assert device_plan(choose(cpu, outer, r, inner), cpu, outer, r, inner).lanes2 == 1


def test_cpus_keep_their_rules():
    cpu = NS(type="cpu", max_wg=8192, compute_units=2)
    assert choose(cpu, 1 << 16, 256, 1).short() == "rows wg=8 lanes=1 items=2"
    # fewer long rows than a group's work-items: a work-item a group (var, cascaded sums);
    # mean and norms take the rows rule (4 accumulators), argmin/argmax 16-wide groups
    assert choose(cpu, 4, 2000003, 1, acc_size=32).short() == "rows wg=1 lanes=1 items=4"
    assert choose(cpu, 7, 300, 1, acc_size=4, cascade=True).short() == "rows wg=1 lanes=1 items=4"
    assert choose(cpu, 4, 2000003, 1, 8, True).short() == "rows wg=1 lanes=1 items=4"
    assert choose(cpu, 4, 2000003, 1, acc_size=16).short() == "rows wg=16 lanes=1 items=4"
    assert choose(cpu, 8, 2000003, 1, acc_size=32).short() == "rows wg=8 lanes=1 items=4"
    # tall-narrow blocks: no more work-items a group than the outputs have strips
    assert choose(cpu, 1, 1 << 20, 16, acc_size=8).short() == "cols wg=1 lanes=1 items=2 strip=16"
    assert choose(cpu, 1, 2000003, 4, acc_size=16).short() == "cols wg=1 lanes=1 items=2 strip=4"
    assert choose(cpu, 1, 1000003, 7, acc_size=32).short() == "cols wg=2 lanes=1 items=2 strip=4"
    assert choose(cpu, 1, 300007, 40, acc_size=8).short() == "cols wg=2 lanes=1 items=2 strip=16"
    assert choose(cpu, 64, 100000, 5, acc_size=8).short() == "cols wg=8 lanes=1 items=2 strip=4"
    # short columns: strips of 8 outputs, one accumulator each; long ones as before
    assert choose(cpu, 1, 4, 1 << 20, acc_size=8).short() == "cols wg=8 lanes=1 items=1 strip=8"
    assert choose(cpu, 1, 16, 1 << 20, acc_size=32).short() == "cols wg=8 lanes=1 items=1 strip=8"
    assert choose(cpu, 1, 17, 1 << 20, acc_size=8).short() == "cols wg=8 lanes=1 items=2 strip=16"
    assert choose(cpu, 1, 100000, 64, acc_size=32).short() == "cols wg=4 lanes=1 items=1 strip=16"


#: #40's skinny categories: k = 1..9 long rows (odd lengths), tall-narrow blocks of 1..65
#: columns, short columns, 3-D middle axes
SKINNY = [((1, 40009), 1), ((2, 30011), 1), ((5, 20011), 1), ((9, 12007), 1),
          ((20011, 1), 0), ((12007, 3), 0), ((9001, 8), 0), ((5003, 17), 0), ((3001, 65), 0),
          ((3, 3001), 0), ((2, 4001, 5), 1), ((3, 7, 2001), 1)]


@pytest.mark.parametrize("op", ["var", "argmax", "mean"])
@pytest.mark.parametrize("shape,axis", [((301, 77), 1), ((301, 77), 0), ((3, 5000), 1),
                                        ((2000, 9), 0), ((9, 2000), 0), ((4, 3001), 0),
                                        ((8, 777), 0), *SKINNY])
def test_the_gpu_configs_give_numpys_answers(ctx, queue, device, op, shape, axis):
    """The configs the GPU rule picks (many lanes a row or column, 2 or 4 accumulators, two
    outputs a work-item for short columns) under the GPU plan (the axis split over groups,
    stage 2's lanes) run here as they would there: numpy's answers, C and F order."""
    import numpy as np
    import pyopencl.array as cla
    from pyopencl.tools import VectorArg

    from cltune.core.shapes import geometry
    from cltune.families.expr_axis.api import axis_reducer
    from cltune.families.expr_axis.kernel import build
    from cltune.families.expr_axis.launch import device_plan
    from cltune.stats.kernels import kernel

    info, dev = device
    knl = kernel(op, ctx, np.float32)
    spec = knl.spec
    red = axis_reducer(ctx, dev, spec)
    h = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    want = np.asarray({"var": np.var, "argmax": np.argmax, "mean": np.mean}[op](
        h.astype(np.float64), axis=axis))
    for order in "CF":
        g = geometry(shape, order == "C", axis, False)
        cfg = choose(H200, g.outer, g.r, g.inner, spec.dtype_out.itemsize)
        cfg = AxisExprConfig.from_mapping({**cfg.to_dict(), "wg": min(cfg.wg, 64),  # CPUs' cap
                                           "lanes": min(cfg.lanes, 64)})
        x = cla.to_device(queue, np.asarray(h, order=order))
        res = cla.empty(queue, g.outer * g.inner, spec.dtype_result)
        user: list = []
        for v, t in zip((x, *((0.0,) if op == "var" else ())), spec.arguments, strict=True):
            user += (v.base_data, v.offset) if isinstance(t, VectorArg) else [v]
        b = build(ctx, dev, info, spec, cfg)
        p = device_plan(cfg, H200, g.outer, g.r, g.inner)
        red.launch(queue, b, p, user, g.outer, g.r, g.inner, res.base_data, 0)
        got, w = res.get(), want.ravel(order=order)
        what = f"{cfg.short()} {order} split {p.split} lanes2 {p.lanes2}"
        if op == "argmax":
            assert np.array_equal(got, w), what
        else:
            assert np.allclose(got, w, rtol=1e-5, atol=1e-6), what


@pytest.mark.parametrize("shape,axis", [((300, 300), 0), ((1000, 100), 0), ((100, 1000), 1),
                                        ((7, 100000), 1), ((250000, 40), 0), ((20000, 20), 0)])
def test_cpus_split_an_axis_only_past_cpu_max_unsplit_elements(shape, axis):
    """On CPUs the second launch of a split axis costs more than the groups it adds on small
    views (up to 2x there): the split starts past CPU_MAX_UNSPLIT elements; GPUs split as
    axis_plan does with their own fewest rows and stage 2's lanes."""
    from cltune.families.expr_axis.launch import CPU_MAX_UNSPLIT, device_plan

    cpu = NS(type="cpu", max_wg=8192, compute_units=2)
    gpu = NS(**{**vars(H200), "type": "gpu"})
    outer = 1 if axis == 0 else shape[0]
    r, inner = shape[axis], (shape[1] if axis == 0 else 1)
    size = outer * r * inner
    from cltune.families.expr_axis.launch import (
        GPU_MIN_ROW_ELEMS_PER_ITEM,
        MIN_ROWS_PER_ITEM,
        STAGE2_ITEMS,
    )

    for info in (cpu, gpu):
        cfg = choose(info, outer, r, inner)
        mr = GPU_MIN_ROW_ELEMS_PER_ITEM if cfg.layout == "rows" else MIN_ROWS_PER_ITEM
        planned = (axis_plan(cfg, info.compute_units, outer, r, inner) if info is cpu else
                   axis_plan(cfg, info.compute_units, outer, r, inner, 0, mr, STAGE2_ITEMS))
        p = device_plan(cfg, info, outer, r, inner)
        if info is cpu and size <= CPU_MAX_UNSPLIT:
            assert p.split == 1 and p.chunk == r and p.groups == planned.groups
        else:
            assert p == planned
    if size > 4 * CPU_MAX_UNSPLIT:  # long axes of few outputs still split on CPUs
        assert device_plan(choose(cpu, outer, r, inner), cpu, outer, r, inner).split > 1
