"""cltune.stats.api along axes (`axis=`, `keepdims=`) against numpy: every function on every axis
of C- and F-ordered arrays (2-D, 3-D middle axis, adjacent tuples), dtypes, awkward and large
shapes (axes split over work-groups), NaN / inf placement and ties, empty axes, errors,
`get_reducer`'s StatsReducer; kernels/expr_axis.cl under Oclgrind."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from support.oclgrind import run_marked

import cltune
from cltune.stats import api as stats

pytestmark = pytest.mark.filterwarnings("ignore::cltune.core.serving.CltuneWarning")

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

# name -> (cltune call, numpy reference, options)
FUNCS = {
    "argmax": (cltune.argmax, np.argmax, {}),
    "argmin": (cltune.argmin, np.argmin, {}),
    "mean": (cltune.mean, np.mean, {}),
    "var": (cltune.var, np.var, {}),
    "var1": (lambda x, **k: cltune.var(x, ddof=1, **k), lambda h, **k: np.var(h, ddof=1, **k),
             {}),
    "std": (cltune.std, np.std, {}),
    "norm": (cltune.norm, lambda h, **k: np.linalg.norm(h, **k), {}),
    "norm1": (lambda x, **k: cltune.norm(x, 1, **k), lambda h, **k: np.linalg.norm(h, 1, **k),
              {}),
    "norm_inf": (lambda x, **k: cltune.norm(x, np.inf, **k),
                 lambda h, **k: np.linalg.norm(h, np.inf, **k), {}),
    "count_nonzero": (cltune.count_nonzero, np.count_nonzero, {}),
    "any": (cltune.any, np.any, {}),
    "all": (cltune.all, np.all, {}),
}
EXACT = ("argmax", "argmin", "count_nonzero", "any", "all")


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(13)


def up(queue, h, order="C"):
    return cla.to_device(queue, np.asarray(h, order=order))


def want_of(name, h, **kw):
    """numpy's answer: computed in float64 for float inputs, in numpy's result dtype."""
    ref = FUNCS[name][1]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        dt = np.asarray(ref(h, **kw)).dtype
        h64 = h.astype(np.float64) if h.dtype.kind == "f" and name not in EXACT else h
        return np.asarray(ref(h64, **kw)).astype(dt)


def check(queue, name, h, order="C", rtol=2e-5, **kw):
    if name in ("norm1", "norm_inf") and kw.get("axis") is None and h.ndim > 2:
        # numpy: an ord over 3+ dimensions has no meaning (a 2-D array's is a matrix norm,
        # checked like the rest)
        with pytest.raises(ValueError, match="Improper number of dimensions"):
            FUNCS[name][0](up(queue, h, order), **kw)
        return
    got = FUNCS[name][0](up(queue, h, order), **kw)
    want = want_of(name, h, **kw)
    assert got.shape == want.shape, (name, h.shape, order, kw, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, h.dtype, kw, got.dtype, want.dtype)
    g = got.get()
    if name in EXACT:
        np.testing.assert_array_equal(g, want, err_msg=f"{name} {h.shape} {order} {kw}")
    else:
        np.testing.assert_allclose(g, want, rtol=rtol, atol=0, equal_nan=True,
                                   err_msg=f"{name} {h.dtype} {h.shape} {order} {kw}")


def axes_of(ndim, name):
    """int axes, None, and adjacent tuples (argmin/argmax take ints only, as numpy)."""
    out = [*range(ndim), -1, None]
    if not name.startswith("arg"):
        out += [(0, 1)] + ([(1, 2)] if ndim > 2 else [])
    if name.startswith("norm") and name != "norm":
        out = [a for a in out if not isinstance(a, tuple)]  # matrix norms: see test_errors
    return out


SHAPES = [(3, 1025), (1031, 7), (2, 9), (9, 2), (1, 13), (13, 1), (4, 5, 6)]


@pytest.mark.parametrize("name", FUNCS)
def test_every_function_every_axis_c_and_f(queue, rng, name):
    for shape in SHAPES:
        h = rng.standard_normal(shape).astype(np.float32)
        h[h < -1.5] = 0  # zeros for count_nonzero / any / all
        for order in "CF":
            for axis in axes_of(len(shape), name):
                for keepdims in (False, True):
                    check(queue, name, h, order, axis=axis, keepdims=keepdims)


# every function on float64; a spread of them on the others (each dtype is its own kernels)
DTYPE_FUNCS = {np.float64: list(FUNCS),
               np.int32: ["argmax", "argmin", "mean", "var1", "std", "norm1", "count_nonzero"],
               np.uint8: ["argmax", "mean", "var", "norm", "norm_inf", "any", "all"],
               np.bool_: ["argmin", "mean", "count_nonzero", "any", "all"]}


@pytest.mark.parametrize("dt", list(DTYPE_FUNCS))
def test_dtypes(queue, rng, dt):
    h = (rng.standard_normal((37, 41)) * 40).astype(np.float64)
    if dt == np.uint8:
        h = np.abs(h) % 256
    h = h.astype(dt) if dt != np.bool_ else h > 10
    for name in DTYPE_FUNCS[dt]:
        for order in "CF":
            for axis in (0, 1, -1):
                check(queue, name, h, order, rtol=1e-9 if dt == np.float64 else 2e-5,
                      axis=axis)
    x = up(queue, h)
    assert cltune.mean(x, axis=0).dtype == np.mean(h, axis=0).dtype


@pytest.mark.parametrize("op", ["mean", "argmax", "var"])
def test_the_rolled_binary_counter_gives_the_unrolled_ones_bits(device, monkeypatch, op):
    """CPU drivers build the cascade's binary counter rolled (CLT_AX_ROLLED=1: an unrolled
    push of var's accumulators took Debian's PoCL 17 s to compile), GPUs unrolled: the same
    operations in the same order, so the same bits. Rows and columns of 140001 (547 pushes of
    256 elements: a carry through every slot and into the last), one group along the axis and
    three, both stages; the unrolled build in a context of its own."""
    from cltune.families.expr_axis import kernel as ek
    from cltune.families.expr_axis.api import AxisReducer
    from cltune.families.expr_axis.config import AxisExprConfig
    from cltune.families.expr_axis.launch import AxisPlan

    info, dev = device
    assert "-DCLT_AX_ROLLED=1" in ek.build_options(AxisExprConfig(), replace(info, type="cpu"))
    assert not any("ROLLED" in o
                   for o in ek.build_options(AxisExprConfig(), replace(info, type="gpu")))
    rng = np.random.default_rng(5)
    shapes = {"rows": (3, 140001, 1), "cols": (1, 140001, 5)}
    cfgs = [AxisExprConfig("rows", 8, 1, 1), AxisExprConfig("cols", 8, 1, 1, 2)]
    inputs = {k: (rng.standard_normal(v) * 10 + 3).astype(np.float32) for k, v in shapes.items()}
    real = ek.build_options
    answers = []
    for rolled in (True, False):
        monkeypatch.setattr(ek, "build_options", lambda cfg, i, rolled=rolled: real(
            cfg, replace(i, type="cpu" if rolled else "gpu")))
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx, dev)
        knl = stats.kernel(op, ctx, np.float32)
        red = AxisReducer(ctx, dev, knl.spec)
        got = []
        for cfg in cfgs:
            b = ek.build(ctx, dev, info, knl.spec, cfg)
            outer, r, inner = shapes[cfg.layout]
            x = cla.to_device(q, inputs[cfg.layout])
            for split in (1, 3):
                chunk = -(-r // split)
                plan = AxisPlan(-(-(outer * inner) // cfg.outputs_per_group), split, chunk)
                res = cla.empty(q, (outer, inner), knl.spec.dtype_result)
                red.launch(q, b, plan, [x.base_data, 0, *([0.0] if op == "var" else [])],
                           outer, r, inner, res.base_data, 0)
                got.append(res.get())
                want = getattr(np, op)(inputs[cfg.layout].astype(
                    np.float64 if op != "argmax" else np.float32), axis=1)
                assert np.allclose(got[-1], want, rtol=1e-5), (rolled, cfg.short(), split)
        answers.append(got)
    for a, b in zip(*answers, strict=True):
        np.testing.assert_array_equal(a, b)


def test_nan_inf_and_ties_first_occurrence(queue):
    h = np.zeros((6, 9), np.float32)
    h[0, [2, 5]] = 7  # a tie: the first wins
    h[1, [1, 6]] = np.nan  # the first NaN wins, for argmax and argmin
    h[2, [0, 8]] = np.nan
    h[3] = -np.inf
    h[4, [3, 4]] = np.inf
    h[5, 8] = np.nan
    for order in "CF":
        for name in ("argmax", "argmin", "mean", "var", "norm", "norm_inf", "count_nonzero"):
            for axis in (0, 1):
                check(queue, name, h, order, axis=axis)
    assert list(cltune.argmax(up(queue, h), axis=1).get()) == [2, 1, 0, 0, 3, 8]


@pytest.mark.parametrize("shape,axis", [((3, 100_003), 1), ((100_003, 3), 0),
                                        ((2, 70_001, 5), 1)])
def test_split_axis_nan_ties_across_groups(queue, rng, shape, axis):
    """Long axes are split over work-groups; the second kernel keeps the first occurrence."""
    h = rng.standard_normal(shape).astype(np.float32)
    n = shape[axis]
    idx = [slice(None)] * len(shape)
    for pos, v in ((n - 3, 50), (n // 2, 50), (n // 3, 50)):  # ties in different chunks
        idx[axis] = pos
        h[tuple(idx)] = v
    for order in "CF":
        for name in ("argmax", "argmin", "mean", "var", "std", "norm", "norm_inf"):
            check(queue, name, h, order, rtol=1e-5, axis=axis)
    idx[axis] = n - 2
    h[tuple(idx)] = np.nan
    idx[axis] = n // 2 + 1
    h[tuple(idx)] = np.nan
    for name in ("argmax", "argmin"):
        check(queue, name, h, "C", axis=axis)


@pytest.mark.parametrize("name", ["argmax", "argmin", "mean", "var", "norm", "norm_inf",
                                  "count_nonzero"])
def test_gpu_plans_split_and_stage2_lanes(queue, rng, monkeypatch, name):
    """The GPU plans on the test device: long rows and tall-narrow blocks split finely over
    groups, stage 2 combining an output's partials over several lanes (a tree in __local
    memory) — against numpy, ties and NaN across chunks, C and F order, 3-D."""
    import cltune.families.expr_axis.api as eapi
    import cltune.families.expr_axis.launch as el

    real = eapi.device_plan
    seen = set()

    def gpu_like(cfg, info, outer, r, inner):
        p = el.axis_plan(cfg, 132, outer, r, inner, 0, 2, 1 << 14)
        seen.add(p.lanes2)
        return p

    monkeypatch.setattr(eapi, "device_plan", gpu_like)
    cltune.clear_caches()
    try:
        for shape, axis in (((3, 20011), 1), ((20011, 3), 0), ((1, 65537), 1),
                            ((4099, 9), 0), ((2, 3001, 7), 1), ((9, 4001), 1)):
            h = rng.standard_normal(shape).astype(np.float32)
            idx = [slice(None)] * len(shape)
            n = shape[axis]
            for pos in (n - 2, n // 2, n // 5):  # ties in different chunks
                idx[axis] = pos
                h[tuple(idx)] = 9
            if name in ("argmax", "argmin"):
                idx[axis] = n // 3
                h[tuple(idx)] = np.nan
            if name == "count_nonzero":
                h[h < 0.3] = 0
            for order in "CF":
                check(queue, name, h, order, rtol=1e-5, axis=axis)
        assert max(seen) > 1, seen  # stage 2's lanes were exercised
    finally:
        monkeypatch.setattr(eapi, "device_plan", real)
        cltune.clear_caches()


def test_large_shapes(queue, rng):
    for shape in ((1 << 20, 16), (16, 1 << 16)):
        h = rng.standard_normal(shape).astype(np.float32)
        x = up(queue, h)
        for axis in (0, 1):
            np.testing.assert_array_equal(cltune.argmax(x, axis=axis).get(),
                                          np.argmax(h, axis=axis))
            np.testing.assert_allclose(cltune.mean(x, axis=axis).get(),
                                       h.astype(np.float64).mean(axis=axis), rtol=1e-5,
                                       atol=1e-7)
            np.testing.assert_allclose(cltune.var(x, axis=axis).get(),
                                       h.astype(np.float64).var(axis=axis), rtol=1e-5)
            np.testing.assert_allclose(cltune.norm(x, axis=axis).get(),
                                       np.linalg.norm(h.astype(np.float64), axis=axis),
                                       rtol=1e-5)


def test_empty_axes(queue):
    for shape, axis in (((0, 3), 0), ((3, 0), 1), ((0, 0), 0)):
        with pytest.raises(ValueError, match="empty sequence"):
            cltune.argmax(up(queue, np.zeros(shape, np.float32)), axis=axis)
        with pytest.raises(ValueError, match="empty sequence"):
            np.argmax(np.zeros(shape), axis=axis)
    for shape, axis in (((0, 3), 1), ((3, 0), 0), ((4, 0, 5), 0)):  # empty outputs
        for name in FUNCS:
            for order in "CF":
                check(queue, name, np.zeros(shape, np.float32), order, axis=axis)
    for shape, axis in (((3, 0), 1), ((0, 3), 0), ((2, 0, 3), 1), ((2, 0), (0, 1))):
        for name in FUNCS:  # an empty reduced axis: NaN, 0, False, True as numpy
            if name.startswith("arg") or (name.startswith("norm") and name != "norm"
                                          and isinstance(axis, tuple)):
                continue
            for order in "CF":
                check(queue, name, np.zeros(shape, np.float32), order, axis=axis)


def test_axis_none_keepdims_axis_empty_tuple_and_f_order_index(queue, rng):
    h = rng.standard_normal((5, 7)).astype(np.float32)
    for name in FUNCS:
        check(queue, name, h, "F", axis=None, keepdims=True)
        check(queue, name, h, "F", axis=None)  # numpy's flat index is in C order
        if not name.startswith(("arg", "norm")):
            check(queue, name, h, "C", axis=())  # nothing reduced: each element
    h3 = rng.standard_normal((3, 1, 4)).astype(np.float32)
    check(queue, "argmax", h3, "F", axis=None)
    check(queue, "argmax", h3, "C", axis=np.int64(2))


def test_errors(queue):
    x = up(queue, np.ones((4, 5, 6), np.float32))
    with pytest.raises(AxisError):
        cltune.mean(x, axis=3)
    with pytest.raises(AxisError):
        cltune.argmax(x, axis=-4)
    with pytest.raises(TypeError, match="axis must be an int"):
        cltune.argmax(x, axis=(1,))
    with pytest.raises(TypeError):
        cltune.mean(x, axis=1.0)
    with pytest.raises(ValueError, match="duplicate"):
        cltune.var(x, axis=(1, 1))
    with pytest.raises(ValueError, match="adjacent"):
        cltune.mean(x, axis=(0, 2))
    with pytest.raises(ValueError, match="non-contiguous"):
        cltune.mean(x[:, :, ::2], axis=0)
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        cltune.norm(x, axis=(0, 1, 2))
    with pytest.raises(ValueError, match="matrix norms"):
        cltune.norm(x, 1, axis=(1, 2))
    with pytest.raises(ValueError, match="ord=3"):
        cltune.norm(x, 3, axis=1)
    with pytest.raises(ValueError, match="ddof"):
        cltune.var(x, ddof=-1, axis=0)
    check(queue, "norm", np.ones((4, 5, 6), np.float32), "C", axis=(1,))  # a 1-tuple: vector


def test_stats_reducer_axis_and_explain(queue, rng, tmp_path, monkeypatch):
    from cltune.families.expr_axis.api import axis_reducer

    # an empty database: the heuristic serves (tests/test_stats_axis_tuning.py tunes)
    monkeypatch.setenv("CLTUNE_DB", f"sqlite:///{tmp_path / 'none.db'}")
    axis_reducer(queue.context, queue.device,
                 stats.kernel("var", queue.context, np.float32).spec).reload()
    h = rng.standard_normal((301, 17)).astype(np.float32)
    r = cltune.get_reducer(queue, "var", np.float32)
    np.testing.assert_allclose(r(h, axis=1, ddof=1).get(), h.astype(np.float64).var(1, ddof=1),
                               rtol=1e-5)
    f = np.asfortranarray(h)
    np.testing.assert_allclose(r(f, axis=0, keepdims=True).get(),
                               h.astype(np.float64).var(0, keepdims=True), rtol=1e-5)
    a = cltune.get_reducer(queue, "argmax", np.float32)
    np.testing.assert_array_equal(a(cla.to_device(queue, h), axis=-1).get(), h.argmax(-1))
    ex = r.explain_axis((301, 17), 1)
    assert ex.level == "builtin" and ex.config.layout == "rows" and ex.view == (301, 17, 1)
    # untuned here, or (where cltune ships results for the device) tuned only far from it
    assert ex.size_class is None and ("not tuned" in ex.why or "away from this shape" in ex.why)
    ex = r.explain_axis((301, 17), 1, order="F")
    assert ex.config.layout == "cols" and ex.view == (1, 17, 301)
    assert "cols" in str(ex)
    assert r.explain_axis((1, 17), 1).level == "whole"
    assert cltune.get_reducer(queue, "norm").explain_axis((5, 6), 0, ord=1).config is not None
    with pytest.raises(ValueError, match="ord"):
        cltune.get_reducer(queue, "norm").explain_axis((5, 6), 0, ord=3)


def test_kernels_are_cached_per_shape(queue, rng):
    from cltune.families.expr_axis.api import axis_reducer

    x = up(queue, rng.standard_normal((64, 33)).astype(np.float32))
    cltune.mean(x, axis=0)
    red = axis_reducer(queue.context, queue.device, stats.kernel("mean", queue.context,
                                                                   np.float32).spec)
    assert red.plan(1, 64, 33) is red.plan(1, 64, 33)


@pytest.mark.parametrize("name", ["mean", "norm", "argmax", "var", "sum"])
def test_short_rows_every_length(queue, device, rng, name):
    """Rows of 2..16 elements (and 1 and 17 beside them), odd counts of rows, C order and a
    3-D array's last axis: on CPUs served by the build for their exact length where the rule
    takes them (defaults.short_rows), every answer numpy's."""
    from cltune.families.expr_axis.api import axis_reducer
    from cltune.families.expr_axis.defaults import CPU_SHORT_ACC_BYTES

    knl = (cltune.ReductionKernel(queue.context, np.float32, "0", "a+b", "x[i]",
                                  "__global const float *x") if name == "sum"
           else stats.kernel("norm2" if name == "norm" else name, queue.context, np.float32))
    red = axis_reducer(queue.context, queue.device, knl.spec)
    taken = device[0].type == "cpu" and knl.spec.dtype_out.itemsize <= CPU_SHORT_ACC_BYTES
    for r in range(1, 18):
        h = rng.standard_normal((1003 + 2 * r, r)).astype(np.float32)
        h[5, r // 2] = 7
        x = up(queue, h)
        if name == "sum":
            got, want = knl(x, axis=1).get(), h.astype(np.float64).sum(axis=1)
        else:
            got, want = FUNCS[name][0](x, axis=1).get(), want_of(name, h, axis=1)
        if name == "argmax":
            np.testing.assert_array_equal(got, want, err_msg=f"{r}")
        else:
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=f"{r}")
        b, _ = red.plan(h.shape[0], r, 1)
        assert b.short == (r if taken and 2 <= r <= 16 else 0), (r, b.config.short(), b.short)
    h3 = rng.standard_normal((7, 9, 5)).astype(np.float32)
    if name != "sum":
        check(queue, name, h3, axis=2)


