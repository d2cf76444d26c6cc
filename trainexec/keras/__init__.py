"""Keras models (Keras 3 and tf_keras): training in every role, and evaluation.

* `strategy`: which `tf.distribute` strategy a task uses, and what it does;
* `trainer`: `KerasTrainer`, one job in every role;
* `training`: `model.fit` to `max_steps`, with checkpoints;
* `distributed_fit`: the loop that stands in for `fit` for Keras 3 under MWMS and PSS;
* `preemption`: SIGTERM saves a checkpoint, then the task exits for a restart;
* `restore_point`: every MultiWorkerMirroredStrategy task resumes from the same checkpoint;
* `scratch`: the temporary directories a task makes, removed if it leaves early;
* `hooks`: `KerasHooks`, how each step of a role's sequence (`trainexec.tasks`) is done;
* `keepalive`: gRPC keepalive, so a ParameterServerStrategy peer cut off is noticed;
* `restart_rule`: the restart group a task announces to `trainexec launch`;
* `target`: `KerasTarget`, restoring Keras and custom-loop checkpoints;
* `exporters`: SavedModel exporters for Keras models;
* `sidecar`: `SidecarEvaluator`;
* `callbacks`: `TrainingCompleteCallback`, the completion record from `model.fit`;
* `input_data`: calling a job's `input_fn` and checking what it returns;
* `log_values`: Keras `logs` values as callbacks and History get them;
* `progress`: a progress report every N steps (the `step 200/600: loss = ...` line);
* `summaries`: training summaries for TensorBoard, laid out as an Estimator's;
* `first_checkpoint_hint`: the hint `SidecarEvaluator` logs while no checkpoint appears;
* `ps_links`: a ParameterServerStrategy chief waits until every worker reaches every ps;
* `coordinator_release`: the PSS chief stops its coordinator's threads once training is over;
* `compat/`: every private TensorFlow / Keras attribute or patch it relies on, with its
  inventory.
"""
