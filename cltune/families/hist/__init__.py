"""Histograms as tuned reductions (#41): bincount and uniform-bin histograms."""
