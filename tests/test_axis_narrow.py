"""A few columns read as a flat array (kernels/axis.cl's clt_ax_cols_narrow, #40): 1..16
columns along axis 0 on a CPU, a block of vec rows being `inner` whole vectors, each lane of
an accumulator seeing one column. Against the float64/exact reference within the accuracy
harness's bound, for every op and width of element, row counts with and without tail rows
(fewer than a block past the last whole one), several outer blocks, pieces split over
work-items and finished by clt_ax_cols_fin, inputs at an offset, NaNs in min/max; the public
call serves it untuned; it is taken only where it applies."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.core.inputs import make_input
from cltune.core.ops import OpSpec
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.launch import NARROW_COLS, AxisLauncher
from cltune.families.axis.reference import Problem, bounds, compare, reference, run_once

CONFIGS = [AxisConfig(wg=16, lanes=0, cols=1, vec=8, items=2, groups_per_cu=8, stream=1),
           AxisConfig(wg=4, lanes=0, cols=1, vec=4, items=1, groups_per_cu=4, stream=1)]
SPECS = [("sum", "float32"), ("sum", "float64"), ("sum", "int32"), ("prod", "float32"),
         ("min", "float32"), ("max", "int64"), ("dot", "float32"), ("sum", "uint32"),
         ("sum", "float16")]


def _cpu(info):
    return replace(info, type="cpu")


@pytest.mark.parametrize("op,dtype", SPECS)
def test_narrow_columns_match_the_reference(ctx, queue, device, op, dtype):
    info, dev = device
    spec = OpSpec(op, dtype)
    if spec.needs_fp64 and not info.fp64 or dtype == "float16" and not info.fp16:
        pytest.skip("the device lacks the type")
    ran = split = 0
    for cfg in CONFIGS[:1] if op not in ("sum", "max") else CONFIGS:
        la = AxisLauncher(ctx, dev, _cpu(info), spec, cfg)
        for outer, r, inner in ((1, 100003, 3), (1, 40000, 2), (3, 20011, 7), (1, 100, 16),
                                (2, 67, 5), (1, 16, 1), (1, 2 * cfg.vec, 9), (2, 33, 13)):
            assert la.narrows(r, inner)
            p = Problem(outer, r, inner)
            xs = [x.copy() for x in make_input(spec, p.n, seed=r + inner)]
            if op in ("min", "max") and spec.is_float:
                xs[0][5 * inner + 1] = np.nan  # a NaN column: numpy's NaN
            split += la.plan("narrow", outer, r, inner).split > 1
            for lead in (0, 3):
                got = run_once(la, queue, p, xs, lead=lead)
                want, scale = reference(spec, p, xs)
                bound = bounds(la, p, scale) if spec.is_float else np.zeros(p.outputs)
                err = compare(spec, got, want, bound)
                assert not err, (str(spec), cfg.short(), p, lead, err)
                ran += 1
    assert ran >= 16 and split  # some pieces went through the finishing kernel


def test_taken_only_where_it_applies(ctx, device):
    info, dev = device
    spec = OpSpec("sum", "float32")
    cpu = AxisLauncher(ctx, dev, _cpu(info), spec, CONFIGS[0])
    assert all(cpu.narrows(1000, c) for c in range(1, NARROW_COLS + 1))
    assert not cpu.narrows(1000, NARROW_COLS + 1)
    assert not cpu.narrows(15, 3) and cpu.narrows(16, 3)  # two blocks of vec rows at least
    gpu = AxisLauncher(ctx, dev, replace(info, type="gpu"), spec, CONFIGS[0])
    assert not gpu.narrows(1000, 4)
    tiles = AxisLauncher(ctx, dev, _cpu(info), spec,
                         AxisConfig(wg=8, lanes=0, cols=4, vec=4, items=1, groups_per_cu=8))
    assert not tiles.narrows(1000, 4)  # streamed columns only


def test_the_public_call_serves_it_untuned(queue, device, tmp_path):
    info = device[0]
    if info.type != "cpu":
        pytest.skip("narrow columns are served on CPUs")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    r = cltune.get_reducer(queue, "sum", np.float32, db=db)
    rng = np.random.default_rng(5)
    for shape, axis in (((70001, 4), 0), ((5, 33, 7), 1), ((200003, 3), 0), ((1001, 2), 0),
                        ((4, 9), 0)):
        h = rng.random(shape).astype(np.float32)
        got = r(cla.to_device(queue, h), axis=axis).get()
        np.testing.assert_allclose(got, h.astype(np.float64).sum(axis=axis), rtol=1e-6)
    e = r.explain((70001, 4), axis=0)
    assert e.level == "builtin" and e.config.stream and e.config.vec >= 4, e


def test_a_sum_past_float16s_range_is_inf_as_the_output_dtype_rounds_it(queue):
    """A float16 sum whose exact value rounds to inf in float16 (65525.8 > 65520) is right as
    inf: the validation accepts it (float16 column sums were refused on CPUs for it), the
    call is served; a finite reference far below the edge still refuses inf."""
    from cltune.families.reduce import reference as flat

    spec = OpSpec("sum", "float16")
    assert compare(spec, np.array([np.inf, -np.inf]), np.array([65525.8, -65530.0]),
                   np.array([53.3, 1.0])) == ""
    assert compare(spec, np.array([np.inf]), np.array([65000.0]), np.array([10.0])) != ""
    assert compare(OpSpec("sum", "float32"), np.array([np.inf]), np.array([65525.8]),
                   np.array([53.3])) != ""
    assert flat.compare(spec, np.float16(np.inf), 65525.8, 53.3) == ""
    assert flat.compare(spec, np.float16(np.inf), 60000.0, 53.3) != ""
    h = np.random.default_rng(0).random((200003, 7)).astype(np.float16)  # (vload_half)
    got = cltune.get_reducer(queue, "sum", np.float16)(cla.to_device(queue, h), axis=0).get()
    assert np.all(np.isposinf(got))  # the true sums (~10^5) are past float16's range
