"""Scans (prefix sums, products, running min/max) as a kernel family: see family.py."""
