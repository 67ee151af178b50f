"""Streamed column strips of kernels/expr_axis.cl (CPUs; accumulators without the rounding
cascade): a work-item folds a strip of up to 1024 neighbouring outputs of one outer block,
`items` rows a pass. Checked against numpy in float64 on shapes that are multiples of nothing
(full strips, a block's shorter last strip, strips wider than a block, fewer rows than a
pass, a split axis), through the launcher with forced configs and through the public calls
that the heuristic now serves so; the heuristic's rule and the tuner's space."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl.array as cla
import pytest

import cltune
from cltune.families.expr_axis import target as ea_target
from cltune.families.expr_axis.api import AxisReducer
from cltune.families.expr_axis.config import AxisExprConfig, AxisExprConfigError
from cltune.families.expr_axis.defaults import choose
from cltune.families.expr_axis.kernel import build, restarts
from cltune.families.expr_axis.launch import AxisPlan, axis_plan
from cltune.stats import api as stats

pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")

REF = {"mean": np.mean, "var": np.var, "argmax": np.argmax,
       "norm2": lambda h, axis: np.sqrt((h * h).sum(axis=axis))}


@pytest.mark.parametrize("op", ["mean", "var", "argmax", "norm2"])
def test_streamed_strips_against_numpy(ctx, queue, device, op):
    info, dev = device
    knl = stats.kernel(op, ctx, np.float32)
    assert not restarts(knl.spec)  # float32 statistics: wide or exact accumulators
    red = AxisReducer(ctx, dev, knl.spec)
    rng = np.random.default_rng(7)
    for cfg in (AxisExprConfig("cols", 1, 1, 8, 64), AxisExprConfig("cols", 4, 1, 4, 256),
                AxisExprConfig("cols", 1, 1, 1, 1024)):
        b = build(ctx, dev, info, knl.spec, cfg)
        # (3, 41, 130): strips of 64, 64 and 2 a block; (2, 5, 3001): fewer rows than a
        # pass; (1, 301, 65): a strip wider than the block
        for outer, r, inner in ((3, 41, 130), (2, 5, 3001), (1, 301, 65)):
            h = (rng.standard_normal((outer, r, inner)) * 3 + 1).astype(np.float32)
            if op == "argmax":
                h[:, [1, r - 1], :] = 50  # a tie along every column: the first wins
            x = cla.to_device(queue, h)
            p = axis_plan(cfg, info.compute_units, outer, r, inner)
            assert p.groups * cfg.wg >= outer * -(-inner // cfg.strip)
            for split in (1, 3):
                per_split = -(-r // split)
                chunk = -(-per_split // cfg.items) * cfg.items
                plan = AxisPlan(p.groups, -(-r // chunk), chunk)
                res = cla.empty(queue, (outer, inner), knl.spec.dtype_result)
                extra = [0.0] if op == "var" else []
                red.launch(queue, b, plan, [x.base_data, 0, *extra], outer, r, inner,
                           res.base_data, 0)
                got = res.get()
                want = REF[op](h.astype(np.float64) if op != "argmax" else h, axis=1)
                if op == "argmax":
                    np.testing.assert_array_equal(got, want)
                else:
                    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6,
                                               err_msg=f"{cfg.short()} {(outer, r, inner)} "
                                                       f"split {plan.split}")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_streamed_strips_with_the_rounding_cascade(ctx, queue, device, dt):
    """A ReductionKernel's sum (its accumulators restart: the cascade kept per output of the
    strip) as accurate as numpy's own along axis 0, and as the strips of 16."""
    info, dev = device
    ct = "float" if dt == np.float32 else "double"
    knl = cltune.ReductionKernel(ctx, dt, "0", "a+b", "x[i]", f"__global const {ct} *x")
    assert restarts(knl.spec)
    red = AxisReducer(ctx, dev, knl.spec)
    rng = np.random.default_rng(11)
    outer, r, inner = 2, 3001, 130
    h = (rng.standard_normal((outer, r, inner)) + 4).astype(dt)
    x = cla.to_device(queue, h)
    want = h.astype(np.float64).sum(axis=1) if dt == np.float32 else \
        np.array([[float(np.sum(h[o, :, q].astype(np.longdouble))) for q in range(inner)]
                  for o in range(outer)])
    numpy_err = np.abs(h.sum(axis=1) - want).max()
    errs = {}
    for cfg in (AxisExprConfig("cols", 1, 1, 8, 64), AxisExprConfig("cols", 2, 1, 1, 256),
                AxisExprConfig("cols", 8, 1, 1, 16)):
        b = build(ctx, dev, info, knl.spec, cfg)
        for split in (1, 3):
            p = axis_plan(cfg, info.compute_units, outer, r, inner)
            per_split = -(-r // split)
            chunk = -(-per_split // cfg.items) * cfg.items
            plan = AxisPlan(p.groups, -(-r // chunk), chunk)
            res = cla.empty(queue, (outer, inner), dt)
            red.launch(queue, b, plan, [x.base_data, 0], outer, r, inner, res.base_data, 0)
            errs[(cfg.short(), split)] = float(np.abs(res.get() - want).max())
    assert max(errs.values()) <= max(numpy_err, 4 * np.finfo(dt).eps * np.abs(want).max()), \
        (errs, numpy_err)


def test_the_heuristic_streams_wide_columns_on_cpus_only():
    """Streamed strips for floating-point accumulators of up to 16 bytes on CPUs; rows of
    256 or more with wide ones a work-item a group with 4 accumulators."""
    from types import SimpleNamespace as NS

    cpu = NS(type="cpu", max_wg=8192, compute_units=2)
    gpu = NS(type="gpu", max_wg=1024, compute_units=132)
    assert choose(cpu, 1, 4096, 4096, 8, stream=True) == AxisExprConfig("cols", 1, 1, 8, 1024)
    assert choose(cpu, 1, 3001, 2999, 16, stream=True).strip == 1024
    # the widest strip whatever the row's width (65536x256, 20000x700 along 0: 1.4-2x faster)
    for inner in (64, 100, 256, 700, 1000):
        assert choose(cpu, 7, 300, inner, 8, stream=True).strip == 1024
    assert choose(cpu, 1, 5, 1 << 20, 8, stream=True).items == 4  # 5 rows: passes of 4
    assert choose(cpu, 1, 3001, 2999, 32, stream=True).strip <= 16  # var's accumulators
    assert choose(cpu, 1, 4096, 4096, 8, stream=False).strip <= 16  # exact accumulators
    assert choose(cpu, 1, 4096, 4096, 8, True, True).strip == 1024  # a sum with the cascade
    assert choose(cpu, 1, 4096, 4096, 16, True, True).strip == 256  # (its private bytes)
    assert choose(cpu, 1, 4096, 63, 8, stream=True).strip <= 16
    assert choose(gpu, 1, 4096, 4096, 8, stream=True).strip <= 16
    # rows of 256 or more with wide accumulators: a work-item a group, 4 accumulators
    assert choose(cpu, 65536, 256, 1, 8, True) == AxisExprConfig("rows", 1, 1, 4)
    assert choose(cpu, 1000, 100, 1, 8, True).wg == 8  # short rows keep theirs
    for other in (choose(cpu, 65536, 256, 1, 32, True),  # var's 32-byte accumulators
                  choose(cpu, 65536, 256, 1, 8, True, True),  # with the cascade
                  choose(cpu, 65536, 256, 1, 16, False),  # exact (argmax)
                  choose(gpu, 65536, 256, 1, 8, True)):
        assert other != AxisExprConfig("rows", 1, 1, 4)
    with pytest.raises(AxisExprConfigError, match="one lane"):
        AxisExprConfig("cols", 8, 2, 1, 256)
    with pytest.raises(AxisExprConfigError, match="strip"):
        AxisExprConfig("cols", 1, 1, 1, 512)


def test_the_tuners_space_offers_streamed_strips_on_cpus_without_the_cascade(device):
    info, _ = device
    cpu = replace(info, type="cpu")
    streamed = ea_target.make_space(cpu, "cols", 8, True)
    assert {64, 256, 1024} <= set(streamed.values["strip"])
    cfgs = streamed.configs()
    assert any(c.streamed for c in cfgs)
    assert all(c.lanes == 1 for c in cfgs if c.streamed)
    assert not streamed.check(AxisExprConfig("cols", 4, 1, 8, 1024))
    cascaded = ea_target.make_space(cpu, "cols", 32, True, True).values["strip"]
    assert 256 in cascaded and 1024 not in cascaded  # var's 32 bytes x 12 a strip
    for space in (ea_target.make_space(cpu, "cols", 8, False),
                  ea_target.make_space(replace(info, type="gpu"), "cols", 8, True)):
        assert max(space.values["strip"]) == 16
        assert space.check(AxisExprConfig("cols", 1, 1, 8, 1024))


@pytest.mark.parametrize("order", ["C", "F"])
def test_public_calls_served_streamed(queue, device, order):
    info, _ = device
    rng = np.random.default_rng(3)
    cases = [((301, 2999), 0), ((4, 57, 300), 1), ((5, 2, 1100), 1)]
    if order == "F":  # axis 1 of an F-ordered matrix is strided: the cols layout too
        cases = [((2999, 301), 1)]
    for shape, axis in cases:
        h = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        x = cla.to_device(queue, np.asarray(h, order=order))
        if info.type == "cpu":
            why = str(stats.explain("mean", queue, np.float32, shape, axis, order))
            assert "strip=" in why and any(f"strip={s}" in why for s in (64, 256, 1024)), why
        for name, call, ref in (("mean", cltune.mean, np.mean),
                                ("norm", cltune.norm, np.linalg.norm),
                                ("argmax", cltune.argmax, np.argmax)):
            for keep in ((False, True) if name != "argmax" else (False,)):
                kw = {"keepdims": True} if keep else {}
                got = call(x, axis=axis, **kw).get()
                want = ref(h.astype(np.float64) if name != "argmax" else h, axis=axis, **kw)
                assert got.shape == want.shape, (name, shape, axis)
                if name == "argmax":
                    np.testing.assert_array_equal(got, want)
                else:
                    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6,
                                               err_msg=f"{name} {shape} {axis} {order}")
