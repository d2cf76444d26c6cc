"""TensorFlow's "Multi-worker training with Estimator" tutorial program, as users wrote it
for tf.estimator on TensorFlow 2: MNIST-shaped images (28x28, one channel, ten classes)
scaled to [0, 1], cached, shuffled and batched 64 per worker, the training set split
between the workers with `Dataset.shard` by the `input_context` the strategy passes; a
`model_fn` of Keras layers (a 3x3 convolution of 32 filters, max pooling, 64 dense
units, 10 logits), `tf.compat.v1`'s gradient descent at 1e-4, a loss summed over the
batch and divided by the per-worker batch size; `MultiWorkerMirroredStrategy` as
`RunConfig(train_distribute=...)`; `train_and_evaluate` with no `max_steps` (one pass
over each worker's shard). What differs from the tutorial: the images are drawn here (a
bright stroke whose place says the class: 60,000 to train, 10,000 to test, as many as
MNIST has)
instead of downloaded with tensorflow_datasets, the model_dir is the first argument,
and the estimator module is imported on a line of its own: tf.estimator's on TensorFlow
2.15 as it is, `trainexec.estimator` on any line with that one line changed
(tests/cluster/test_estimator_engine_tutorial_multi_worker.py).

Run in every task of a TF_CONFIG cluster:

    trainexec launch --workers 2 --no-chief -- python multi_worker_estimator.py /tmp/mw
"""

import sys

import numpy as np
import tensorflow as tf
from tensorflow import estimator

BUFFER_SIZE = 10000
BATCH_SIZE = 64
LEARNING_RATE = 1e-4
TRAIN_IMAGES, TEST_IMAGES = 60000, 10000


def draw_images(count, seed):
    """`count` uint8 images and their labels: class k is a bright 4-pixel-wide stroke on
    black, across the image at row 2 + 2k for even k, down it at column 2 + 2k for odd k."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=count).astype(np.int64)
    images = np.zeros((count, 28, 28, 1), np.uint8)
    for k in range(10):
        chosen = labels == k
        start = 2 + 2 * k
        if k % 2 == 0:
            images[chosen, start:start + 4, :, 0] = 255
        else:
            images[chosen, :, start:start + 4, 0] = 255
    return images, labels


def input_fn(mode, input_context=None):
    images, labels = (draw_images(TRAIN_IMAGES, 1) if mode == estimator.ModeKeys.TRAIN
                      else draw_images(TEST_IMAGES, 2))
    mnist_dataset = tf.data.Dataset.from_tensor_slices((images, labels))

    def scale(image, label):
        image = tf.cast(image, tf.float32)
        image /= 255
        return image, label

    if input_context:
        mnist_dataset = mnist_dataset.shard(input_context.num_input_pipelines,
                                            input_context.input_pipeline_id)
    return mnist_dataset.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)


def model_fn(features, labels, mode):
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    logits = model(features, training=False)

    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(labels=labels, predictions={"logits": logits})

    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=LEARNING_RATE)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(labels, logits)
    loss = tf.reduce_sum(loss) * (1. / BATCH_SIZE)
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss)

    return estimator.EstimatorSpec(
        mode=mode, loss=loss,
        train_op=optimizer.minimize(loss, tf.compat.v1.train.get_or_create_global_step()))


strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()

config = estimator.RunConfig(train_distribute=strategy)

classifier = estimator.Estimator(model_fn=model_fn, model_dir=sys.argv[1], config=config)
estimator.train_and_evaluate(
    classifier,
    train_spec=estimator.TrainSpec(input_fn=input_fn),
    eval_spec=estimator.EvalSpec(input_fn=input_fn),
)
