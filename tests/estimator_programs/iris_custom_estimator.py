"""TensorFlow 1.x's iris custom Estimator, fed by `tf.estimator.inputs.numpy_input_fn`.

The program of TF 1.x's "Creating Custom Estimators" guide, as users wrote it with the
in-memory input functions: a model_fn of `tf.feature_column.input_layer` and
`tf.layers.dense` layers (two hidden layers of 10, three classes), Adagrad, an accuracy
metric; trained for 1000 steps, evaluated, then predicting three flowers. The iris
data (120 training and 30 test flowers) is drawn here around the species' measured
means, so no download is needed. TF 1 code on TF 2 (`import tensorflow.compat.v1 as
tf`), the estimator module imported on a line of its own: tf.estimator's on TensorFlow
2.15 as it is, `trainexec.estimator` elsewhere with that one line changed
(tests/test_estimator_engine_inputs.py). `tf.layers` is Keras 2's: on current
TensorFlow it runs with tf_keras (`TF_USE_LEGACY_KERAS=1`).

    python iris_custom_estimator.py
"""

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.compat.v1 import estimator as tf_estimator

FEATURES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]
SPECIES = ["Setosa", "Versicolor", "Virginica"]
# Each species' mean and spread of the four measurements (cm).
MEANS = [[5.0, 3.4, 1.5, 0.25], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.5, 2.0]]
SPREADS = [[0.35, 0.38, 0.17, 0.1], [0.5, 0.3, 0.47, 0.2], [0.6, 0.3, 0.55, 0.27]]


def load_data(seed=0):
    """(train_x, train_y), (test_x, test_y): dicts of feature columns, species ids."""
    rng = np.random.RandomState(seed)
    species = rng.randint(0, 3, size=150)
    rows = rng.normal(np.take(MEANS, species, axis=0), np.take(SPREADS, species, axis=0))
    columns = {name: rows[:, i].astype(np.float32) for i, name in enumerate(FEATURES)}
    train = {name: values[:120] for name, values in columns.items()}
    test = {name: values[120:] for name, values in columns.items()}
    return (train, species[:120]), (test, species[120:])


def my_model(features, labels, mode, params):
    """A DNN of dense layers with ReLU, and logits for each species."""
    net = tf.feature_column.input_layer(features, params["feature_columns"])
    for units in params["hidden_units"]:
        net = tf.layers.dense(net, units=units, activation=tf.nn.relu)
    logits = tf.layers.dense(net, params["n_classes"], activation=None)

    predicted_classes = tf.argmax(logits, 1)
    if mode == tf_estimator.ModeKeys.PREDICT:
        predictions = {"class_ids": predicted_classes[:, tf.newaxis],
                       "probabilities": tf.nn.softmax(logits), "logits": logits}
        return tf_estimator.EstimatorSpec(mode, predictions=predictions)

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=predicted_classes,
                                   name="acc_op")
    metrics = {"accuracy": accuracy}
    tf.summary.scalar("accuracy", accuracy[1])
    if mode == tf_estimator.ModeKeys.EVAL:
        return tf_estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    optimizer = tf.train.AdagradOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf_estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    (train_x, train_y), (test_x, test_y) = load_data()
    feature_columns = [tf.feature_column.numeric_column(key=key) for key in FEATURES]
    classifier = tf_estimator.Estimator(
        model_fn=my_model,
        params={"feature_columns": feature_columns, "hidden_units": [10, 10],
                "n_classes": 3})

    classifier.train(
        input_fn=tf_estimator.inputs.numpy_input_fn(
            train_x, train_y, batch_size=100, num_epochs=None, shuffle=True),
        steps=1000)

    eval_result = classifier.evaluate(
        input_fn=tf_estimator.inputs.numpy_input_fn(
            test_x, test_y, batch_size=100, num_epochs=1, shuffle=False))
    print("\nTest set accuracy: {accuracy:0.3f}\n".format(**eval_result))

    expected = ["Setosa", "Versicolor", "Virginica"]
    predict_x = {"SepalLength": np.array([5.1, 5.9, 6.9], np.float32),
                 "SepalWidth": np.array([3.3, 3.0, 3.1], np.float32),
                 "PetalLength": np.array([1.7, 4.2, 5.4], np.float32),
                 "PetalWidth": np.array([0.5, 1.5, 2.1], np.float32)}
    predictions = classifier.predict(
        input_fn=tf_estimator.inputs.numpy_input_fn(
            predict_x, batch_size=100, num_epochs=1, shuffle=False))
    for pred_dict, expec in zip(predictions, expected):
        class_id = pred_dict["class_ids"][0]
        probability = pred_dict["probabilities"][class_id]
        print('Prediction is "{}" ({:.1f}%), expected "{}"'.format(
            SPECIES[class_id], 100 * probability, expec))


if __name__ == "__main__":
    main()
