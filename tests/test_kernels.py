"""Every strategy the space offers, every op and dtype, against numpy on odd sizes."""

import numpy as np
import pytest

from cltune.core.inputs import make_input
from cltune.core.ops import DTYPES, OPS, OpSpec
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.reference import compare, error_bound, reference, run_once
from cltune.families.reduce.space import make_space

SIZES = (1, 2, 7, 31, 1023, 1025)
BIG = 2**20 + 3


def configs_for(space, wg_pick=None):
    """A few configs per offered strategy: both passes, scalar and wide loads, odd items."""
    out = []
    wgs = space.values["wg"]
    for strat in space.values["strategy"]:
        wg = wg_pick or (wgs[min(2, len(wgs) - 1)] if strat != "serial" else wgs[0])
        if strat == "warp_shuffle":
            wg = max(wg, 64)
        tile = wg * 2 if strat == "local_tree" else 0
        out.append(Config(strat, wg, tile, 3, 1, 2, 2, "native"))
        out.append(Config(strat, wg, tile, 4, 16, 4, 1, "native"))
        out.append(Config(strat, wgs[0] if strat != "warp_shuffle" else 32,
                          wgs[0] if strat == "local_tree" else 0, 1, 4, 1, 1, "native"))
    return out


def check(ctx, queue, info, spec, cfg, sizes, xs_fn=make_input):
    la = Launcher(ctx, queue.device, info, spec, cfg)
    for n in sizes:
        xs = xs_fn(spec, n)
        want, scale = reference(spec, xs)
        got = run_once(la, queue, xs)
        bound = error_bound(la, n, scale) if spec.is_float else 0.0
        why = compare(spec, got, want, bound)
        assert not why, f"{spec} {cfg.short()} n={n}: {why}"
        assert np.asarray(got).dtype == spec.result_dtype


@pytest.fixture(scope="module")
def sum_space(ctx, device):
    return make_space(ctx, device[1], device[0], OpSpec("sum", "float32"))


def test_every_offered_strategy_sum_float32(ctx, queue, info, sum_space):
    for cfg in configs_for(sum_space):
        check(ctx, queue, info, OpSpec("sum", "float32"), cfg, (*SIZES, BIG))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_and_dtypes(ctx, queue, info, device, op, dtype):
    spec = OpSpec(op, dtype)
    if spec.needs_fp64 and not info.fp64:
        pytest.skip("device lacks cl_khr_fp64")
    space = make_space(ctx, device[1], info, spec, extended_acc=True)
    cfgs = configs_for(space)[::2]
    for acc in space.values["acc"][1:]:
        c = cfgs[0]
        cfgs.append(Config(c.strategy, c.wg, c.tile, c.items, c.vec, c.groups_per_cu,
                           c.passes, acc))
    for cfg in cfgs:
        check(ctx, queue, info, spec, cfg, (1, 7, 1025, 4099))


ADVERSARIAL = {
    "nan": lambda n, dt: np.where(np.arange(n) == n // 2, np.nan, 1.0).astype(dt),
    "inf": lambda n, dt: np.where(np.arange(n) == n - 1, np.inf, 1.0).astype(dt),
    "inf-inf": lambda n, dt: np.where(np.arange(n) % 2 == 0, np.inf, -np.inf).astype(dt),
    "neg-zero": lambda n, dt: np.full(n, -0.0, dt),
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
@pytest.mark.parametrize("op", ["sum", "min", "max", "prod"])
def test_float_special_values_match_numpy(ctx, queue, info, sum_space, case, op):
    spec = OpSpec(op, "float32")
    for n in (1, 2, 1025):
        x = ADVERSARIAL[case](n, np.float32)
        want = {"sum": np.sum, "min": np.min, "max": np.max, "prod": np.prod}[op](x)
        for cfg in configs_for(sum_space)[:3]:
            got = run_once(Launcher(ctx, queue.device, info, spec, cfg), queue, [x])
            if np.isnan(want):
                assert np.isnan(got), (case, op, n, cfg.short(), got)
            else:
                assert got == want, (case, op, n, cfg.short(), got, want)
                if op == "sum" and case == "neg-zero":
                    assert np.signbit(got), "sum of -0.0 must stay -0.0 like numpy"


def test_integer_overflow_wraps_like_numpy(ctx, queue, info, sum_space):
    cfg = configs_for(sum_space)[0]
    for dtype in ("int32", "int64", "uint64"):
        big = np.iinfo(dtype).max
        x = np.full(1025, big, dtype)
        for op in ("sum", "prod"):
            spec = OpSpec(op, dtype)
            with np.errstate(over="ignore"):
                want = np.sum(x) if op == "sum" else np.prod(x)
            got = run_once(Launcher(ctx, queue.device, info, spec, cfg), queue, [x])
            assert got == want and np.asarray(got).dtype == want.dtype, (op, dtype, got, want)


def test_error_bound_is_not_vacuous(ctx, queue, info, sum_space):
    """The bound must be far tighter than sum|x| (else validation would accept anything)."""
    la = Launcher(ctx, queue.device, info, OpSpec("sum", "float32"), configs_for(sum_space)[0])
    n = 2**24
    assert error_bound(la, n, 1.0) < 0.01 * n * 2.0**-24  # 100x tighter than (n-1)u
    # and a result off by more than the bound is rejected
    assert compare(OpSpec("sum", "float32"), np.float32(1.01), 1.0, 1e-3)
