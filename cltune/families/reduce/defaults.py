"""The `builtin` level of the fallback chain: a safe config derived from the queried limits."""

from __future__ import annotations

from cltune.core.ops import OpSpec
from cltune.core.pow2 import pow2_at_most
from cltune.device.info import DeviceInfo
from cltune.families.reduce.config import Config
from cltune.families.reduce.kernel import source_hash
from cltune.families.reduce.space import ACC_BYTES

#: CPUs: an untuned call of at most this many elements is served the builtin config in one
#: launch (its last group finishes, an atomic ticket) where the accumulator's atomics exist:
#: 4096 float32 sums 1.4-1.8x faster a call than two launches on Debian's PoCL and Intel's
#: runtime; from 8192 up mixed (PoCL 0.9-1.4x, Intel's 0.78-0.90x), 2^20-2^24 0.92-1.12x
#: (scripts/experiments/cpu_passes_ab.py, 2-core AMD EPYC, 2026-12-05)
CPU_ONE_PASS_MAX = 1 << 12


def builtin_config(info: DeviceInfo, spec: OpSpec | None = None, n: int | None = None) -> Config:
    """CPUs: each work-item streams a contiguous chunk with wide vector loads (measured best on
    PoCL); GPUs and others: a local-memory tree with a few loads per work-item in flight,
    finished in the same launch where the device's atomics allow (`_atomic_passes`).

    A CPU runtime with subgroups (Intel's; PoCL >= 4) compiles work-items into SIMD subgroups
    of up to 16 lanes, and the space offers only work-groups that are multiples of the real
    subgroup size (space.make_space): there the groups are 16 wide, so that the builtin config
    is a point of the space and competes in every tuning run (tuner._finish).

    On a device whose health restricts vector widths (`DeviceInfo.max_vector_bytes`) the
    vectors step down to that width for `spec` (8-byte lanes assumed without one).

    `n`: the call's size, where it decides (CPUs finish calls of at most CPU_ONE_PASS_MAX
    elements in one launch)."""
    lane = spec.vector_element_bytes if spec is not None else 8
    if info.type == "cpu":
        wg = pow2_at_most(min(16 if info.subgroups else 8, max(1, info.max_wg)))
        one = n is not None and n <= CPU_ONE_PASS_MAX and _atomic_passes(info, spec) == 1
        return Config(strategy="serial", wg=wg, tile=0, items=8, vec=info.vector_cap(lane, 16),
                      groups_per_cu=8 * 8 // wg if wg >= 8 else 8, passes=1 if one else 2,
                      acc="native")
    wg = pow2_at_most(min(256, max(1, info.max_wg)))
    while wg > 1 and wg * 8 + 64 > info.local_mem:
        wg //= 2
    return Config(strategy="local_tree", wg=wg, tile=wg, items=4, vec=info.vector_cap(lane, 4),
                  groups_per_cu=8, passes=_atomic_passes(info, spec), acc="native")


def _atomic_passes(info: DeviceInfo, spec: OpSpec | None) -> int:
    """1 where the partials' atomics exist (the last group finishes, atomic ticket), else 2.
    GPUs finish in one launch wherever they can (CPUs only small calls, CPU_ONE_PASS_MAX): a
    second launch costs more than the last group's read of ~8 partials a compute unit (#39
    item 2, H100 untuned: `r(x)` of 4096 float32 18.5 us a call in two launches where
    one-launch calls take 12.6; scripts/call_floor.py)."""
    if info.int64_atomics:
        return 1
    if spec is None:
        return 2
    wide = spec.accumulation(info.fp64, "native") == "wide"
    return 1 if ACC_BYTES[spec.acc_cl_type(wide)] == 4 else 2


def safest_config(info: DeviceInfo) -> Config:
    """The last resort when even the builtin config fails to build: scalar loads, small groups."""
    wg = pow2_at_most(min(32, max(1, info.max_wg)))
    return Config(strategy="local_tree", wg=wg, tile=wg, items=1, vec=1, groups_per_cu=4,
                  passes=2, acc="native")



def untuned(info: DeviceInfo, spec: OpSpec) -> list[tuple]:
    """What the runtime serves untuned for `spec`, as the health check vets it: (variant,
    config chain, size class, source hash, lane bytes)."""
    variant, small = f"{spec.op}/{spec.dtype}", builtin_config(info, spec, 1 << 12)
    large = builtin_config(info, spec)
    if small == large:
        return [(variant, [large, safest_config(info)], 12, source_hash(),
                 spec.vector_element_bytes)]
    return [(variant, [small, large, safest_config(info)], 12, source_hash(),
             spec.vector_element_bytes),
            (variant, [large, safest_config(info)], 20, source_hash(),
             spec.vector_element_bytes)]
