"""How trainexec runs an Estimator in each cluster role: the native one
(`trainexec.estimator_engine`) and, on the 2.15 line, `tf.estimator.Estimator`.

* `availability`: whether `tf.estimator` exists here, and what trainexec needs of one;
* `trainer`: `EstimatorTrainer`, the roles of between-graph replication;
* `run_config_cluster`: the cluster and role the Estimator's `RunConfig` was built with;
* `hooks`: `EstimatorHooks`, how each step of a role's sequence (`trainexec.tasks`) is done;
* `evaluate_on_save`: the saving listener that evaluates a local run's or the master's own
  checkpoint saves, and tf.estimator's log lines for it;
* `readiness`: how often a worker re-checks that the chief has initialized the model;
* `target`: `EstimatorTarget`, an Estimator's checkpoints for the evaluation engine;
* `persistent_eval`: one evaluation graph and session for every checkpoint (tf.estimator's);
* `compat/`: every private TensorFlow / tf.estimator attribute or patch the tf.estimator
  path relies on, with its inventory (the native engine uses none).

Users reach it through `trainexec.train_and_evaluate` and `trainexec.TrainingExecutor`,
which wrap an Estimator in `EstimatorTrainer`; the public names are `trainexec.estimator`'s.
"""
