"""A tiny regression problem shared by the sidecar tests and their child programs.

`build_model()` is the architecture both sides use; `set_quality(model, q)` puts
the model a fraction `q` of the way to the true weights (1.0 is perfect), so
tests can write checkpoints of known quality without training.
"""

import numpy as np
import tensorflow as tf

# Keras 3 (tf.keras on TF 2.16+) or Keras 2 (TF 2.15, or tf_keras with
# TF_USE_LEGACY_KERAS=1).
KERAS_3 = callable(getattr(tf.keras, "version", None)) and tf.keras.version().startswith("3")
FEATURES = 4
TRUE_KERNEL = np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
TRUE_BIAS = np.array([0.25], dtype="float32")


def build_model(compiled=True):
    model = tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                                 tf.keras.layers.Dense(1)])
    if compiled:
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse",
                      metrics=["mae"])
    return model


def arrays(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    return x, x @ TRUE_KERNEL + TRUE_BIAS


def dataset(n=256, batch=64, seed=0):
    return tf.data.Dataset.from_tensor_slices(arrays(n, seed)).batch(batch)


def set_quality(model, quality):
    model.layers[-1].set_weights([TRUE_KERNEL * quality, TRUE_BIAS * quality])


def serve(saved_model_dir, x):
    """Predictions of an exported SavedModel: Keras 3 exports serve through
    `serve`, Keras 2 SavedModels are called directly."""
    loaded = tf.saved_model.load(saved_model_dir)
    return (loaded.serve(x) if hasattr(loaded, "serve") else loaded(x)).numpy()


TRAINER_METRICS = "trainer_metrics.json"


def write_metrics(model, directory):
    """The trainer's own evaluation of its final model, for tests to compare."""
    import json
    import os

    logs = model.evaluate(dataset(), verbose=0, return_dict=True)
    with open(os.path.join(directory, TRAINER_METRICS), "w") as f:
        json.dump({k: float(v) for k, v in logs.items()}, f)
