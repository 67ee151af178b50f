"""The GPU builtin of whole-array expressions (cltune.families.expr.defaults), which no CPU run
reaches: one config for every size, except accumulators over BIG_ACC bytes (var's and std's
four doubles) with a single-pass finish, served by size (an H100's sweep,
scripts/experiments/var_sizes.py; docs/logs/h100-stats-sweep-2026-12-07.txt)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from cltune.core.serving import SizeChoices
from cltune.families.expr.defaults import BIG_ACC, builtin, builtin_by_size

NVIDIA = NS(type="gpu", max_wg=1024, local_mem=49152, is_nvidia=True)
OTHER_GPU = NS(type="gpu", max_wg=256, local_mem=32768, is_nvidia=False)
CPU = NS(type="cpu", max_wg=4096, local_mem=65536, is_nvidia=False)


class _Choice(NS):
    pass


def _served(info, itemsize, n):
    choices = tuple(_Choice(config=c, bucket=b) for c, b in builtin_by_size(info, itemsize))
    return SizeChoices("builtin", "", choices).serve(n)[0].config


@pytest.mark.parametrize("itemsize", [4, 8, 16])
def test_small_accumulators_keep_one_builtin_for_every_size(itemsize):
    for info in (NVIDIA, OTHER_GPU, CPU):
        assert builtin_by_size(info, itemsize) == ((builtin(info, itemsize), None),)


def test_var_sized_accumulators_on_nvidia_four_items_two_groups_a_cu_up_to_2_24():
    small, large = (_served(NVIDIA, 32, n) for n in (3_000_000, 1 << 27))
    assert (small.layout, small.wg, small.items, small.groups_per_cu, small.passes) == \
        ("strided", 256, 4, 2, 1)
    assert large == builtin(NVIDIA, 32) and large.items == 2 and large.groups_per_cu == 8
    for n in (1, 1000, 1 << 20, 1 << 22, 1 << 24):
        assert _served(NVIDIA, 32, n) == small, n
    for n in (1 << 25, 1 << 28, 1 << 31):
        assert _served(NVIDIA, 32, n) == large, n


def test_var_sized_accumulators_elsewhere_keep_their_builtin():
    # two passes (no ordered single-pass finish) and CPUs: one config, as before
    for info in (OTHER_GPU, CPU):
        assert builtin_by_size(info, 32) == ((builtin(info, 32), None),)
    assert BIG_ACC < 32


def test_larger_structs_than_measured_keep_one_builtin():
    from cltune.families.expr.defaults import MEASURED_ACC

    for itemsize in (MEASURED_ACC + 8, 64, 128):
        assert builtin_by_size(NVIDIA, itemsize) == ((builtin(NVIDIA, itemsize), None),)


def test_the_tuner_has_the_builtin_of_the_class_compete():
    """The tuner's final re-measurement runs what an untuned device runs for the class being
    tuned (`builtin_near`): var's small config up to about 2^24, the large one above."""
    from cltune.families.expr.defaults import builtin_near

    assert builtin_near(NVIDIA, 32, 20) == _served(NVIDIA, 32, 1 << 20)
    assert builtin_near(NVIDIA, 32, 27) == builtin(NVIDIA, 32)
    assert builtin_near(NVIDIA, 8, 20) == builtin(NVIDIA, 8)
