"""`TrainSpec` and `EvalSpec`: what to train on and how to evaluate, validated.

Same fields, defaults and exception types as `tf.estimator.TrainSpec` /
`tf.estimator.EvalSpec`; either kind is accepted wherever trainexec takes a spec.

Example:
    ```python
    train_spec = TrainSpec(input_fn=train_input_fn, max_steps=1000)
    eval_spec = EvalSpec(input_fn=eval_input_fn, steps=10, throttle_secs=30)
    ```
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Iterable, NamedTuple, Protocol, Union

from trainexec.errors import ConfigError
# validate_exporters is re-exported: the one check
from trainexec.exporter_protocol import ExporterProtocol, validate_exporters

__all__ = [
    "EvalSpec", "EvalSpecLike", "Exporters", "TrainSpec", "TrainSpecLike", "as_eval_spec",
    "as_train_spec", "check_poll_secs", "validate_exporters", "validate_hooks",
]

# What `EvalSpec(exporters=...)` (and `SidecarEvaluator`) take: an exporter, an iterable
# of them, or None (`validate_exporters`).
Exporters = Union[ExporterProtocol, Iterable[ExporterProtocol], None]


def _validate_input_fn(input_fn: Any) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn!r}")


def validate_hooks(hooks: Iterable[Any] | None) -> tuple[Any, ...]:
    import tensorflow as tf

    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(
                f"All hooks must be `SessionRunHook` instances, given: {hook!r}")
    return hooks


def _validate_saving_listeners(listeners: Iterable[Any] | None) -> tuple[Any, ...]:
    import tensorflow as tf

    listeners = tuple(listeners or ())
    for listener in listeners:
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError(
                "All saving_listeners must be `CheckpointSaverListener` instances, "
                f"given: {listener!r}")
    return listeners


def check_poll_secs(value: Any, field: str = "poll_secs") -> None:
    """ConfigError unless `value` is a positive number of seconds: every polling
    interval a user sets (the executor's, a job's, the evaluation loop's) is checked
    here, with one message."""
    # `not value > 0`, so that NaN fails too. typeshed's numbers.Real declares only `<`
    # and `<=`, though every Real has `>`.
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not value > 0):  # type: ignore[operator]
        raise ConfigError(f"`{field}` ({value}) must be > 0 seconds, e.g. 1.0")


def _check_number(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{field}` must be a number, given: {value!r}")


class TrainSpec(NamedTuple("TrainSpec", [
        ("input_fn", Callable[..., Any]), ("max_steps", Union[int, None]),
        ("hooks", tuple[Any, ...]), ("saving_listeners", tuple[Any, ...])])):
    """The training half of a train-and-evaluate run.

    `TrainSpec(input_fn, max_steps=None, hooks=None, saving_listeners=None)`.

    Attributes:
      input_fn: returns a `tf.data.Dataset` or `(features, labels)` for training.
      max_steps: positive total number of steps; None trains until `input_fn`
        runs out of data.
      hooks: `SessionRunHook`s run on every training task.
      saving_listeners: `CheckpointSaverListener`s run on the chief.
    """

    __slots__ = ()

    def __new__(cls, input_fn: Callable[..., Any], max_steps: int | None = None,
                hooks: Iterable[Any] | None = None,
                saving_listeners: Iterable[Any] | None = None) -> TrainSpec:
        _validate_input_fn(input_fn)
        if max_steps is not None:
            _check_number("max_steps", max_steps)
            if max_steps <= 0:
                raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(
            cls, input_fn, max_steps, validate_hooks(hooks),
            _validate_saving_listeners(saving_listeners))


class EvalSpec(NamedTuple("EvalSpec", [
        ("input_fn", Callable[..., Any]), ("steps", Union[int, None]),
        ("name", Union[str, None]), ("hooks", tuple[Any, ...]),
        ("exporters", tuple[ExporterProtocol, ...]), ("start_delay_secs", float),
        ("throttle_secs", float)])):
    """The evaluation half of a train-and-evaluate run.

    `EvalSpec(input_fn, steps=100, name=None, hooks=None, exporters=None,
    start_delay_secs=120, throttle_secs=600)`.

    Attributes:
      input_fn: returns the evaluation data.
      steps: positive number of batches per evaluation; None evaluates until
        `input_fn` runs out of data.
      name: evaluation name (metrics go to `eval_<name>`), or None.
      hooks: `SessionRunHook`s run during evaluation.
      exporters: an exporter, an iterable of them, or None; each is called after
        every evaluation and exports to `model_dir/export/<exporter.name>`.
      start_delay_secs: seconds the evaluator waits before its first evaluation
        (skipped when training has already finished).
      throttle_secs: minimum seconds between the starts of two evaluations;
        the final checkpoint is evaluated at once whatever this says.
    """

    __slots__ = ()

    def __new__(cls, input_fn: Callable[..., Any], steps: int | None = 100,
                name: str | None = None, hooks: Iterable[Any] | None = None,
                exporters: Exporters = None, start_delay_secs: float = 120,
                throttle_secs: float = 600) -> EvalSpec:
        _validate_input_fn(input_fn)
        if steps is not None:
            _check_number("steps", steps)
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name!r}")
        hooks = validate_hooks(hooks)
        exporters = validate_exporters(exporters)
        _check_number("start_delay_secs", start_delay_secs)
        if start_delay_secs < 0:
            raise ValueError(
                f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        _check_number("throttle_secs", throttle_secs)
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn, steps, name, hooks, exporters,
                               start_delay_secs, throttle_secs)


class TrainSpecLike(Protocol):
    """What trainexec reads of a `tf.estimator.TrainSpec` (`as_train_spec`): for type
    checkers, the other kind of train spec `train_and_evaluate` takes."""

    @property
    def input_fn(self) -> Callable[..., Any]: ...
    @property
    def max_steps(self) -> Any: ...
    @property
    def hooks(self) -> Any: ...


class EvalSpecLike(Protocol):
    """What trainexec reads of a `tf.estimator.EvalSpec` (`as_eval_spec`): for type
    checkers, the other kind of eval spec `train_and_evaluate` takes."""

    @property
    def input_fn(self) -> Callable[..., Any]: ...
    @property
    def steps(self) -> Any: ...
    @property
    def name(self) -> Any: ...
    @property
    def hooks(self) -> Any: ...
    @property
    def exporters(self) -> Any: ...
    @property
    def start_delay_secs(self) -> Any: ...
    @property
    def throttle_secs(self) -> Any: ...


def as_train_spec(spec: Any) -> TrainSpec:
    """Accepts a trainexec or tf.estimator `TrainSpec` and returns ours."""
    if isinstance(spec, TrainSpec):
        return spec
    if all(hasattr(spec, f) for f in ("input_fn", "max_steps", "hooks")):
        return TrainSpec(spec.input_fn, spec.max_steps, spec.hooks,
                         getattr(spec, "saving_listeners", None))
    raise TypeError(
        "`train_spec` must be a trainexec.TrainSpec or tf.estimator.TrainSpec. "
        f"Got: {type(spec)}")


def as_eval_spec(spec: Any) -> EvalSpec:
    """Accepts a trainexec or tf.estimator `EvalSpec` and returns ours."""
    if isinstance(spec, EvalSpec):
        return spec
    if all(hasattr(spec, f) for f in EvalSpec._fields):
        return EvalSpec(*(getattr(spec, f) for f in EvalSpec._fields))
    raise TypeError(
        "`eval_spec` must be a trainexec.EvalSpec or tf.estimator.EvalSpec. "
        f"Got: {type(spec)}")
