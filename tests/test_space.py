"""The space asks the device: every point it offers respects the device's limits and builds."""

import random

from cltune.core import strategies
from cltune.core.ops import OpSpec
from cltune.families.reduce.config import Config
from cltune.families.reduce.launch import Launcher
from cltune.families.reduce.space import STATIC_LOCAL_RESERVE, make_space


def test_offered_points_respect_device_limits(ctx, device):
    info, dev = device
    space = make_space(ctx, dev, info, OpSpec("sum", "float32"))
    assert space.size() > 0
    rng = random.Random(0)
    v = space.values
    seen = 0
    for _ in range(3000):
        strat = rng.choice(v["strategy"])
        wg = rng.choice(v["wg"])
        tile = wg * rng.choice(v["tile_factor"]) if strategies.get(strat).uses_tile else 0
        cfg = Config(strat, wg, tile, rng.choice(v["items"]), rng.choice(v["vec"]),
                     rng.choice(v["groups_per_cu"]), rng.choice(v["passes"]), "native")
        if space.check(cfg):
            continue
        seen += 1
        assert cfg.wg <= min(info.max_wg, space.kernel_max_wg)
        assert cfg.wg % space.base_multiple == 0
        assert max(cfg.tile, cfg.wg) * 4 + STATIC_LOCAL_RESERVE <= info.local_mem
    assert seen > 100


def test_a_sample_of_the_space_builds_and_runs(ctx, device, queue):
    info, dev = device
    spec = OpSpec("sum", "float32")
    space = make_space(ctx, dev, info, spec).restrict(items=(1, 3), vec=(1, 16),
                                                      groups_per_cu=(1, 8), tile_factor=(1, 4))
    rng = random.Random(1)
    import numpy as np

    from cltune.families.reduce.reference import run_once
    for cfg in rng.sample(space.configs(), 12):
        got = run_once(Launcher(ctx, dev, info, spec, cfg), queue, [np.ones(4099, np.float32)])
        assert got == 4099, cfg.short()


def test_space_size_is_printed_by_tune_and_counts_match(ctx, device):
    info, dev = device
    space = make_space(ctx, dev, info, OpSpec("sum", "float32")).restrict(
        items=(1, 2), vec=(1, 4), groups_per_cu=(1,), tile_factor=(1, 2), passes=(2,))
    assert space.size() == len(space.configs())


def test_single_pass_with_64bit_partials_needs_int64_atomics(ctx, device):
    """Single-pass partials cross work-groups through atomics on their bits: a 64-bit
    accumulator (int32 sums accumulate in ulong) needs cl_khr_int64_base_atomics."""
    from dataclasses import replace

    info, dev = device
    spec = OpSpec("sum", "int32")
    space = make_space(ctx, dev, info, spec).restrict(items=(1,), vec=(1, 4),
                                                      groups_per_cu=(1,), tile_factor=(1,))
    cfg = Config("local_tree", space.values["wg"][0], space.values["wg"][0], 1, 1, 1, 1)
    if not info.int64_atomics:
        import pytest
        pytest.skip(f"{info.name} has no cl_khr_int64_base_atomics")
    assert space.check(cfg) == ""
    without = replace(space, device=replace(info, int64_atomics=False))
    assert "cl_khr_int64_base_atomics" in without.check(cfg)
    assert without.check(replace(cfg, passes=2)) == ""
    assert without.size() == len(without.configs()) < space.size() == len(space.configs())
    assert {c.passes for c in without.configs()} == {2}
    # a float32 max's partials are 32-bit (a float32 sum's are double where fp64 exists)
    f32 = replace(make_space(ctx, dev, info, OpSpec("max", "float32")),
                  device=replace(info, int64_atomics=False))
    assert f32.check(replace(cfg, passes=1)) == ""  # 32-bit partials need no extension
    # matrix runs (portability) fall back to two passes where single pass is not offered
    for dtype in ("int32", "float64", "uint64"):
        if dtype == "float64" and not info.fp64:
            continue
        sp = make_space(ctx, dev, replace(info, int64_atomics=False), OpSpec("sum", dtype))
        for strat in sp.values["strategy"]:
            rep = sp.representative(strat, "sum", dtype)
            assert sp.check(rep) == "" and (rep.passes == 2 or sp.spec.acc_cl_type() in
                                           ("float", "int", "uint"))
