"""TensorFlow's linear-model tutorial program ("Build a linear model with Estimators"),
as users wrote it for tf.estimator on TensorFlow 2: Titanic passengers in pandas
DataFrames, vocabulary columns for the categorical fields and numeric ones for age and
fare, a `LinearClassifier` trained, evaluated, then again with a crossed column
(age x sex), and the predicted survival probabilities. The passengers are drawn here
(survival depending on sex, class and age), so nothing is downloaded. The estimator
module is imported on a line of its own: tf.estimator's on TensorFlow 2.15 as it is,
`trainexec.estimator` on any line with that one line changed
(tests/test_estimator_engine_canned_tutorials.py).

    python linear_model_tutorial.py
"""

import numpy as np
import pandas as pd
import tensorflow as tf
from tensorflow import estimator


def passengers(n, seed):
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame({
        "sex": rng.choice(["male", "female"], n),
        "n_siblings_spouses": rng.randint(0, 4, n),
        "parch": rng.randint(0, 3, n),
        "class": rng.choice(["First", "Second", "Third"], n, p=[0.25, 0.25, 0.5]),
        "deck": rng.choice(["A", "B", "C", "unknown"], n),
        "embark_town": rng.choice(["Southampton", "Cherbourg", "Queenstown"], n),
        "alone": rng.choice(["y", "n"], n),
        "age": rng.uniform(1, 70, n).astype(np.float32),
        "fare": rng.gamma(2.0, 15.0, n).astype(np.float32)})
    odds = (1.5 * (frame["sex"] == "female") + 0.8 * (frame["class"] == "First")
            - 0.02 * frame["age"] - 0.3)
    survived = (rng.uniform(size=n) < 1 / (1 + np.exp(-odds))).astype(np.int64)
    return frame, survived


dftrain, y_train = passengers(627, 1)
dfeval, y_eval = passengers(264, 2)

CATEGORICAL_COLUMNS = ["sex", "n_siblings_spouses", "parch", "class", "deck",
                       "embark_town", "alone"]
NUMERIC_COLUMNS = ["age", "fare"]

feature_columns = []
for feature_name in CATEGORICAL_COLUMNS:
    vocabulary = dftrain[feature_name].unique()
    feature_columns.append(tf.feature_column.categorical_column_with_vocabulary_list(
        feature_name, vocabulary))
for feature_name in NUMERIC_COLUMNS:
    feature_columns.append(tf.feature_column.numeric_column(feature_name,
                                                            dtype=tf.float32))


def make_input_fn(data_df, label_df, num_epochs=10, shuffle=True, batch_size=32):
    def input_function():
        ds = tf.data.Dataset.from_tensor_slices((dict(data_df), label_df))
        if shuffle:
            ds = ds.shuffle(1000)
        return ds.batch(batch_size).repeat(num_epochs)
    return input_function


train_input_fn = make_input_fn(dftrain, y_train)
eval_input_fn = make_input_fn(dfeval, y_eval, num_epochs=1, shuffle=False)

linear_est = estimator.LinearClassifier(feature_columns=feature_columns)
linear_est.train(train_input_fn)
result = linear_est.evaluate(eval_input_fn)
print("linear:", {key: float(value) for key, value in result.items()})

age_x_gender = tf.feature_column.crossed_column(["age", "sex"], hash_bucket_size=100)
derived_feature_columns = [age_x_gender]
linear_est = estimator.LinearClassifier(
    feature_columns=feature_columns + derived_feature_columns)
linear_est.train(train_input_fn)
result = linear_est.evaluate(eval_input_fn)
print("crossed:", {key: float(value) for key, value in result.items()})

pred_dicts = list(linear_est.predict(eval_input_fn))
probs = [pred["probabilities"][1] for pred in pred_dicts]
print("predicted:", len(probs), "mean", float(np.mean(probs)))
