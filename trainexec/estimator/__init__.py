"""Estimators (TensorFlow 2.15 line): the `Trainer` for a `tf.estimator.Estimator`.

* `availability`: whether `tf.estimator` exists here, and what trainexec needs of one;
* `trainer`: `EstimatorTrainer`, the roles of between-graph replication;
* `run_config_cluster`: the cluster and role the Estimator's `RunConfig` was built with;
* `hooks`: `EstimatorHooks`, how each step of a role's sequence (`trainexec.tasks`) is done;
* `roles/`: the saving listener that evaluates after saves, and the worker's readiness checks;
* `target`: `EstimatorTarget`, an Estimator's checkpoints for the evaluation engine;
* `persistent_eval`: one evaluation graph and session for every checkpoint;
* `compat/`: every private TensorFlow / tf.estimator attribute or patch it relies on,
  with its inventory.

Nothing here is imported by `import trainexec`.
"""
