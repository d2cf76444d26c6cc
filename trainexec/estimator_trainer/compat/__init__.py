"""Every private TensorFlow / tf.estimator attribute or patch the Estimator trainer uses.

One module per concern, each opening with a table (attribute or patch | the TensorFlow
lines it was seen on | what trainexec does when it is missing) and holding the code that
touches it; callers use the small named functions there:

* `session_manager`: `SessionManager.__init__` patched for `model_readiness_checks_every`;
* `estimator_internals`: the Estimator's private methods and state the persistent
  evaluation graph uses;
* `exporters`: tf.estimator exporters' `_garbage_collect_exports` (called in
  `trainexec.evaluation.staged_export`, which may not import this package);
* `run_config`: `RunConfig._distribute_coordinator_mode`.

`INVENTORY` lists them all as `trainexec.internals.Internal` records;
tests/test_estimator_trainer_compat.py checks on TensorFlow 2.15 that each is still there.
"""

from trainexec.estimator_trainer.compat import estimator_internals, exporters, run_config, \
    session_manager

__all__ = ["INVENTORY"]

INVENTORY = (session_manager.INTERNALS + estimator_internals.INTERNALS
             + exporters.INTERNALS + run_config.INTERNALS)
