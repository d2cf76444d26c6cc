"""The demo jobs' embedded data: three Gaussian classes in 4 dimensions.

    x, y = make_data(500, seed=2)   # float32 (500, 4) points, int64 labels 0..2
"""

from __future__ import annotations

import numpy as np

__all__ = ["CLASSES", "FEATURES", "make_data"]

FEATURES = 4
CLASSES = 3


def make_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` labelled points from three well separated Gaussian blobs."""
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0.0, 0.0, 1.0], [-2.0, 1.0, 0.0, -1.0],
                        [0.0, -2.0, 1.5, 0.0]], dtype=np.float32)
    labels = rng.integers(0, CLASSES, size=n)
    points = centers[labels] + rng.normal(0.0, 0.9, size=(n, FEATURES))
    return points.astype(np.float32), labels.astype(np.int64)