# ---- Oclgrind ---------------------------------------------------------------------------------
MARK = "CLTUNE-STATS-AXIS-OCLGRIND "
SCRIPT = r'''
import numpy as np
import pyopencl.array as cla
from cltune.stats import api as stats
from cltune.families.expr_axis.api import AxisReducer
from cltune.families.expr_axis.kernel import build
from cltune.families.expr_axis.config import AxisExprConfig as C
from cltune.families.expr_axis.launch import AxisPlan

CFGS = [C("rows", 8, 4, 2), C("rows", 8, 1, 2), C("rows", 16, 16, 1),
        C("cols", 8, 2, 2, 2), C("cols", 8, 1, 1, 4), C("cols", 8, 8, 1),
        C("cols", 2, 1, 4, 64)]  # (streamed strips: a work-item a strip of a block)
if NEGATIVE:  # the lanes tree without its barrier between steps: must be reported
    import cltune.families.expr_axis.kernel as ea
    src = ea.axis_template()
    cut = src.replace("        }\n        barrier(CLK_LOCAL_MEM_FENCE);\n", "        }\n", 1)
    assert cut != src
    ea.axis_template = lambda: cut
    CFGS = [CFGS[0]]
SHAPES = {"rows": [(3, 37, 1), (5, 2, 1)], "cols": [(2, 29, 5), (1, 40, 3)],
          "stream": [(2, 29, 70), (1, 40, 3)]}
rng = np.random.default_rng(0)
out = {"runs": []}
for op in ("argmax",) if NEGATIVE else ("argmax", "var", "mean"):
    knl = stats.kernel(op, ctx, np.float32)
    red = AxisReducer(ctx, dev, knl.spec)
    for cfg in CFGS:
        b = build(ctx, dev, info, knl.spec, cfg)
        for outer, r, inner in SHAPES["stream" if cfg.streamed else cfg.layout]:
            for split in (1, 3):
                h = rng.standard_normal((outer, r, inner)).astype(np.float32)
                h[0, r // 2, 0] = 9
                h[-1, r - 1, -1] = 9
                x = cla.to_device(q, h)
                block = cfg.lanes * cfg.items
                per_split = -(-r // split)
                chunk = -(-per_split // block) * block
                split_ = -(-r // chunk)  # stage 2 with a lanes' tree where split
                units = outer * -(-inner // cfg.strip) if cfg.streamed else outer * inner
                per_group = cfg.wg if cfg.streamed else cfg.outputs_per_group
                plan = AxisPlan(-(-units // per_group), split_, chunk,
                                2 if split_ > 1 and cfg.wg >= 8 else 1)
                res = cla.empty(q, (outer, inner), knl.spec.dtype_result)
                extra = [0.0] if op == "var" else []
                red.launch(q, b, plan, [x.base_data, 0, *extra], outer, r, inner,
                           res.base_data, 0)
                want = getattr(np, op)(h.astype(np.float64) if op != "argmax" else h, axis=1)
                ok = np.allclose(res.get(), want, rtol=1e-5)
                out["runs"].append({"op": op, "cfg": cfg.short(), "shape": [outer, r, inner],
                                    "split": plan.split, "ok": bool(ok)})
if not NEGATIVE:  # rows built for their exact length (defaults.short_rows: CPUs)
    for op in ("argmax", "var", "mean"):
        knl = stats.kernel(op, ctx, np.float32)
        red = AxisReducer(ctx, dev, knl.spec)
        cfg = C("rows", 8, 1, 2)
        for outer, r in ((3, 2), (11, 7), (5, 16)):
            b = build(ctx, dev, info, knl.spec, cfg, short=r)
            h = rng.standard_normal((outer, r, 1)).astype(np.float32)
            h[0, r // 2, 0] = 9
            x = cla.to_device(q, h)
            res = cla.empty(q, (outer, 1), knl.spec.dtype_result)
            extra = [0.0] if op == "var" else []
            red.launch(q, b, AxisPlan(-(-outer // 8), 1, r), [x.base_data, 0, *extra], outer,
                       r, 1, res.base_data, 0)
            want = getattr(np, op)(h.astype(np.float64) if op != "argmax" else h, axis=1)
            ok = np.allclose(res.get(), want, rtol=1e-5)
            out["runs"].append({"op": op, "cfg": cfg.short() + f" short={r}",
                                "shape": [outer, r, 1], "split": 1, "ok": bool(ok)})
if not NEGATIVE:  # a streamed strip with the rounding cascade: a float32 sum restarting every
    import cltune  # 2 rows, so that level 1 and the counter's slots are pushed and summed
    import cltune.families.expr_axis.kernel as ea
    _opts = ea.build_options
    ea.build_options = lambda cfg, i, short=0: [*_opts(cfg, i, short), "-DCLT_BLOCK=2"]
    knl = cltune.ReductionKernel(ctx, np.float32, "0", "a+b", "x[i]", "__global const float *x")
    red = AxisReducer(ctx, dev, knl.spec)
    cfg = C("cols", 2, 1, 4, 64)
    b = build(ctx, dev, info, knl.spec, cfg)
    for outer, r, inner in ((2, 29, 70), (1, 40, 3)):
        for split in (1, 3):
            h = rng.standard_normal((outer, r, inner)).astype(np.float32)
            x = cla.to_device(q, h)
            chunk = -(-(-(-r // split)) // cfg.items) * cfg.items
            plan = AxisPlan(-(-(outer * -(-inner // cfg.strip)) // cfg.wg), -(-r // chunk), chunk)
            res = cla.empty(q, (outer, inner), np.float32)
            red.launch(q, b, plan, [x.base_data, 0], outer, r, inner, res.base_data, 0)
            ok = np.allclose(res.get(), h.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
            out["runs"].append({"op": "sum-cascade", "cfg": cfg.short(),
                                "shape": [outer, r, inner], "split": plan.split, "ok": bool(ok)})
print(MARK + json.dumps(out), flush=True)
'''


