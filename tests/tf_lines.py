"""Which TensorFlow line the tests run on, for the `estimator` and `keras` markers.

The check is the tests' own (not `trainexec.estimator_trainer.availability.tf_estimator`), so that
tests/test_estimator_trainer_availability.py can hold the product's check against it.
"""

from __future__ import annotations

import functools
import os

ESTIMATOR_FIX = ('pip install "trainexec[estimator]" '
                 '(TensorFlow 2.15 with tensorflow-estimator)')


def env_flag(name: str) -> bool:
    """True when environment variable `name` is 1 (or true / yes)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


@functools.lru_cache(maxsize=None)
def estimator_missing() -> str | None:
    """None where tf.estimator works; otherwise what is wrong, e.g.
    "TensorFlow 2.21.0 has no tf.estimator"."""
    import tensorflow as tf
    try:
        tf.estimator.EstimatorSpec  # on 2.15 this imports tensorflow_estimator
    except AttributeError:  # 2.16 and later
        return f"TensorFlow {tf.__version__} has no tf.estimator"
    except ImportError as err:  # 2.15 without tensorflow-estimator
        return (f"TensorFlow {tf.__version__} cannot load tf.estimator "
                f"({type(err).__name__}: {err})")
    return None


def has_estimator() -> bool:
    return estimator_missing() is None
