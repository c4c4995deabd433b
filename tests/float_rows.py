"""Rows of floats that make a batched NumPy reduction differ from the row-by-row one if it can: signed zeros, huge
and tiny magnitudes, integers times 0.1, constant rows, and long rows (NumPy's pairwise summation). Used by the tests
that hold a batched mean or normalization to the row-by-row floats, bit for bit."""

from __future__ import annotations

import numpy as np


def hard_float_rows(seed: int, count: int, min_size: int) -> list[list[float]]:
    """``count`` rows: three in four short (``min_size`` to 11 values), one in four long (8 to 299)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(count):
        size = int(rng.integers(min_size, 12)) if n % 4 else int(rng.integers(8, 300))
        kind = n % 5
        if kind == 0:
            row = rng.normal(size=size) * 10.0 ** int(rng.integers(-6, 7))
        elif kind == 1:
            row = rng.integers(-2, 3, size=size) * 0.1
        elif kind == 2:
            row = rng.choice([0.0, -0.0, 1.0, -1.0, 0.5, 1 / 3, 1e-17], size=size)
        elif kind == 3:
            row = rng.random(size) * 1e9 + rng.random(size)
        else:
            row = np.full(size, float(rng.normal()))
        rows.append(row.tolist())
    return rows
