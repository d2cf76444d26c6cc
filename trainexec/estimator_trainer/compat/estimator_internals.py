"""The private parts of `tf.estimator.Estimator` the persistent evaluation graph uses.

`trainexec.estimator_trainer.persistent_eval` builds the Estimator's own evaluation graph once
instead of per checkpoint; to build exactly the graph `estimator.evaluate` builds it
calls the Estimator's private graph-building methods, reads its private state, and
refuses subclasses that override any of the methods it stands in for.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `Estimator._call_input_fn`, `_call_model_fn`, `_create_and_assert_global_step` | 2.15 | building the graph fails (AttributeError): `EstimatorTarget` warns and evaluates every checkpoint with `estimator.evaluate` (a new graph and session each) |
| `Estimator._model_fn`, `_config` (assigned in `__init__`) | 2.15 | the same |
| `Estimator._session_config` (assigned in `__init__`) | 2.15 | the persistent session gets TensorFlow's default session config |
| `Estimator._eval_distribution` (assigned in `__init__`) | 2.15 | an `eval_distribute` RunConfig is no longer recognised, and its evaluation runs in the persistent graph without the strategy |
| `Estimator._actual_eval`, `_evaluate_build_graph`, `_evaluate_run`, `_call_model_fn_eval`, `_create_global_step` (compared, not called: a subclass overriding one keeps `estimator.evaluate`) | 2.15 | a subclass overriding one is no longer noticed and is evaluated by the persistent graph |
| `tensorflow.python.training.evaluation._get_or_create_eval_step` | 2.15 (also on 2.21) | building the graph fails: `estimator.evaluate` per checkpoint, as above |

A missing method or `_model_fn` / `_config` makes building the graph fail
(AttributeError); `trainexec.estimator_trainer.target.EstimatorTarget` then logs a warning
naming the error and evaluates with `estimator.evaluate`: slower, never wrong.

Example:
    ```python
    global_step = create_and_assert_global_step(estimator, graph)
    data = call_input_fn(estimator, eval_spec.input_fn, tf.estimator.ModeKeys.EVAL)
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import ASSIGNED, LINE_TF_2_15, Internal

__all__ = ["INTERNALS", "STOOD_IN_FOR", "call_input_fn", "call_model_fn",
           "create_and_assert_global_step", "eval_distribution", "get_or_create_eval_step",
           "model_fn_and_config", "session_config"]

_ESTIMATOR = "tensorflow_estimator.python.estimator.estimator.Estimator"
_EVALUATE_PER_CHECKPOINT = ("building the persistent evaluation graph fails: EstimatorTarget "
                            "warns and runs estimator.evaluate per checkpoint")

# Estimator methods the persistent path stands in for: a subclass overriding one of
# them evaluates differently, so it keeps `estimator.evaluate`.
STOOD_IN_FOR = ("evaluate", "_actual_eval", "_evaluate_build_graph", "_evaluate_run",
                "_call_model_fn_eval", "_call_input_fn", "_call_model_fn", "eval_dir",
                "_create_global_step", "_create_and_assert_global_step")

_CALLED = ("_call_input_fn", "_call_model_fn", "_create_and_assert_global_step")

INTERNALS = (
    *(Internal(owner=_ESTIMATOR, attribute=name, lines=(LINE_TF_2_15,),
               when_missing=_EVALUATE_PER_CHECKPOINT) for name in _CALLED),
    Internal(owner=_ESTIMATOR, attribute="_model_fn", lines=(LINE_TF_2_15,),
             when_missing=_EVALUATE_PER_CHECKPOINT, kind=ASSIGNED),
    Internal(owner=_ESTIMATOR, attribute="_config", lines=(LINE_TF_2_15,),
             when_missing=_EVALUATE_PER_CHECKPOINT, kind=ASSIGNED),
    Internal(owner=_ESTIMATOR, attribute="_session_config", lines=(LINE_TF_2_15,),
             when_missing="the persistent session uses TensorFlow's default config",
             kind=ASSIGNED),
    Internal(owner=_ESTIMATOR, attribute="_eval_distribution", lines=(LINE_TF_2_15,),
             when_missing="an eval_distribute RunConfig is not recognised as one",
             kind=ASSIGNED),
    *(Internal(owner=_ESTIMATOR, attribute=name, lines=(LINE_TF_2_15,),
               when_missing="a subclass overriding it is not noticed; "
                            "it would be evaluated by the persistent graph")
      for name in STOOD_IN_FOR if name.startswith("_") and name not in _CALLED),
    Internal(owner="tensorflow.python.training.evaluation",
             attribute="_get_or_create_eval_step", lines=(LINE_TF_2_15,),
             when_missing=_EVALUATE_PER_CHECKPOINT),
)

def eval_distribution(estimator: Any) -> Any:
    """The Estimator's evaluation strategy (`RunConfig.eval_distribute`), or None."""
    return getattr(estimator, "_eval_distribution", None)


def session_config(estimator: Any) -> Any:
    """The session ConfigProto the Estimator's own sessions use, or None."""
    return getattr(estimator, "_session_config", None)


def model_fn_and_config(estimator: Any) -> tuple[Any, Any]:
    """The Estimator's `model_fn` and `RunConfig` objects, as it holds them (for
    noticing that either was replaced)."""
    return estimator._model_fn, estimator._config


def create_and_assert_global_step(estimator: Any, graph: Any) -> Any:
    return estimator._create_and_assert_global_step(graph)


def call_input_fn(estimator: Any, input_fn: Any, mode: Any) -> Any:
    return estimator._call_input_fn(input_fn, mode)


def call_model_fn(estimator: Any, features: Any, labels: Any, mode: Any, config: Any) -> Any:
    return estimator._call_model_fn(features, labels, mode, config)


def get_or_create_eval_step() -> Any:
    """The evaluation step counter of the default graph (tf.estimator's)."""
    from tensorflow.python.training import evaluation as tf_evaluation

    return tf_evaluation._get_or_create_eval_step()
