"""TensorFlow's official `r1/mnist` Estimator (tensorflow/models), as users ran it on
TensorFlow 2: a convolutional network of Keras layers (two 5x5 convolutions of 32 and 64
filters with 2x2 pooling, 1024 dense units, dropout 0.4, 10 logits) over flattened 28x28
images, `tf.compat.v1`'s Adam at 1e-4, training accuracy and cross entropy logged by a
`LoggingTensorHook` every 100 steps, and a loop of `train` then `evaluate` for
`--train_epochs` epochs, `--epochs_between_evals` at a time; the distribution strategy
named by `--distribution_strategy` over `--num_gpus` devices (`mirrored` on no GPU: a
`MirroredStrategy` of the CPU, as the official flags build it) given to the Estimator as
`RunConfig(train_distribute=...)`, with the session config of its threading flags.

What differs from tensorflow/models' program: the flags are argparse's (same names and
defaults, those this program reads), the images are drawn here (a bright stroke whose
place says the class; `--train_images` / `--test_images`, 2,000 and 500 by default)
instead of downloaded; and the three TensorFlow 1 names its evaluation used, which
TensorFlow 2 removed (`tf.losses.sparse_softmax_cross_entropy`, `tf.metrics.accuracy`,
`Dataset.make_one_shot_iterator`), are their `tf.compat.v1` forms, as tf.estimator 2.15
needs them too (the original program's `evaluate` raises AttributeError there). The
estimator module is imported on a line of its own: tf.estimator's on TensorFlow 2.15 as
it is, `trainexec.estimator` with that one line changed
(tests/cluster/test_estimator_engine_r1_mnist.py). It prints each evaluation's results, as the
original does, and `--result_file` gets them as JSON.

    python r1_mnist.py --distribution_strategy mirrored --model_dir /tmp/mnist_model
"""

import argparse
import json

import numpy as np
import tensorflow as tf
from tensorflow import estimator

LEARNING_RATE = 1e-4


