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

As in tf.estimator, a subclass may add methods but not replace the Estimator's own
(`model_fn` and `latest_checkpoint` excepted): `Estimator(...)` of such a subclass is a
ValueError naming the members it overrides.

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
import inspect
import logging
import os
import tempfile
from typing import Any, Callable, Iterator, Mapping, Sequence

import tensorflow as tf

from trainexec.estimator_engine.calls import call_model_fn, check_model_fn
from trainexec.estimator_engine.evaluation import EvaluationGraph, eval_dir
from trainexec.estimator_engine.input_fn import iterator_from_input_fn
from trainexec.estimator_engine.prediction import run_prediction
from trainexec.estimator_engine.run_config import RunConfig
from trainexec.estimator_engine.session_configs import default_session_config
from trainexec.estimator_engine.saved_model import write_saved_model
from trainexec.estimator_engine.training import check_train_arguments, run_training
from trainexec.estimator_engine.warm_start import (as_warm_start_settings, warm_start,
                                                  warm_start_checkpoint)
from trainexec.records import checkpoints

__all__ = ["DEFAULT_READINESS_SECS", "Estimator"]

logger = logging.getLogger(__name__)

DEFAULT_READINESS_SECS = 30.0  # TensorFlow's SessionManager default
# What a subclass may override (tf.estimator allowed these two of the public members).
_OVERRIDABLE = frozenset({"model_fn", "latest_checkpoint"})


def _model_dir(model_dir: Any, config: RunConfig) -> tuple[str, RunConfig]:
    if model_dir is not None and hasattr(model_dir, "__fspath__"):
        model_dir = os.fspath(model_dir)
    given = config.model_dir
    if model_dir is not None and given is not None and \
            os.path.normpath(model_dir) != os.path.normpath(given):
        raise ValueError(
            "`model_dir` are set both in constructor and `RunConfig`, but with different "
            f"values: {model_dir!r} given to the Estimator, {given!r} in its RunConfig. "
            "Give one of them, or the same directory to both")
    chosen = model_dir or given
    if chosen is None:
        chosen = tempfile.mkdtemp()
        logger.warning("Using temporary folder as model directory: %s", chosen)
    if chosen != given:
        config = config.replace(model_dir=chosen)
    return chosen, config


def _check_not_overridden(cls: type) -> None:
    """ValueError naming the Estimator members `cls` (a subclass) replaces."""
    if cls is Estimator:
        return
    overridden = sorted(
        name for name in dir(Estimator)
        if not name.startswith("__") and name not in _OVERRIDABLE
        and inspect.getattr_static(cls, name) is not inspect.getattr_static(Estimator, name))
    if overridden:
        raise ValueError(
            f"Subclasses of Estimator cannot override members of Estimator: "
            f"{cls.__name__} overrides {', '.join(overridden)}. Give the new behaviour a "
            "name of its own, or wrap the Estimator instead of subclassing it (only "
            f"{' and '.join(sorted(_OVERRIDABLE))} may be overridden)")


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
      warm_start_from: a checkpoint, model_dir or SavedModel path, or
        `WarmStartSettings`: where a model without a checkpoint of its own takes its
        variables' initial values (training, and evaluating, predicting or exporting
        before any training).

    Raises:
      ValueError: no `model_fn`, one whose arguments do not fit, a `config` that is not
        a `RunConfig`, `model_dir` and `config.model_dir` that differ, or a subclass
        that overrides the Estimator's members.
    """

    def __init__(self, model_fn: Callable, model_dir: str | None = None,
                 config: RunConfig | None = None, params: Mapping[str, Any] | None = None,
                 warm_start_from: Any = None) -> None:
        _check_not_overridden(type(self))
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(
                "Estimator `config` must be an instance of `RunConfig` "
                f"(trainexec.estimator.RunConfig), given: {type(config).__name__} (a "
                "tf.estimator.RunConfig belongs to tf.estimator.Estimator: build "
                "trainexec.estimator.RunConfig with the same arguments)")
        check_model_fn(model_fn, params)
        self._model_dir, self._config = _model_dir(model_dir, config)
        if self._config.session_config is None:  # as tf.estimator: its sessions' default
            self._config = self._config.replace(session_config=default_session_config())
        self._session_config = self._config.session_config
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
        """The `model_fn` as the Estimator calls it, bound to `params`:
        `model_fn(features, labels, mode, config)` returning an `EstimatorSpec`."""

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return call_model_fn(self._model_fn, features, labels, mode, self._params,
                                 config)

        return model_fn

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
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir} "
                             "(no checkpoint there): train first, or give the model_dir "
                             "that holds the checkpoints")
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
        evaluation = EvaluationGraph(self, input_fn, steps=steps, hooks=hooks, name=name,
                                     warm_start=checkpoint_path is None)
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
        that path as bytes (as tf.estimator did). The variables come from
        `checkpoint_path`, else the newest checkpoint, else (an Estimator that has not
        trained) the checkpoint or SavedModel it warm-starts from."""
        if experimental_mode != "infer":
            raise ValueError(
                f"export_saved_model: experimental_mode={experimental_mode!r} is not "
                "supported: trainexec.estimator exports serving (PREDICT) SavedModels only; "
                "for a trainable SavedModel, train a Keras model with trainexec.KerasTrainer")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None and self._warm_start is not None:
            checkpoint_path = warm_start_checkpoint(self._warm_start)
        if isinstance(export_dir_base, bytes):
            export_dir_base = export_dir_base.decode()
        path = write_saved_model(self, os.fspath(export_dir_base), serving_input_receiver_fn,
                                 assets_extra=assets_extra, as_text=as_text,
                                 checkpoint_path=checkpoint_path)
        return path.encode()

    @property
    def export_savedmodel(self) -> Any:
        """tf.estimator 1's name, gone from tf.estimator 2: an AttributeError saying
        what to call instead."""
        raise AttributeError("Estimator.export_savedmodel is gone: Please use "
                             "`export_saved_model` (same arguments; it returns the export's "
                             "path as bytes)")

    def _get_iterator_from_input_fn(self, input_fn: Callable, mode: str | None,
                                    distribution: Any = None) -> tuple[Any, list]:
        """An iterator over `input_fn`'s dataset and the hooks initializing it, through
        `distribution.make_input_fn_iterator` when one is given (as tf.estimator's
        Estimator offered its distribution strategies)."""
        return iterator_from_input_fn(input_fn, mode, self.params, self.config,
                                      distribution)

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
        """Applies `warm_start_from` to the graph being built, for a model without a
        checkpoint of its own: the chief before its first one, `evaluate` and `predict`
        before any training."""
        if self._warm_start is not None:
            logger.info("Warm-starting from %s", self._warm_start.ckpt_to_initialize_from)
            warm_start(self._warm_start)


def _step_of(checkpoint_path: str) -> int:
    try:
        return int(tf.train.load_variable(checkpoint_path, "global_step"))
    except (tf.errors.NotFoundError, ValueError):
        return -1
