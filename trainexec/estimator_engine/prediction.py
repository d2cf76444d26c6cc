"""`Estimator.predict`: the `model_fn` in PREDICT mode over an input, from a checkpoint.

Yields one dict (or value) per example with `yield_single_examples` (every prediction
of a dict must share the batch dimension), else one per batch; `predict_keys` keeps
those of a dict's predictions it names (at least one must be there). Without any
checkpoint the variables are initialized (from `warm_start_from`, if the Estimator has
one), with a warning, as tf.estimator did; so is an input that never ends (neither a
`tf.data` iterator nor queue runners: predict would yield forever).

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
from trainexec.estimator_engine.input_fn import reads_dataset_or_queue
from trainexec.estimator_engine.model_spec import ModeKeys
from trainexec.estimator_engine.training import check_hooks

__all__ = ["run_prediction"]

logger = logging.getLogger(__name__)


def _selected(predictions: Any, predict_keys: Sequence[str] | None) -> Any:
    if not predict_keys:
        return predictions
    if isinstance(predict_keys, str):
        predict_keys = [predict_keys]
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict "
                         f"predictions (Estimator.predict: predict_keys {list(predict_keys)} "
                         "are given, but the model_fn's predictions are one Tensor): drop "
                         "predict_keys, or return a dict of predictions")
    kept = {key: value for key, value in predictions.items() if key in predict_keys}
    if not kept:
        raise ValueError(f"Expected to run at least one output from {sorted(predictions)}, "
                         f"provided {list(predict_keys)} (Estimator.predict: predict_keys "
                         "name none of the model_fn's predictions)")
    return kept


def _batch_length(batch: dict) -> int:
    """The batch dimension every prediction of a dict shares."""
    lengths: dict[Any, int | None] = {
        key: int(value.shape[0]) if getattr(value, "ndim", 0) else None
        for key, value in batch.items()}
    if None in lengths.values():
        scalar = next(key for key, length in lengths.items() if length is None)
        raise ValueError(f"Estimator.predict with yield_single_examples: prediction "
                         f"{scalar!r} is a scalar, with no batch dimension to split; pass "
                         "yield_single_examples=False")
    if len(set(lengths.values())) > 1:
        raise ValueError(
            "Batch length of predictions should be same: "
            f"{', '.join(f'{key} has {n}' for key, n in sorted(lengths.items()))}. Pass "
            "yield_single_examples=False to get whole batches, or return predictions "
            "that share the batch dimension")
    first = next(iter(lengths.values()))
    assert first is not None  # a scalar was refused above
    return first


def _rows(batch: Any) -> Iterator[Any]:
    """One example at a time of a batch of predictions."""
    if not isinstance(batch, dict):
        if getattr(batch, "ndim", 0) == 0:
            raise ValueError("Estimator.predict with yield_single_examples: the prediction "
                             "is a scalar, with no batch dimension to split; pass "
                             "yield_single_examples=False")
        yield from batch
        return
    for index in range(_batch_length(batch)):
        yield {key: value[index] for key, value in batch.items()}


def run_prediction(estimator: Any, input_fn: Callable, predict_keys: Any,
                   hooks: Sequence[Any], checkpoint_path: str | None,
                   yield_single_examples: bool) -> Iterator[Any]:
    """Yields `estimator`'s predictions (module doc)."""
    hooks = check_hooks(hooks, "predict")
    config = estimator.config
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    with tf.Graph().as_default():
        built = build_graph(estimator.model_fn, estimator.params, config, ModeKeys.PREDICT,
                            input_fn=input_fn, on_devices=False)
        if not reads_dataset_or_queue(built.features):
            tf.compat.v1.logging.warning(
                "Input graph does not use tf.data.Dataset or contain a QueueRunner: the "
                "input never ends, so Estimator.predict yields predictions forever. Return "
                "a tf.data.Dataset from the input_fn, or stop iterating yourself.")
        if checkpoint_path is None:
            logger.warning("Could not find a trained model in model_dir %s: predicting with "
                           "initialized variables.", estimator.model_dir)
            estimator.warm_start_if_asked()
        predictions = _selected(built.spec.predictions, predict_keys)
        scaffold = saver_for(built.spec.scaffold, config)
        creator = tf.compat.v1.train.ChiefSessionCreator(
            scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path,
            master=config.evaluation_master, config=config.session_config)
        all_hooks = [*built.input_hooks, *hooks, *built.spec.prediction_hooks]
        with tf.compat.v1.train.MonitoredSession(session_creator=creator,
                                                 hooks=all_hooks) as session:
            while not session.should_stop():
                batch = session.run(predictions)
                if yield_single_examples:
                    yield from _rows(batch)
                else:
                    yield batch
