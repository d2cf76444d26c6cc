"""A canned-estimator program as a user wrote it for tf.estimator on TensorFlow 2.15:
a `DNNClassifier`, a `LinearClassifier` and a wide-and-deep
`DNNLinearCombinedClassifier` on numeric and vocabulary features.

For each KIND it trains MODEL_DIR/KIND up to MAX_STEPS (going on from the checkpoint
there), evaluates and predicts with the newest checkpoint, and writes the metrics, the
predictions and every variable of the checkpoint to OUT as JSON (one entry per kind).
tests/cluster/test_estimator_engine_canned_cross_line.py runs it as it is on TF 2.15,
and on the current line with its one import changed to trainexec.estimator.

    python canned_estimators.py KINDS MODEL_DIR MAX_STEPS OUT
        (KINDS: some of dnn, linear, wide_deep, separated by commas)
"""

import json
import sys

import numpy as np
import tensorflow as tf
from tensorflow import estimator

kinds, base_dir, max_steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
CITIES = ["lima", "oslo", "pune", "rome"]


def examples(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype("float32")
    city = rng.choice(CITIES, size=n)
    y = ((x[:, 0] - x[:, 1] + (city == "oslo")) > 0.3).astype("int64")
    return {"x": x, "city": city}, y


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(examples(320, 1)).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(examples(200, 2)).batch(50)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices(examples(8, 3)[0]).batch(4)


x = tf.feature_column.numeric_column("x", shape=(3,))
city = tf.feature_column.categorical_column_with_vocabulary_list("city", CITIES)
city_embedding = tf.feature_column.embedding_column(city, 2)


def make_model(kind, model_dir):
    if kind == "dnn":
        return estimator.DNNClassifier([8, 4], [x, city_embedding], model_dir=model_dir)
    if kind == "linear":
        return estimator.LinearClassifier([x, city], model_dir=model_dir)
    return estimator.DNNLinearCombinedClassifier(
        model_dir, linear_feature_columns=[city],
        dnn_feature_columns=[x, city_embedding], dnn_hidden_units=[6])


results = {"tensorflow": tf.__version__, "estimator": estimator.__name__}
for kind in kinds.split(","):
    model_dir = f"{base_dir}/{kind}"
    model = make_model(kind, model_dir)
    model.train(train_input_fn, max_steps=max_steps)
    metrics = model.evaluate(eval_input_fn)
    probabilities = [p["probabilities"].tolist() for p in model.predict(predict_input_fn)]
    variables = {name: np.asarray(tf.train.load_variable(model_dir, name)).tolist()
                 for name, _ in tf.train.list_variables(model_dir)}
    results[kind] = {"metrics": {key: float(value) for key, value in metrics.items()},
                     "probabilities": probabilities, "variables": variables}
with open(out, "w") as f:
    json.dump(results, f)
