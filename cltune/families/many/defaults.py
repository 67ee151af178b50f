"""The `builtin` level of the many family: a config per size class derived from the device's
limits, for devices (or classes) never tuned.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(type="gpu", max_wg=1024, local_mem=49152, compute_units=132)
    >>> builtin_config(gpu, (6, 12)).short(), builtin_config(gpu, (5, 18)).short()
    ('wg256 v4 i2 s4 K32', 'wg256 v4 i2 s2 K32')
"""

from __future__ import annotations

from typing import Any

from cltune.core.pow2 import pow2_at_least, pow2_at_most
from cltune.families.many.config import ManyConfig

#: classes of arrays this long (mean length) or shorter take a group per array: a finishing
#: launch (a second enqueue, the host cost that dominates small reductions) costs more than
#: the groups it would add to arrays that one group reduces in a few blocks
ONE_GROUP = 1 << 13


def builtin_config(info: Any, key: tuple[int, int], element_bytes: int = 8) -> ManyConfig:
    """GPUs: groups of 256 with 4-wide loads, two in flight; CPUs: a work-item a group, 16-wide
    loads, four in flight (64 arrays of 2^16 float32 summed in 0.42 ms where groups of 8 with
    8-wide loads took 1.03 on Debian's PoCL, norms 0.29 where 0.47 on Intel's runtime; 8 of
    2^20 0.9-1.0 where 3.3 / 0.67-0.70 where 1.13; 64 of 4096 as fast or faster:
    scripts/experiments/many_cpu_sweep.py, 2026-12-06). A group's chunk (steps) is sized so
    that the call makes about 8 groups per compute unit, and no fewer groups than arrays;
    arrays of a class up to ONE_GROUP long get a chunk of twice the class's length (one group
    for each array up to that long: no finishing launch). The slots are the fewest of 8, 16,
    32 that hold the call's arrays (each slot is an argument to set)."""
    cap = info.vector_cap(element_bytes) if hasattr(info, "vector_cap") else 16
    cpu = info.type == "cpu"
    if cpu:
        wg, vec, items = 1, min(16, cap), 4
    else:
        wg, vec, items = min(pow2_at_most(info.max_wg), 256), min(4, cap), 2
    while wg > 1 and wg * 8 + 64 > info.local_mem:
        wg //= 2
    k, n = 1 << key[0], 1 << key[1]
    want = max(1, -(-8 * max(1, info.compute_units) // k))  # groups per array
    block = wg * vec * items
    steps = pow2_at_most(max(1, n // (block * want)))
    if n <= ONE_GROUP:
        steps = max(steps, pow2_at_least(2 * n // block))
    slots = 8 if k <= 8 else 16 if k <= 16 else 32
    return ManyConfig(wg=wg, vec=vec, items=items, steps=min(steps, 64), slots=slots)


def safest_config(info: Any) -> ManyConfig:
    """Scalar loads, small groups: when even the builtin config does not build."""
    return ManyConfig(wg=pow2_at_most(min(32, max(1, info.max_wg))), vec=1, items=1, steps=4,
                      slots=8)
