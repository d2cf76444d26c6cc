"""Reading what an input_fn of `trainexec.estimator.inputs` gives, for their tests."""

import tensorflow as tf


def read_all(input_fn, monitored=False):
    """Every batch the input_fn gives before OutOfRangeError, read by a plain session
    (no initializer run, as tf.estimator's queues needed none) or a MonitoredSession."""
    with tf.Graph().as_default():
        tensors = input_fn()
        got = []
        if monitored:
            with tf.compat.v1.train.MonitoredSession() as session:
                while not session.should_stop():
                    got.append(session.run(tensors))
            return got
        with tf.compat.v1.Session() as session:
            try:
                while True:
                    got.append(session.run(tensors))
            except tf.errors.OutOfRangeError:
                return got


def columns(batch):
    """A batch as plain lists: {key: list} for a dict, a list for a tensor."""
    if isinstance(batch, dict):
        return {key: value.tolist() for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(columns(part) for part in batch)
    return batch.tolist()