def draw_images(count, seed):
    """`count` flattened float images in [0, 1] and int32 labels: class k is a bright
    4-pixel-wide stroke, across the image at row 2 + 2k for even k, down it at column
    2 + 2k for odd k, over faint noise."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=count).astype(np.int32)
    images = rng.uniform(0, 0.1, size=(count, 28, 28)).astype(np.float32)
    for k in range(10):
        chosen = labels == k
        start = 2 + 2 * k
        if k % 2 == 0:
            images[chosen, start:start + 4, :] = 1.0
        else:
            images[chosen, :, start:start + 4] = 1.0
    return images.reshape(count, 28 * 28), labels


def create_model(data_format):
    if data_format == "channels_first":
        input_shape = [1, 28, 28]
    else:
        assert data_format == "channels_last"
        input_shape = [28, 28, 1]
    layers = tf.keras.layers
    max_pool = layers.MaxPooling2D((2, 2), (2, 2), padding="same", data_format=data_format)
    return tf.keras.Sequential([
        layers.Reshape(target_shape=input_shape, input_shape=(28 * 28,)),
        layers.Conv2D(32, 5, padding="same", data_format=data_format, activation=tf.nn.relu),
        max_pool,
        layers.Conv2D(64, 5, padding="same", data_format=data_format, activation=tf.nn.relu),
        max_pool,
        layers.Flatten(),
        layers.Dense(1024, activation=tf.nn.relu),
        layers.Dropout(0.4),
        layers.Dense(10),
    ])


def model_fn(features, labels, mode, params):
    model = create_model(params["data_format"])
    image = features
    if isinstance(image, dict):
        image = features["image"]

    if mode == estimator.ModeKeys.PREDICT:
        logits = model(image, training=False)
        predictions = {"classes": tf.argmax(logits, axis=1),
                       "probabilities": tf.nn.softmax(logits)}
        return estimator.EstimatorSpec(
            mode=estimator.ModeKeys.PREDICT, predictions=predictions,
            export_outputs={"classify": estimator.export.PredictOutput(predictions)})
    if mode == estimator.ModeKeys.TRAIN:
        optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=LEARNING_RATE)
        logits = model(image, training=True)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        accuracy = tf.compat.v1.metrics.accuracy(labels=labels,
                                                 predictions=tf.argmax(logits, axis=1))
        # Named for the LoggingTensorHook.
        tf.identity(LEARNING_RATE, "learning_rate")
        tf.identity(loss, "cross_entropy")
        tf.identity(accuracy[1], name="train_accuracy")
        tf.summary.scalar("train_accuracy", accuracy[1])
        return estimator.EstimatorSpec(
            mode=estimator.ModeKeys.TRAIN, loss=loss,
            train_op=optimizer.minimize(loss, tf.compat.v1.train.get_or_create_global_step()))
    if mode == estimator.ModeKeys.EVAL:
        logits = model(image, training=False)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        return estimator.EstimatorSpec(
            mode=estimator.ModeKeys.EVAL, loss=loss,
            eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(
                labels=labels, predictions=tf.argmax(logits, axis=1))})


def distribution_strategy_named(name, num_gpus):
    """The strategy the official flags build for `--distribution_strategy`."""
    if name == "off":
        return None
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("device:GPU:0" if num_gpus else "device:CPU:0")
    if name == "mirrored":
        devices = ([f"device:GPU:{i}" for i in range(num_gpus)] if num_gpus
                   else ["device:CPU:0"])
        return tf.distribute.MirroredStrategy(devices=devices)
    raise ValueError(f"Unrecognized Distribution Strategy: {name!r}")


def run_mnist(flags):
    session_config = tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=flags.inter_op_parallelism_threads,
        intra_op_parallelism_threads=flags.intra_op_parallelism_threads,
        allow_soft_placement=True)
    strategy = distribution_strategy_named(flags.distribution_strategy, flags.num_gpus)
    run_config = estimator.RunConfig(train_distribute=strategy, session_config=session_config)
    data_format = flags.data_format or ("channels_first" if tf.config.list_physical_devices(
        "GPU") else "channels_last")
    mnist_classifier = estimator.Estimator(model_fn=model_fn, model_dir=flags.model_dir,
                                           config=run_config,
                                           params={"data_format": data_format})
    train_images, train_labels = draw_images(flags.train_images, 1)
    test_images, test_labels = draw_images(flags.test_images, 2)

    def train_input_fn():
        ds = tf.data.Dataset.from_tensor_slices((train_images, train_labels))
        ds = ds.cache().shuffle(buffer_size=50000).batch(flags.batch_size)
        return ds.repeat(flags.epochs_between_evals)

    def eval_input_fn():
        ds = tf.data.Dataset.from_tensor_slices((test_images, test_labels))
        return tf.compat.v1.data.make_one_shot_iterator(ds.batch(flags.batch_size)).get_next()

    train_hooks = [estimator.LoggingTensorHook(
        tensors={"learning_rate": "learning_rate", "cross_entropy": "cross_entropy",
                 "train_accuracy": "train_accuracy"}, every_n_iter=100)]
    results = []
    for _ in range(flags.train_epochs // flags.epochs_between_evals):
        mnist_classifier.train(input_fn=train_input_fn, hooks=train_hooks)
        eval_results = mnist_classifier.evaluate(input_fn=eval_input_fn)
        print("\nEvaluation results:\n\t%s\n" % eval_results)
        results.append({k: float(v) for k, v in eval_results.items()})
        if flags.stop_threshold is not None and eval_results["accuracy"] >= flags.stop_threshold:
            break
    if flags.result_file:
        with open(flags.result_file, "w") as f:
            json.dump({"evaluations": results, "strategy": type(strategy).__name__,
                       "estimator": estimator.__name__, "tensorflow": tf.__version__}, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default="/tmp/mnist_model")
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--train_epochs", type=int, default=40)
    parser.add_argument("--epochs_between_evals", type=int, default=1)
    parser.add_argument("--stop_threshold", type=float, default=None)
    parser.add_argument("--distribution_strategy", default="mirrored")
    parser.add_argument("--num_gpus", type=int, default=0)
    parser.add_argument("--inter_op_parallelism_threads", type=int, default=0)
    parser.add_argument("--intra_op_parallelism_threads", type=int, default=0)
    parser.add_argument("--data_format", default=None)
    parser.add_argument("--train_images", type=int, default=2000)
    parser.add_argument("--test_images", type=int, default=500)
    parser.add_argument("--result_file", default=None)
    run_mnist(parser.parse_args())


if __name__ == "__main__":
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    main()
