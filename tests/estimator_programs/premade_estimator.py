"""TensorFlow's "Premade Estimators" tutorial program, as users wrote it for
tf.estimator on TensorFlow 2: iris flowers in a pandas DataFrame, an `input_fn` over
`tf.data`, one `numeric_column` per measurement, a `DNNClassifier` of two hidden layers
(30 and 10 units) for three species with its default optimizer, trained, evaluated,
then predicting three flowers. The flowers (120 to train, 30 to test) are drawn here
around the species' measured means, so nothing is downloaded, and the graph is seeded
(`RunConfig(tf_random_seed=7)`): unseeded, an unlucky start once left the test accuracy
at 0.167 after the 2000 steps. The estimator module is
imported on a line of its own: tf.estimator's on TensorFlow 2.15 as it is,
`trainexec.estimator` on any line with that one line changed
(tests/test_estimator_engine_canned_tutorials.py).

    python premade_estimator.py
"""

import numpy as np
import pandas as pd
import tensorflow as tf
from tensorflow import estimator

CSV_COLUMN_NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth", "Species"]
SPECIES = ["Setosa", "Versicolor", "Virginica"]
MEANS = [[5.0, 3.4, 1.5, 0.25], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.5, 2.0]]
SPREADS = [[0.35, 0.38, 0.17, 0.1], [0.5, 0.3, 0.47, 0.2], [0.6, 0.3, 0.55, 0.27]]


def load_frames(seed=0):
    rng = np.random.RandomState(seed)
    species = rng.randint(0, 3, size=150)
    rows = rng.normal(np.take(MEANS, species, axis=0), np.take(SPREADS, species, axis=0))
    frame = pd.DataFrame(rows.astype(np.float32), columns=CSV_COLUMN_NAMES[:4])
    frame["Species"] = species
    return frame[:120].reset_index(drop=True), frame[120:].reset_index(drop=True)


def input_fn(features, labels, training=True, batch_size=256):
    """An input function for training or evaluating."""
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    if training:
        dataset = dataset.shuffle(1000).repeat()
    return dataset.batch(batch_size)


def predict_input_fn(features, batch_size=256):
    """An input function for prediction: features only."""
    return tf.data.Dataset.from_tensor_slices(dict(features)).batch(batch_size)


train, test = load_frames()
train_y = train.pop("Species")
test_y = test.pop("Species")

my_feature_columns = []
for key in train.keys():
    my_feature_columns.append(tf.feature_column.numeric_column(key=key))

classifier = estimator.DNNClassifier(
    feature_columns=my_feature_columns, hidden_units=[30, 10], n_classes=3,
    config=estimator.RunConfig(tf_random_seed=7))
classifier.train(input_fn=lambda: input_fn(train, train_y, training=True), steps=2000)

eval_result = classifier.evaluate(
    input_fn=lambda: input_fn(test, test_y, training=False))
print("\nTest set accuracy: {accuracy:0.3f}\n".format(**eval_result))

expected = ["Setosa", "Versicolor", "Virginica"]
predict_x = {"SepalLength": [5.1, 5.9, 6.9], "SepalWidth": [3.3, 3.0, 3.1],
             "PetalLength": [1.7, 4.2, 5.4], "PetalWidth": [0.5, 1.5, 2.1]}
predictions = classifier.predict(input_fn=lambda: predict_input_fn(predict_x))
for pred_dict, expec in zip(predictions, expected):
    class_id = pred_dict["class_ids"][0]
    probability = pred_dict["probabilities"][class_id]
    print('Prediction is "{}" ({:.1f}%), expected "{}"'.format(
        SPECIES[class_id], 100 * probability, expec))
