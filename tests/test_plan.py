"""Launch plans: every element covered exactly once, 64-bit indices exactly when needed."""

import pytest

from cltune.families.reduce.config import Config
from cltune.families.reduce.plan import INDEX32_LIMIT, make_plan, needs_index64

CONFIGS = [Config("local_tree", 256, 1024, 4, 4, 8, 2, "native"),
           Config("serial", 8, 0, 8, 16, 8, 1, "native"),
           Config("warp_shuffle", 32, 0, 3, 1, 256, 1, "native")]
SIZES = [1, 2, 7, 1023, 1025, 2**20 + 3, 2**31 - 1, 2**31 + 5, 2**32 - 1, 2**32 + 1027,
         3 * 2**32 + 17]


def ranges(plan):
    """The [start, end) each unit of the kernel reads, computed as the kernel does."""
    for u in range(plan.units):
        start = u * plan.chunk
        yield start, min(start + plan.chunk, plan.n)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.strategy)
@pytest.mark.parametrize("n", SIZES)
def test_units_cover_every_element_once(cfg, n):
    plan = make_plan(cfg, n, compute_units=132)
    assert plan.chunk % plan.block == 0
    assert plan.units * plan.chunk >= n
    covered = 0
    prev_end = 0
    for start, end in ranges(plan):
        if start >= n:
            assert end <= start  # idle unit: reads nothing
            continue
        assert start == prev_end
        covered += end - start
        prev_end = end
    assert covered == n


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.strategy)
def test_index_width_follows_n_and_offset(cfg):
    small = make_plan(cfg, 10**6, 132)
    assert not needs_index64(small)
    assert needs_index64(small, offset=INDEX32_LIMIT - 10)
    for n in (2**32 - 1, 2**32 + 1027, 3 * 2**32):
        assert needs_index64(make_plan(cfg, n, 132))
    # the largest n that keeps 32-bit indices: every index the kernel forms stays < 2**32
    for n in (2**31 - 1, 2**31 + 5):
        p = make_plan(cfg, n, 132)
        if not needs_index64(p):
            assert p.units * p.chunk + p.chunk + p.block <= INDEX32_LIMIT


def test_groups_capped_by_n():
    cfg = Config("local_tree", 256, 256, 4, 4, 1024, 2, "native")
    p = make_plan(cfg, 1000, 132)
    assert p.groups == 1 and p.units == 1
