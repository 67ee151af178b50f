"""The `builtin` level of the fallback chain: a safe config derived from the queried limits."""

from __future__ import annotations

from .config import Config
from .devices import DeviceInfo


def builtin_config(info: DeviceInfo) -> Config:
    """CPUs: each work-item streams a contiguous chunk with wide vector loads (measured best on
    PoCL); GPUs and others: a local-memory tree with a few loads per work-item in flight."""
    if info.type == "cpu":
        return Config(strategy="serial", wg=_pow2_at_most(8, info.max_wg), tile=0, items=8,
                      vec=16, groups_per_cu=8, passes=2, acc="native")
    wg = _pow2_at_most(256, info.max_wg)
    while wg > 1 and wg * 8 + 64 > info.local_mem:
        wg //= 2
    return Config(strategy="local_tree", wg=wg, tile=wg, items=4, vec=4, groups_per_cu=8,
                  passes=2, acc="native")


def safest_config(info: DeviceInfo) -> Config:
    """The last resort when even the builtin config fails to build: scalar loads, small groups."""
    wg = _pow2_at_most(32, info.max_wg)
    return Config(strategy="local_tree", wg=wg, tile=wg, items=1, vec=1, groups_per_cu=4,
                  passes=2, acc="native")


def _pow2_at_most(want: int, limit: int) -> int:
    v = 1
    while v * 2 <= min(want, max(1, limit)):
        v *= 2
    return v
