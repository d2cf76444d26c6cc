"""`Estimator.predict`: the `model_fn` in PREDICT mode over an input, from a checkpoint.

Yields one dict (or value) per example with `yield_single_examples` (every prediction
must share the batch dimension), else one per batch; `predict_keys` keeps some of a
dict's predictions. Without any checkpoint the variables are initialized, with a
warning, as tf.estimator did.

Example:
    ```python
    for prediction in run_prediction(estimator, input_fn, ["class"], [], None, True):
        print(prediction["class"])
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, Sequence

import tensorflow as tf

from trainexec.estimator_engine.graph import build_graph, saver_for
from trainexec.estimator_engine.model_spec import ModeKeys

__all__ = ["run_prediction"]

logger = logging.getLogger(__name__)


def _selected(predictions: Any, predict_keys: Sequence[str] | None) -> Any:
    if predict_keys is None:
        return predictions
    if isinstance(predict_keys, str):
        predict_keys = [predict_keys]
    if not isinstance(predictions, dict):
        raise ValueError("Estimator.predict: predict_keys are given, but the model_fn's "
                         "predictions are one Tensor, not a dict: drop predict_keys")
    missing = [key for key in predict_keys if key not in predictions]
    if missing:
        raise ValueError(f"Estimator.predict: predict_keys {missing} are not among the "
                         f"predictions ({', '.join(sorted(predictions))})")
    return {key: predictions[key] for key in predict_keys}


def _batch_size(predictions: Any) -> int:
    values = predictions.values() if isinstance(predictions, dict) else [predictions]
    sizes = set()
    for value in values:
        if getattr(value, "ndim", 0) == 0:
            raise ValueError("Estimator.predict with yield_single_examples: every "
                             "prediction needs a batch dimension, but one is a scalar; "
                             "pass yield_single_examples=False")
        sizes.add(value.shape[0])
    if len(sizes) != 1:
        raise ValueError("Estimator.predict with yield_single_examples: the predictions' "
                         f"batch sizes differ ({sorted(sizes)}); pass "
                         "yield_single_examples=False")
    return sizes.pop()


def run_prediction(estimator: Any, input_fn: Callable, predict_keys: Any,
                   hooks: Sequence[Any], checkpoint_path: str | None,
                   yield_single_examples: bool) -> Iterator[Any]:
    """Yields `estimator`'s predictions (module doc)."""
    for hook in hooks or ():
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"Estimator.predict: hooks must be SessionRunHook instances, "
                            f"given: {hook!r}")
    config = estimator.config
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    with tf.Graph().as_default():
        built = build_graph(estimator.model_fn, estimator.params, config, ModeKeys.PREDICT,
                            input_fn=input_fn, on_devices=False)
        predictions = _selected(built.spec.predictions, predict_keys)
        scaffold = saver_for(built.spec.scaffold, config)
        if checkpoint_path is None:
            logger.warning("Could not find a trained model in model_dir %s: predicting with "
                           "initialized variables.", estimator.model_dir)
        creator = tf.compat.v1.train.ChiefSessionCreator(
            scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path,
            master=config.evaluation_master, config=config.session_config)
        all_hooks = [*built.input_hooks, *hooks, *built.spec.prediction_hooks]
        with tf.compat.v1.train.MonitoredSession(session_creator=creator,
                                                 hooks=all_hooks) as session:
            while not session.should_stop():
                batch = session.run(predictions)
                if not yield_single_examples:
                    yield batch
                    continue
                for index in range(_batch_size(batch)):
                    if isinstance(batch, dict):
                        yield {key: value[index] for key, value in batch.items()}
                    else:
                        yield batch[index]
