"""`trainexec.estimator.experimental`: what tf.estimator's `experimental` module held
that trainexec's engine has.

Example:
    ```python
    from trainexec.estimator import experimental
    logits = experimental.call_logit_fn(logit_fn, features, mode, params, config)
    receiver_fn = experimental.build_raw_supervised_input_receiver_fn(
        {"x": tf.zeros([1, 4])}, tf.zeros([1], tf.int64))
    ```
"""

from trainexec.estimator_engine.logit_fn import call_logit_fn
from trainexec.estimator_engine.serving_input import build_raw_supervised_input_receiver_fn

__all__ = ["build_raw_supervised_input_receiver_fn", "call_logit_fn"]
