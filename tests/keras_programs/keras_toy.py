"""A tiny regression problem for the KerasTrainer tests and their job program.

Two models of the same weights: `dense` (a compiled Sequential) and `custom`, a
subclassed model that overrides `train_step` and counts the steps it ran in a
non-trainable weight, `custom_steps`, saved with the model. Keras 3 (tf.keras on
TF 2.16+) and Keras 2 (TF 2.15, or tf_keras with TF_USE_LEGACY_KERAS=1) alike.
"""

import numpy as np
import tensorflow as tf

KERAS_3 = callable(getattr(tf.keras, "version", None)) and tf.keras.version().startswith("3")
FEATURES = 4
TRUE_KERNEL = np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
TRUE_BIAS = np.array([0.25], dtype="float32")
GLOBAL_BATCH = 48  # divisible by 1, 2 and 3 replicas


def arrays(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    return x, x @ TRUE_KERNEL + TRUE_BIAS


def train_input_fn(input_context):
    """Per-replica batches of this input pipeline's shard, repeated."""
    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    data = tf.data.Dataset.from_tensor_slices(arrays(1024, seed=1))
    data = data.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return data.repeat().batch(batch)


def train_input_fn_global():
    """Global batches; `fit` shards and splits them."""
    return tf.data.Dataset.from_tensor_slices(arrays(1024, seed=1)).repeat().batch(GLOBAL_BATCH)


def eval_dataset():
    return tf.data.Dataset.from_tensor_slices(arrays(256, seed=0)).batch(64)


def _compile(model):
    model.compile(optimizer=tf.keras.optimizers.SGD(0.005), loss="mse", metrics=["mae"])
    return model


def build_dense():
    return _compile(tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                                         tf.keras.layers.Dense(1)]))


class CustomStepModel(tf.keras.Model):
    """Overrides `train_step`: its own loss and update, and a step counter."""

    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)
        aggregation = ("only_first_replica" if KERAS_3
                       else tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self.custom_steps = self.add_weight(name="custom_steps", shape=(),
                                            initializer="zeros", trainable=False,
                                            aggregation=aggregation)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = tf.reduce_mean(tf.square(y_pred - y))
        grads = tape.gradient(loss, self.dense.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.dense.trainable_variables))
        self.custom_steps.assign_add(1.0)
        return {**self.compute_metrics(x, y, y_pred, None), "loss": loss}


def build_custom():
    model = CustomStepModel()
    model(tf.zeros((1, FEATURES)))  # creates the weights
    return _compile(model)


BUILDERS = {"dense": build_dense, "custom": build_custom}


def restore(build, checkpoint_path):
    """A fresh model with the weights of a KerasTrainer checkpoint."""
    model = build()
    tf.train.Checkpoint(model=model).read(checkpoint_path).expect_partial()
    return model


def evaluate(model):
    return {k: float(v) for k, v in
            model.evaluate(eval_dataset(), verbose=0, return_dict=True).items()}


def evaluate_checkpoint(model_name, checkpoint_path):
    """The metrics of a KerasTrainer checkpoint of BUILDERS[model_name], read into a fresh
    model: what the job's own evaluation of that checkpoint must match."""
    return evaluate(restore(BUILDERS[model_name], checkpoint_path))
