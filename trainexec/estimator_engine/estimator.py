"""`Estimator`: tf.estimator's custom-`model_fn` Estimator on public TensorFlow, every line.

A user changes `tf.estimator.Estimator` to `trainexec.estimator.Estimator` and nothing
else: the same constructor, the same `train`, `evaluate`, `predict`,
`export_saved_model`, and the same files (checkpoint variable names and the
`checkpoint` state file, events under `model_dir` and `model_dir/eval[_<name>]`,
SavedModels with the same signatures), so a tf.estimator 2.15 checkpoint evaluates and
resumes here. Each call builds its graph in a new `tf.Graph` (graph mode, as
tf.estimator did), with `tf.compat.v1` training sessions and hooks.

For the executor it adds two things tf.estimator reached only privately: one
evaluation graph kept for many checkpoints (`persistent_evaluation`), and how often a
worker re-checks that the chief has initialized the model (`readiness_checks_every`).

Example:
    ```python
    estimator = Estimator(model_fn, model_dir="/tmp/m", params={"units": 16})
    estimator.train(train_input_fn, max_steps=1000)
    metrics = estimator.evaluate(eval_input_fn)
    estimator.export_saved_model("/tmp/m/export", serving_input_receiver_fn)
    ```
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import tempfile
from typing import Any, Callable, Iterator, Mapping, Sequence

import tensorflow as tf

from trainexec.estimator_engine.calls import check_model_fn
from trainexec.estimator_engine.evaluation import EvaluationGraph, eval_dir
from trainexec.estimator_engine.prediction import run_prediction
from trainexec.estimator_engine.run_config import RunConfig
from trainexec.estimator_engine.session_configs import default_session_config
from trainexec.estimator_engine.saved_model import write_saved_model
from trainexec.estimator_engine.training import check_train_arguments, run_training
from trainexec.estimator_engine.warm_start import as_warm_start_settings, warm_start
from trainexec.records import checkpoints

__all__ = ["DEFAULT_READINESS_SECS", "Estimator"]

logger = logging.getLogger(__name__)

DEFAULT_READINESS_SECS = 30.0  # TensorFlow's SessionManager default


def _model_dir(model_dir: Any, config: RunConfig) -> tuple[str, RunConfig]:
    if model_dir is not None and hasattr(model_dir, "__fspath__"):
        model_dir = os.fspath(model_dir)
    given = config.model_dir
    if model_dir is not None and given is not None and \
            os.path.normpath(model_dir) != os.path.normpath(given):
        raise ValueError(
            f"Estimator `model_dir` ({model_dir!r}) and `config.model_dir` ({given!r}) "
            "differ: give one of them, or the same directory to both")
    chosen = model_dir or given
    if chosen is None:
        chosen = tempfile.mkdtemp()
        logger.warning("Using temporary folder as model directory: %s", chosen)
    if chosen != given:
        config = config.replace(model_dir=chosen)
    return chosen, config


class Estimator:
    """Trains, evaluates, predicts with and exports a `model_fn` (module doc).

    Args:
      model_fn: `model_fn(features, labels, mode, params, config)` (`labels`, `mode`,
        `params`, `config` as it needs them) returning an `EstimatorSpec`.
      model_dir: where checkpoints and summaries go (or `config.model_dir`; a
        temporary directory when neither is given).
      config: a `trainexec.estimator.RunConfig` (default: `RunConfig()`, which reads
        TF_CONFIG).
      params: passed to `model_fn` (and to an `input_fn` with a `params` argument).
      warm_start_from: a checkpoint or model_dir path, or `WarmStartSettings`.
    """

    def __init__(self, model_fn: Callable, model_dir: str | None = None,
                 config: RunConfig | None = None, params: Mapping[str, Any] | None = None,
                 warm_start_from: Any = None) -> None:
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(
                f"Estimator `config` must be a trainexec.estimator.RunConfig, given: "
                f"{type(config).__name__} (a tf.estimator.RunConfig belongs to "
                "tf.estimator.Estimator: build trainexec.estimator.RunConfig with the same "
                "arguments)")
        check_model_fn(model_fn, params)
        self._model_dir, self._config = _model_dir(model_dir, config)
        if self._config.session_config is None:  # as tf.estimator: its sessions' default
            self._config = self._config.replace(session_config=default_session_config())
        self._model_fn = model_fn
        self._params = copy.deepcopy(params) if params is not None else {}
        self._warm_start = as_warm_start_settings(warm_start_from)
        self.readiness_secs = DEFAULT_READINESS_SECS
        logger.info("Using config: %r", self._config)

    # -- what it is ---------------------------------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.copy(self._config)

    @property
    def params(self) -> Any:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable:
        return self._model_fn

    def eval_dir(self, name: str | None = None) -> str:
        """Where `evaluate(name=name)` writes its summaries: `model_dir/eval[_<name>]`."""
        return eval_dir(self._model_dir, name)

    # -- checkpoints ---------------------------------------------------------------------
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint in `model_dir` (its `checkpoint` state file), or None."""
        latest = checkpoints.latest_checkpoint(self._model_dir)
        return latest.path if latest is not None else None

    def _checkpoint_or_raise(self) -> str:
        latest = self.latest_checkpoint()
        if latest is None:
            raise ValueError(f"Estimator: no checkpoint in model_dir {self._model_dir}: "
                             "train first")
        return latest

    def get_variable_names(self) -> list[str]:
        """The names of the variables in the newest checkpoint."""
        return [name for name, _ in tf.train.list_variables(self._checkpoint_or_raise())]

    def get_variable_value(self, name: str) -> Any:
        """The value of variable `name` in the newest checkpoint (a NumPy value)."""
        return tf.train.load_variable(self._checkpoint_or_raise(), name)

    # -- the four verbs ------------------------------------------------------------------
    def train(self, input_fn: Callable, hooks: Sequence[Any] | None = None,
              steps: int | None = None, max_steps: int | None = None,
              saving_listeners: Sequence[Any] | None = None) -> "Estimator":
        """Trains for `steps` more steps, or up to global step `max_steps`, or until
        `input_fn`'s data ends; returns the Estimator."""
        if self._config.task_type in ("evaluator", "ps"):
            raise ValueError(
                f"Estimator.train on a {self._config.task_type} task: evaluators and "
                "parameter servers do not train. Run the cluster's roles with "
                "trainexec.estimator.train_and_evaluate, which gives each task its role")
        hooks, listeners = check_train_arguments(hooks, steps, max_steps, saving_listeners)
        if max_steps is not None:
            latest = self.latest_checkpoint()
            if latest is not None and _step_of(latest) >= max_steps:
                logger.info("Skipping training since max_steps has already saved.")
                return self
        run_training(self, input_fn, hooks, steps, max_steps, listeners)
        return self

    def evaluate(self, input_fn: Callable, steps: int | None = None,
                 hooks: Sequence[Any] | None = None, checkpoint_path: str | None = None,
                 name: str | None = None) -> dict:
        """The metrics of a checkpoint (default: the newest) on `input_fn`'s data, for
        `steps` batches or until it ends, with `loss` and `global_step`; written as
        summaries to `eval_dir(name)`."""
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            logger.warning("Could not find trained model in model_dir: %s, running "
                           "initialization to evaluate.", self._model_dir)
        evaluation = EvaluationGraph(self, input_fn, steps=steps, hooks=hooks, name=name)
        try:
            return evaluation.evaluate(checkpoint_path)
        finally:
            evaluation.close()

    def persistent_evaluation(self, input_fn: Callable, steps: int | None = None,
                              hooks: Sequence[Any] | None = None,
                              name: str | None = None) -> EvaluationGraph:
        """One evaluation graph and session for many checkpoints: its
        `evaluate(checkpoint_path)` gives what `evaluate` gives, without building a
        graph each time; `close()` it when done.

        Raises ValueError when the input cannot be rewound for the next checkpoint (an
        `input_fn` returning tensors or queues instead of a `tf.data.Dataset`): call
        `evaluate` for each checkpoint then."""
        evaluation = EvaluationGraph(self, input_fn, steps=steps, hooks=hooks, name=name)
        if not evaluation.rewindable:
            evaluation.close()
            raise ValueError(
                "persistent_evaluation: the input_fn returns no tf.data.Dataset (tensors "
                "or queues), which one graph cannot read again for the next checkpoint; "
                "return a tf.data.Dataset, or evaluate() each checkpoint")
        return evaluation

    def predict(self, input_fn: Callable, predict_keys: Sequence[str] | None = None,
                hooks: Sequence[Any] | None = None, checkpoint_path: str | None = None,
                yield_single_examples: bool = True) -> Iterator[Any]:
        """Yields the predictions for `input_fn`'s features, one example (or batch,
        with `yield_single_examples=False`) at a time."""
        return run_prediction(self, input_fn, predict_keys, list(hooks or ()),
                              checkpoint_path, yield_single_examples)

    def export_saved_model(self, export_dir_base: str,
                           serving_input_receiver_fn: Callable[[], Any],
                           assets_extra: Mapping[str, str] | None = None,
                           as_text: bool = False, checkpoint_path: str | None = None,
                           experimental_mode: str = "infer") -> bytes:
        """Writes a servable SavedModel to `<export_dir_base>/<timestamp>` and returns
        that path as bytes (as tf.estimator did)."""
        if experimental_mode != "infer":
            raise ValueError(
                f"export_saved_model: experimental_mode={experimental_mode!r} is not "
                "supported: trainexec.estimator exports serving (PREDICT) SavedModels only; "
                "for a trainable SavedModel, train a Keras model with trainexec.KerasTrainer")
        path = write_saved_model(self, os.fspath(export_dir_base), serving_input_receiver_fn,
                                 assets_extra=assets_extra, as_text=as_text,
                                 checkpoint_path=checkpoint_path)
        return path.encode()

    # -- for the executor ------------------------------------------------------------------
    @contextlib.contextmanager
    def readiness_checks_every(self, secs: float) -> Iterator[None]:
        """Within the block, a worker re-checks every `secs` (not TensorFlow's 30 s)
        that the chief has initialized the model."""
        if not secs > 0:
            raise ValueError(f"readiness_checks_every: secs ({secs!r}) must be > 0")
        before, self.readiness_secs = self.readiness_secs, secs
        try:
            yield
        finally:
            self.readiness_secs = before

    def warm_start_if_asked(self) -> None:
        """Applies `warm_start_from` to the graph being built (the chief, before its
        first checkpoint)."""
        if self._warm_start is not None:
            logger.info("Warm-starting from %s", self._warm_start.ckpt_to_initialize_from)
            warm_start(self._warm_start)


def _step_of(checkpoint_path: str) -> int:
    try:
        return int(tf.train.load_variable(checkpoint_path, "global_step"))
    except (tf.errors.NotFoundError, ValueError):
        return -1
