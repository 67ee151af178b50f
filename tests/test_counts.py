"""Benchmark sizes: any element count (`parse_counts`), not only the tuner's power-of-two
buckets (`parse_sizes`), with one-line errors for what is not a size."""

from __future__ import annotations

import pytest

from cltune.core.buckets import MAX_COUNT, count_label, parse_counts, parse_sizes


@pytest.mark.parametrize("text,want", [
    ("1000003", (1000003,)),
    ("2^20", (1 << 20,)),
    ("2^20+7, 2^12-1", (4095, (1 << 20) + 7)),
    ("1M,4k,1", (1, 4096, 1 << 20)),
    ("3e6,1.5e3", (1500, 3_000_000)),
    ("2^40", (MAX_COUNT,)),
    ("17,17,2^4+1", (17,)),  # each size once, in order
])
def test_counts(text, want):
    assert parse_counts(text) == want


@pytest.mark.parametrize("text,msg", [
    ("", "not a size"), ("x", "not a size"), ("-3", "not a size"), ("2^20+", "not a size"),
    ("0", "outside"), ("2^12-4096", "outside"), ("2^41", "outside"), ("2^40+1", "outside"),
    ("1e99", "outside"), ("1.25e1", "not a whole number"), ("1,,2", "not a size"),
])
def test_bad_counts(text, msg):
    with pytest.raises(ValueError, match=msg):
        parse_counts(text)


def test_labels():
    assert [count_label(n) for n in (1, 2, 1 << 20, 1000003, 3)] == \
        ["2^0", "2^1", "2^20", "1000003", "3"]


def test_tuning_buckets_stay_powers_of_two():
    assert parse_sizes("2^12,1M") == (12, 20)
    with pytest.raises(ValueError, match="power of two"):
        parse_sizes("1000003")
