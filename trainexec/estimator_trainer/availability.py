"""Whether Estimators can run here, and what trainexec needs of one.

`tf_estimator()` gives the `tf.estimator` module, or a ConfigError naming the
fix on TensorFlow lines without it (2.16 and later). `TrainableModel` is what
the executor uses of an Estimator; `check_trainable` names what a model lacks.

Example:
    ```python
    check_trainable(estimator)                       # TypeError if it is not one
    tfe = tf_estimator()                             # ConfigError on TF 2.16+
    ```
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from trainexec.errors import ConfigError

__all__ = ["ESTIMATOR_FIX", "ESTIMATOR_MEMBERS", "TrainableModel", "check_trainable",
           "estimator_problem", "tf_estimator"]

# What trainexec needs of an Estimator, by name (`check_trainable`).
ESTIMATOR_MEMBERS = ("config", "model_dir", "train", "evaluate", "latest_checkpoint")

ESTIMATOR_FIX = ('tf.estimator\'s Estimators need TensorFlow 2.15 with '
                 'tensorflow-estimator: pip install "trainexec[estimator]"; or change '
                 '`tf.estimator` to `trainexec.estimator` (custom model_fns and the canned '
                 'estimators, on every TensorFlow line)')


def estimator_problem() -> str | None:
    """None where `tf.estimator` works; otherwise why not, with the fix."""
    import tensorflow as tf  # here, so that importing trainexec stays light
    try:
        tf.estimator.Estimator  # on 2.15 this imports tensorflow_estimator
    except AttributeError:  # 2.16 and later have no tf.estimator at all
        return (f"tf.estimator is not available: the installed TensorFlow "
                f"{tf.__version__} has none. {ESTIMATOR_FIX}")
    except ImportError as err:  # 2.15 without tensorflow-estimator
        return (f"tf.estimator is not available: TensorFlow {tf.__version__} could not "
                f"import tensorflow_estimator ({err}). {ESTIMATOR_FIX}")
    return None


def tf_estimator() -> Any:
    """The `tf.estimator` module.

    Raises ConfigError naming the installed TensorFlow version and the fix
    (`pip install "trainexec[estimator]"`) where there is none: TensorFlow 2.16
    and later removed it, and 2.15 needs tensorflow-estimator installed.
    """
    problem = estimator_problem()
    if problem is not None:
        raise ConfigError(problem)
    import tensorflow as tf
    return tf.estimator  # the loaded module, no longer 2.15's lazy loader


@runtime_checkable
class TrainableModel(Protocol):
    """What the executor uses of an Estimator.

    `config` is a `RunConfig`-like object (task_type, task_id, session_config,
    save_checkpoints_steps, save_checkpoints_secs, and optionally
    experimental_max_worker_delay_secs).
    """

    config: Any
    model_dir: str

    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None) -> Any: ...

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
                 name=None) -> dict: ...

    def latest_checkpoint(self) -> str | None: ...

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           **kwargs) -> Any: ...


def check_trainable(model: Any) -> None:
    """Raises TypeError naming what `model` lacks to be trained by trainexec."""
    missing = [name for name in ESTIMATOR_MEMBERS if not hasattr(model, name)]
    if missing:
        message = ("`estimator` must be a tf.estimator.Estimator or another model with "
                   f"{', '.join(ESTIMATOR_MEMBERS)}; {type(model).__name__} lacks "
                   f"{', '.join(missing)}")
        problem = estimator_problem()
        if problem is not None:
            message += f". Note: {problem}"
        raise TypeError(message)