def _oclgrind(negative: bool):
    res, summary = run_marked(SCRIPT, MARK, negative=negative)
    return res, summary["runs"] if summary else None


@pytest.mark.oclgrind
@pytest.mark.multiprocess
def test_axis_skeleton_is_clean_under_oclgrind():
    """No data races (local and global), no divergent barriers, no invalid accesses, right
    answers: rows and cols, with and without a lanes tree, with and without a split axis;
    streamed strips (a strip and a block's shorter last one, strips wider than a block; with
    the rounding cascade, restarting every 2 rows)."""
    res, runs = _oclgrind(False)
    assert res.returncode == 0 and runs, res.summary()
    assert [r for r in runs if not r["ok"]] == []
    assert any("strip=64" in r["cfg"] and r["split"] > 1 for r in runs)
    assert any(r["op"] == "sum-cascade" and r["split"] > 1 for r in runs)
    assert sum("short=" in r["cfg"] for r in runs) == 9
    ran = {(r["cfg"].split()[0], "lanes=1 " not in r["cfg"], r["split"] > 1) for r in runs}
    assert ran == {(lay, lanes, split) for lay in ("rows", "cols") for lanes in (False, True)
                   for split in (False, True)}
    assert res.reports == [], res.summary(limit=8)


@pytest.mark.oclgrind
@pytest.mark.multiprocess
def test_oclgrind_negative_control_tree_without_barrier():
    res, runs = _oclgrind(True)
    assert runs, res.summary()
    assert any(r.kind == "data-race" for r in res.reports), res.summary(limit=4)
