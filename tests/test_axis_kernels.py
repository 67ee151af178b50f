"""kernels/axis.cl through AxisLauncher: every layout and finish path against the host
reference, output by output, on awkward shapes (1 x 1, 3 x 1025, primes, 2-row and
2-column arrays, unaligned offsets, splits over groups, long segments)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pytest

from cltune.core.inputs import make_input
from cltune.core.ops import OpSpec
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.family import identity
from cltune.families.axis.kernel import acc_bytes
from cltune.families.axis.launch import AxisLauncher, plan_cols, plan_rows
from cltune.families.axis.reference import Problem, bounds, compare, reference, run_once, validate
from cltune.opencl.build import BuildError

ROWS = [AxisConfig(wg=8, lanes=1, vec=1, items=1, groups_per_cu=1),
        AxisConfig(wg=16, lanes=4, vec=4, items=2, groups_per_cu=64),
        AxisConfig(wg=16, lanes=4, vec=2, items=3, groups_per_cu=64, onepass=1),
        AxisConfig(wg=32, lanes=32, vec=8, items=1, groups_per_cu=8, onepass=1)]
COLS = [AxisConfig(wg=8, lanes=0, cols=1, vec=4, items=2, groups_per_cu=64),
        AxisConfig(wg=16, lanes=0, cols=4, vec=1, items=1, groups_per_cu=64, onepass=1),
        AxisConfig(wg=32, lanes=0, cols=8, vec=2, items=4, groups_per_cu=16),
        AxisConfig(wg=16, lanes=0, cols=16, vec=4, items=1, groups_per_cu=2, onepass=1),
        AxisConfig(wg=16, lanes=0, cols=4, vec=2, items=3, groups_per_cu=64, lockstep=1),
        AxisConfig(wg=16, lanes=0, cols=8, vec=4, items=3, groups_per_cu=64, stream=1),
        AxisConfig(wg=16, lanes=0, cols=1, vec=2, items=1, groups_per_cu=2, stream=1)]


def _launcher(ctx, device, op, dtype, cfg):
    info, dev = device
    spec = OpSpec(op, dtype)
    if spec.needs_fp64 and not info.fp64:
        pytest.skip("device lacks fp64")
    if cfg.onepass and info.type == "cpu":  # GPUs only; checked under Oclgrind (a "gpu")
        cfg = replace(cfg, onepass=0)
    return AxisLauncher(ctx, dev, info, spec, cfg)


@pytest.mark.parametrize("cfg", ROWS + COLS, ids=lambda c: c.short())
def test_every_layout_and_finish_validates(ctx, queue, device, cfg):
    la = _launcher(ctx, device, "sum", "float32", cfg)
    target = Problem(1, 3000, 1) if cfg.lanes else Problem(1, 3000, 7)
    chk = validate(la, queue, target)
    assert chk.ok, chk.reason


def test_splits_really_happen(ctx, device):
    """The validation shapes exercise both finishes: long rows/columns are split, by the
    plans the launchers make (the streamed strips' too, whose pieces have a least size)."""
    info = device[0]
    assert plan_rows(ROWS[1], info.compute_units, 1, 100003).split > 1
    assert plan_cols(COLS[1], info.compute_units, 1, 100003, 2).split > 1
    for cfg in (ROWS[1], COLS[1], COLS[5], COLS[6]):
        la = _launcher(ctx, device, "sum", "float32", cfg)
        layout, shape = ("rows", (1, 100003, 1)) if cfg.lanes else ("cols", (1, 100003, 2))
        assert la.plan(layout, *shape).split > 1, cfg


def test_streamed_strips_split_only_for_more_units_and_big_pieces():
    """A streamed strip is split only where that at least doubles the work-items (never past
    groups_per_cu x compute units) and each piece reads MIN_PIECE_BYTES or more: a split's
    finishing launch cost more than it saved (docs/logs/benchmarks-*.md, CPU axis reductions)."""
    from cltune.families.axis.launch import MIN_PIECE_BYTES, plan_stream

    cfg = AxisConfig(wg=64, lanes=0, cols=64, vec=16, items=8, groups_per_cu=8, stream=1)
    assert plan_stream(cfg, 2, 1, 200, 200, 4).split == 1  # 160 KB: one piece
    assert plan_stream(cfg, 2, 1, 100, 10000, 4).split == 1  # 10 strips for 2 CUs
    assert plan_stream(cfg, 2, 1, 10000, 1000, 4).split == 16  # one strip: 16 pieces
    p = plan_stream(cfg, 2, 1, 3000, 5000, 4)  # 5 strips: 3 pieces each, 15 work-items
    assert (p.split, p.groups) == (3, 15)
    rows = 4 * MIN_PIECE_BYTES // (4 * 1024)  # a 1024-column strip of 4 pieces' bytes
    assert plan_stream(cfg, 2, 1, rows, 1024, 4).split == 4
    assert plan_stream(cfg, 2, 1, rows, 1024, 0).split == 16  # no element size: no least


@pytest.mark.parametrize("op,dtype", [("max", "float32"), ("min", "uint64"), ("sum", "int32"),
                                      ("prod", "float64"), ("dot", "float32"),
                                      ("sum", "float16"), ("max", "int64"), ("dot", "int32")])
@pytest.mark.parametrize("layout", ["rows", "cols"])
def test_ops_and_dtypes(ctx, queue, device, op, dtype, layout):
    cfg = ROWS[2] if layout == "rows" else COLS[1]
    la = _launcher(ctx, device, op, dtype, cfg)
    if la.cfg.onepass and acc_bytes(la.spec) == 8 and not device[0].int64_atomics:
        cfg = ROWS[1] if layout == "rows" else COLS[0]
        la = _launcher(ctx, device, op, dtype, cfg)
    chk = validate(la, queue, Problem(1, 1000, 1) if layout == "rows" else Problem(1, 100, 33))
    assert chk.ok, chk.reason


def _run(la, queue, p, xs):
    got = run_once(la, queue, p, xs)
    want, scale = reference(la.spec, p, xs)
    bound = bounds(la, p, scale) if la.spec.is_float else np.zeros(p.outputs)
    return compare(la.spec, got, want, bound), got


@pytest.mark.parametrize("cfg", [ROWS[1], COLS[2]], ids=lambda c: c.layout)
def test_nan_and_inf_per_output(ctx, queue, device, cfg):
    for op in ("sum", "max", "min"):
        la = _launcher(ctx, device, op, "float32", cfg)
        x = make_input(la.spec, 7 * 129, seed=3)[0].copy().reshape(7, 129)
        if cfg.lanes:
            x[1, 5], x[3, 0], x[3, 7], x[4, 128] = np.nan, np.inf, -np.inf, np.inf
            p = Problem(7, 129, 1)
        else:
            x[5, 1], x[0, 3], x[6, 3], x[2, 128] = np.nan, np.inf, -np.inf, np.inf
            p = Problem(1, 7, 129)
        why, got = _run(la, queue, p, [x.ravel()])
        assert not why, (op, why)


def test_sum_of_negative_zeros_is_negative_zero(ctx, queue, device):
    la = _launcher(ctx, device, "sum", "float32", ROWS[1])
    got = run_once(la, queue, Problem(3, 5, 1), [np.full(15, -0.0, np.float32)])
    assert np.all(np.signbit(got)), got


def _segments(la, queue, offs, x, init=None, long_ok=True):
    n = x.size
    mf = cl.mem_flags
    xb = cl.Buffer(la.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    ob = cl.Buffer(la.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=offs)
    err = cl.Buffer(la.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                    hostbuf=np.full(1, 0xFFFFFFFF, np.uint32))
    m = offs.size - 1
    out = cl.Buffer(la.ctx, mf.READ_WRITE, max(8, m * la.spec.result_dtype.itemsize))
    init = la.built().acc_dtype.type(identity(la.spec) if init is None else init)
    evs = la.segs(queue, xb, 0, n, ob, offs.dtype == np.int64, m, init, err, out)
    got = np.empty(m, la.spec.result_dtype)
    flag = np.empty(1, np.uint32)
    cl.enqueue_copy(queue, got, out, wait_for=evs)
    cl.enqueue_copy(queue, flag, err)
    queue.finish()
    return got, int(flag[0])


def test_long_segments_go_to_groups_and_stay_right(ctx, queue, device):
    """Segments far longer than the threshold (16 * lanes * vec * items) next to tiny and
    empty ones, twice in a row (the list of long segments is emptied after each launch)."""
    la = _launcher(ctx, device, "sum", "float32", ROWS[0])
    lens = np.array([0, 5000, 1, 0, 17, 9000, 3, 16, 17, 0, 2])
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    x = make_input(la.spec, int(offs[-1]), seed=1)[0]
    want, scale = reference(la.spec, Problem(1, x.size, 1, offs), [x])
    for _ in range(2):
        got, flag = _segments(la, queue, offs, x)
        assert flag == 0xFFFFFFFF
        assert not compare(la.spec, got, want, bounds(la, Problem(1, x.size, 1, offs), scale))
    assert got[0] == 0 and not np.signbit(got[0])  # an empty sum is +0.0 as in numpy


def test_bad_offsets_are_flagged_and_never_read_out_of_range(ctx, queue, device):
    la = _launcher(ctx, device, "max", "int32", ROWS[1])
    x = np.arange(10, dtype=np.int32)
    offs = np.array([0, 4, 2, 50, 10], np.int32)  # segment 1 decreases, 2 runs past the end
    got, flag = _segments(la, queue, offs, x)
    assert flag == 1
    assert got[0] == 3 and got[3] == np.iinfo(np.int32).min  # empty: the identity


def test_initial_is_combined_into_every_segment(ctx, queue, device):
    la = _launcher(ctx, device, "min", "float32", ROWS[1])
    x = np.array([5, 1, 7, 9], np.float32)
    got, _ = _segments(la, queue, np.array([0, 2, 2, 4], np.int32), x, init=3.0)
    assert got.tolist() == [1.0, 3.0, 3.0]


def test_onepass_is_refused_where_it_is_not_offered(ctx, device):
    """CPUs: GPUs only (PoCL 3.1's CPU device hangs in small one-pass groups); elsewhere a
    64-bit accumulator needs 64-bit atomics."""
    info, dev = device
    if info.type == "cpu":
        la = AxisLauncher(ctx, dev, info, OpSpec("sum", "float32"), ROWS[2])
        with pytest.raises(BuildError, match="GPUs only"):
            la.built()
    elif not info.int64_atomics:
        la = AxisLauncher(ctx, dev, info, OpSpec("sum", "float64"), ROWS[2])
        with pytest.raises(BuildError, match="int64"):
            la.built()
