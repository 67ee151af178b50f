"""Size buckets: inputs are tuned per power-of-two bucket; n is served by the nearest one."""

from __future__ import annotations

import math
import re

DEFAULT_BUCKETS = (12, 16, 20, 24)
MIN_BUCKET, MAX_BUCKET = 0, 40


def bucket_of(n: int) -> int:
    """log2 of n, rounded to the nearest integer (n >= 1)."""
    return max(0, round(math.log2(max(1, n))))


def nearest(n: int, tuned: list[int] | tuple[int, ...]) -> int | None:
    """The tuned bucket nearest to n on a log scale (ties go to the larger bucket)."""
    if not tuned:
        return None
    b = math.log2(max(1, n))
    return min(tuned, key=lambda t: (abs(t - b), -t))


_SIZE = re.compile(r"^\s*(?:2\^(\d+)|(\d+)\s*([kKmMgG]?))\s*$")


def parse_sizes(text: str) -> tuple[int, ...]:
    """'2^12,2^20' or '4096,1M' -> buckets (log2). Sizes must be powers of two."""
    out = []
    for part in text.split(","):
        m = _SIZE.match(part)
        if not m:
            raise ValueError(f"not a size: {part.strip()!r} (use 2^20, 1048576 or 1M)")
        if m.group(1) is not None:
            b = int(m.group(1))
        else:
            n = int(m.group(2)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(3).lower()]
            if n <= 0 or n & (n - 1):
                raise ValueError(f"size {part.strip()} is not a power of two")
            b = n.bit_length() - 1
        if not MIN_BUCKET <= b <= MAX_BUCKET:
            raise ValueError(f"size 2^{b} outside 2^{MIN_BUCKET}..2^{MAX_BUCKET}")
        out.append(b)
    return tuple(sorted(set(out)))


#: an element count for benchmarks: 2^k, 2^k+c, 2^k-c, 1000003, 4k/1M/1G (binary), 3e6
_COUNT = re.compile(r"^\s*(?:2\^(\d{1,2})\s*([+-]\s*\d+)?|(\d+)\s*([kKmMgG]?)"
                    r"|(\d+(?:\.\d+)?)[eE](\d{1,2}))\s*$")
#: the largest count a benchmark takes (2^40 elements: more than any device holds)
MAX_COUNT = 1 << 40


def parse_counts(text: str) -> tuple[int, ...]:
    """'2^20,1000003,2^24+7,3e6' -> element counts (sorted, each once): any size from 1 to
    2^40, not only powers of two (benchmarks of the sizes applications have)."""
    out = set()
    for part in text.split(","):
        m = _COUNT.match(part)
        if not m:
            raise ValueError(f"not a size: {part.strip()!r:.40} (use 2^20, 2^20+7, 1000003, "
                             "1M or 3e6)")
        if m.group(1) is not None:
            n = (1 << int(m.group(1))) + int((m.group(2) or "0").replace(" ", ""))
        elif m.group(3) is not None:
            n = int(m.group(3)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(4).lower()]
        else:
            v = float(m.group(5)) * 10 ** int(m.group(6))
            if v != int(v):
                raise ValueError(f"size {part.strip()!r:.40} is not a whole number")
            n = int(v)
        if not 1 <= n <= MAX_COUNT:
            raise ValueError(f"size {part.strip()!r:.40} outside 1..2^40")
        out.add(n)
    return tuple(sorted(out))


def count_label(n: int) -> str:
    """'2^20' for a power of two, else the number itself (1000003)."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


#: a 1-D size class is `2^k` (k = log2 n)
_CLASS = re.compile(r"^2\^(\d{1,2})$")


def size_class(bucket: int) -> str:
    return f"2^{bucket}"


def class_bucket(text: str) -> int:
    """k of a size class `2^k`; ValueError when the text is not one."""
    m = _CLASS.match(text)
    if not m or not MIN_BUCKET <= int(m.group(1)) <= MAX_BUCKET:
        raise ValueError(f"size class {text!r:.60} is not 2^k with k in "
                         f"{MIN_BUCKET}..{MAX_BUCKET}")
    return int(m.group(1))
