"""Short rows packed into vectors (kernels/axis.cl's clt_ax_packed, #40): blocks of vec rows,
rows of 2, 4, 8 or 16 elements folded as a tree of vectors in registers, rows of any other
length up to 16 transposed in registers. Against the
float64/exact reference within the accuracy harness's bound, for every op and width of
element, row counts that leave no, some and only tail rows, inputs at an offset, NaNs in
min/max; the public call serves it untuned and gives numpy's answer; it is taken only where
it applies (a CPU, a work-item a row, a length of 2..16)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.core.inputs import make_input
from cltune.core.ops import OpSpec
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.launch import SHORT_ROW, AxisLauncher
from cltune.families.axis.reference import Problem, bounds, compare, reference, run_once

CONFIGS = [AxisConfig(wg=1, lanes=1, vec=16, items=3, groups_per_cu=8),
           AxisConfig(wg=4, lanes=1, vec=4, items=1, groups_per_cu=2)]
SPECS = [("sum", "float32"), ("sum", "float64"), ("sum", "int32"), ("prod", "float32"),
         ("min", "float32"), ("max", "float64"), ("max", "int64"), ("dot", "float32"),
         ("sum", "uint32"), ("sum", "float16")]


def _cpu(info):
    return replace(info, type="cpu")


@pytest.mark.parametrize("op,dtype", SPECS)
def test_packed_rows_match_the_reference(ctx, queue, device, op, dtype):
    info, dev = device
    spec = OpSpec(op, dtype)
    if spec.needs_fp64 and not info.fp64 or dtype == "float16" and not info.fp16:
        pytest.skip("the device lacks the type")
    ran = 0
    for cfg in CONFIGS:
        la = AxisLauncher(ctx, dev, _cpu(info), spec, cfg)
        for b in (2, 3, 4, 5, 7, 8, 12, 15, 16):
            for rows in (1, 3, 37, 4099, 70001):
                p = Problem(rows, b, 1)
                xs = [x.copy() for x in make_input(spec, p.n, seed=rows + b)]
                if op in ("min", "max") and spec.is_float and rows > 3:
                    xs[0][5 * b + 1] = np.nan  # a NaN row: numpy's NaN
                assert la.packs(rows, b) == (rows >= cfg.vec), (rows, b)  # a block of vec rows
                for lead in (0, 3):
                    got = run_once(la, queue, p, xs, lead=lead)
                    want, scale = reference(spec, p, xs)
                    bound = bounds(la, p, scale) if spec.is_float else np.zeros(p.outputs)
                    err = compare(spec, got, want, bound)
                    assert not err, (str(spec), cfg.short(), rows, b, lead, err)
                    ran += 1
    assert ran > 100


def test_taken_only_where_it_applies(ctx, device):
    info, dev = device
    spec = OpSpec("sum", "float32")
    cpu = AxisLauncher(ctx, dev, _cpu(info), spec, CONFIGS[0])
    assert all(cpu.packs(1000, b) for b in range(2, SHORT_ROW + 1))
    assert not any(cpu.packs(1000, b) for b in (1, SHORT_ROW + 1, 32))
    assert not cpu.packs(15, 7) and cpu.packs(16, 7)  # a block of vec rows at least
    gpu = AxisLauncher(ctx, dev, replace(info, type="gpu"), spec, CONFIGS[0])
    assert not gpu.packs(1000, 4)  # GPUs keep a work-item a row until measured there
    lanes = AxisLauncher(ctx, dev, _cpu(info), spec,
                         AxisConfig(wg=8, lanes=4, vec=16, items=1, groups_per_cu=8))
    assert not lanes.packs(1000, 4)


def test_the_public_call_serves_it_untuned(queue, device, tmp_path):
    info = device[0]
    if info.type != "cpu":
        pytest.skip("packed rows are served on CPUs")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    r = cltune.get_reducer(queue, "sum", np.float32, db=db)
    rng = np.random.default_rng(5)
    for shape, axis in (((70001, 4), 1), ((5, 7, 8), -1), ((3, 16), 1), ((1001, 2), 1),
                        ((20011, 7), 1), ((33, 5, 13), 2), ((4099, 3), 1)):
        h = rng.random(shape).astype(np.float32)
        got = r(cla.to_device(queue, h), axis=axis).get()
        np.testing.assert_allclose(got, h.astype(np.float64).sum(axis=axis), rtol=1e-6)
    for shape in ((70001, 4), (20011, 7)):
        e = r.explain(shape, axis=1)
        assert e.level == "builtin" and e.config.wg == 1 and e.config.vec >= 4, e
