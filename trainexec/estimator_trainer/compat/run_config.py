"""Whether an Estimator's RunConfig runs through TensorFlow's distribute coordinator.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `RunConfig._distribute_coordinator_mode`, assigned by `tensorflow.python.distribute.estimator_training.init_run_config` (RunConfig itself never defines it) | 2.15 | `distribute_coordinator_mode` returns None: a `train_distribute` RunConfig with a TF_CONFIG cluster is no longer refused with a ConfigError up front |

`trainexec/estimator_trainer/trainer.py` (`EstimatorTrainer._check_not_distribute_coordinator`)
still reads the attribute itself, `getattr(config, "_distribute_coordinator_mode", None)`:
that file is being rewritten elsewhere, and is to call `distribute_coordinator_mode`
instead.

Example:
    ```python
    if cluster.is_distributed and distribute_coordinator_mode(estimator.config):
        raise ConfigError("... call tf.estimator.train_and_evaluate for it ...")
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import ASSIGNED, LINE_TF_2_15, Internal

__all__ = ["INTERNALS", "distribute_coordinator_mode"]

INTERNALS = (
    Internal(owner="tensorflow.python.distribute.estimator_training.init_run_config",
             attribute="_distribute_coordinator_mode", lines=(LINE_TF_2_15,),
             when_missing="a train_distribute RunConfig in a TF_CONFIG cluster is not "
                          "refused up front", kind=ASSIGNED,
             used_in="trainexec/estimator_trainer/compat/run_config.py "
                     "(distribute_coordinator_mode, for EstimatorTrainer.plan_role)"),
)


def distribute_coordinator_mode(config: Any) -> Any:
    """The RunConfig's distribute-coordinator mode (set when `train_distribute` is
    given with a TF_CONFIG cluster), or None."""
    return getattr(config, "_distribute_coordinator_mode", None)
