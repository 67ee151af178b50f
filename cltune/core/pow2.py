"""Powers of two, as every family's configs and heuristics use them.

    >>> is_pow2(64), pow2_at_most(100), pow2_at_least(100)
    (True, 64, 128)
"""

from __future__ import annotations


def is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def pow2_at_most(v: int) -> int:
    """The largest power of two <= v (1 for v < 2)."""
    return 1 << (max(1, int(v)).bit_length() - 1)


def pow2_at_least(v: int) -> int:
    """The smallest power of two >= v (1 for v < 2)."""
    return 1 << (max(1, int(v)) - 1).bit_length()
