"""The GPU rules of the axis family that no CPU run reaches: the builtin configs for shapes
nobody tuned and which tuned class may serve a shape (fitted to an H200 sweep,
docs/logs/benchmarks-*.md "Axis sums on the H200: shapes nobody tuned")."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from cltune.core import shapes
from cltune.families.axis.config import AxisConfig
from cltune.families.axis.defaults import MIN_WORK_ITEMS, builtin_axis_config
from cltune.families.axis.launch import plan_cols
from cltune.families.axis.serve import GPU_CLASS_STEPS, class_steps, fits, narrow_fits

H200 = NS(type="gpu", max_wg=1024, local_mem=49152, is_nvidia=True, int64_atomics=True,
          compute_units=132, vector_cap=lambda b: 16)
OTHER_GPU = NS(type="gpu", max_wg=256, local_mem=32768, is_nvidia=False, int64_atomics=False,
               compute_units=64, vector_cap=lambda b: 16)
CPU = NS(type="cpu", max_wg=8192, local_mem=32768, is_nvidia=False, compute_units=2)


@pytest.mark.parametrize("rows,length", [(12345, 678), (10007, 1009), (200000, 50),
                                         (5000000, 3), (3, 5000000), (1000, 1000),
                                         (1, 1), (7, 2), (1 << 20, 16)])
def test_gpu_rows_load_aligned_vectors_only_and_fill_the_device(rows, length):
    cfg = builtin_axis_config(H200, "rows", rows, length, 4)
    assert cfg.vec == 1 or length % cfg.vec == 0, cfg.short()  # aligned on every row
    assert cfg.warp == (2 <= cfg.lanes <= 32)
    assert cfg.onepass == 1
    # a lane per ~16 elements, more (up to a work-group per row) while the launch is small
    assert cfg.lanes >= min(cfg.wg, -(-length // 16))
    assert (rows * cfg.lanes >= MIN_WORK_ITEMS or cfg.lanes == cfg.wg
            or cfg.lanes * cfg.vec >= length)
    assert AxisConfig.from_mapping(cfg.to_dict()) == cfg  # a valid point of the space
    # no warp shuffles or single-pass finishes where the device lacks them
    other = builtin_axis_config(OTHER_GPU, "rows", rows, length, 4)
    assert not other.warp and not other.onepass


@pytest.mark.parametrize("r,inner", [(3000, 5000), (524288, 24), (3, 5000000), (5000000, 3),
                                     (300, 301), (1, 1)])
def test_gpu_cols_tiles_widen_for_few_rows(r, inner):
    cfg = builtin_axis_config(H200, "cols", r, inner, 4)
    assert cfg.cols * cfg.vec <= max(64, cfg.wg * cfg.vec) and inner % cfg.vec == 0
    if r < 8:  # few reduced rows: the tile takes the whole work-group along the kept axis,
        assert cfg.cols == cfg.wg  # and the groups walk their units with more groups
        assert (cfg.items, cfg.groups_per_cu) == (2, 8), cfg.short()
    p = plan_cols(cfg, H200.compute_units, 1, r, inner)
    assert p.split * p.ctiles <= max(p.ctiles, cfg.groups_per_cu * H200.compute_units)


def test_split_units_never_exceed_the_groups_launched():
    """One unit over the groups launched made one group take two in turn (3000x5000 along
    axis 0 on the H200: 553 units on 528 groups, 41 us against 29)."""
    cfg = AxisConfig(wg=256, lanes=0, cols=32, vec=2, items=4, groups_per_cu=4, onepass=1)
    p = plan_cols(cfg, 132, 1, 3000, 5000)
    assert p.groups * 1 >= p.ctiles * p.split and p.ctiles * p.split <= 528, p


def test_tuned_classes_serve_gpus_near_and_aligned_only():
    assert class_steps(CPU) == shapes.MAX_CLASS_STEPS and class_steps(H200) == GPU_CLASS_STEPS
    tuned = [(12, 12), (16, 8)]
    assert shapes.nearest(shapes.log2_key(1000, 1000), tuned) == (12, 12)
    assert shapes.nearest(shapes.log2_key(1000, 1000), tuned, class_steps(H200)) is None
    assert shapes.nearest(shapes.log2_key(3000, 5000), tuned, class_steps(H200)) == (12, 12)
    v8 = AxisConfig(wg=256, lanes=16, vec=8, items=1, groups_per_cu=16, warp=1)
    assert not fits(H200, "rows", v8, 678) and fits(H200, "rows", v8, 680)
    assert fits(CPU, "rows", v8, 678) and fits(H200, "segs", v8, 678)


def test_cpu_rows_builtins_by_length_and_count():
    """CPUs untuned: rows of 2..16 a work-item a group over vectors of 16 (clt_ax_packed); a
    few long rows a work-item a group, split over 64 groups a CU; many rows of any other
    length a work-item a group too, 4 vectors in flight, 8 groups a CU, each group a block of
    rows in memory order (CLT_AX_BLOCKED; docs/logs/benchmarks-*.md,
    scripts/experiments/axis_cpu_sweep.py); segments the same."""
    cpu = NS(**{**vars(CPU), "vector_cap": lambda b: 16})
    for b in (2, 3, 7, 12, 16):
        cfg = builtin_axis_config(cpu, "rows", 100000, b, 4)
        assert (cfg.wg, cfg.lanes, cfg.vec) == (1, 1, 16), (b, cfg.short())
    for rows in (1, 8, 256):
        cfg = builtin_axis_config(cpu, "rows", rows, 1 << 16, 4)
        assert (cfg.wg, cfg.items, cfg.groups_per_cu) == (1, 1, 64), (rows, cfg.short())
    for rows, b in ((257, 1 << 16), (65536, 256), (1 << 20, 64), (1 << 18, 17)):
        cfg = builtin_axis_config(cpu, "rows", rows, b, 4)
        assert (cfg.wg, cfg.lanes, cfg.vec, cfg.items, cfg.groups_per_cu) == (
            1, 1, 16, min(4, max(1, b // 16)), 8), (rows, b, cfg.short())
    segs = builtin_axis_config(cpu, "segs", 8, 1 << 16, 4)  # long ones: a work-item each too
    assert (segs.wg, segs.items, segs.groups_per_cu) == (1, 4, 8), segs.short()


def test_cpu_cols_builtins_for_few_reduced_rows():
    cpu = NS(**{**vars(CPU), "vector_cap": lambda b: 16})
    few = builtin_axis_config(cpu, "cols", 3, 3000017, 4)
    many = builtin_axis_config(cpu, "cols", 64, 100003, 4)
    assert few.stream and many.stream
    assert (few.cols, few.items) == (16, 2) and (many.cols, many.items) == (64, 8)


def test_cpu_cols_strips_spanning_a_row_take_one_row_a_pass():
    cpu = NS(**{**vars(CPU), "vector_cap": lambda b: 16})
    for r, inner, cols, items in ((65536, 256, 16, 1), (20000, 700, 64, 1), (4096, 1024, 64, 1),
                                  (4096, 4096, 64, 8), (2000, 3001, 64, 8), (4096, 1025, 64, 8)):
        cfg = builtin_axis_config(cpu, "cols", r, inner, 4)
        assert cfg.stream and (cfg.cols, cfg.items) == (cols, items), (r, inner, cfg)


def test_narrow_columns_are_served_by_their_own_class_on_gpus():
    """#40: 1048576 x 8 along axis 0 served 2^20 x 2^4's tile ran 1.3x slower than the
    builtin on the H200; a narrow kept axis takes its own power of two's class or the
    builtin."""
    assert not narrow_fits(H200, "cols", 8, 1.0) and narrow_fits(H200, "cols", 8, 0.0)
    assert narrow_fits(H200, "cols", 7, 0.19) and not narrow_fits(H200, "cols", 6, -0.58)
    assert narrow_fits(H200, "cols", 64, 1.0) and narrow_fits(H200, "rows", 8, 1.0)
    assert narrow_fits(CPU, "cols", 8, 1.0)


@pytest.mark.parametrize("r,inner,cols", [(2000003, 7, 4), (4194304, 4, 2), (1 << 20, 5, 4),
                                          (1 << 20, 3, 2), (1 << 20, 2, 1), (1 << 20, 1, 1)])
def test_gpu_tall_narrow_columns(r, inner, cols):
    cfg = builtin_axis_config(H200, "cols", r, inner, 4)
    assert (cfg.cols, cfg.vec, cfg.items, cfg.groups_per_cu) == (cols, 1, 2, 8), cfg.short()
    # 8 columns and wider: the tile rule (1048576x8: C4 v2 i4 g4, the best of the grid)
    wide = builtin_axis_config(H200, "cols", 1048576, 8, 4)
    assert (wide.cols, wide.vec, wide.items, wide.groups_per_cu) == (4, 2, 4, 4), wide.short()
