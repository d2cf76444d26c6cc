"""Keras models (Keras 3 and tf_keras): training in every role, and evaluation.

The job and its settings, here at the root:

* `trainer`: `KerasTrainer`, one job in every role;
* `hooks`: `KerasHooks`, how each step of a role's sequence (`trainexec.tasks`) is done;
* `strategy`: which `tf.distribute` strategy a task uses, and what it does (from TF_CONFIG;
  a ParameterServerStrategy task's channels get `trainexec.cluster.keepalive`).
* `keepalive`: `trainexec.cluster.keepalive`'s names under the module's first name.

The rest, by concern:

* `fit/`: training to `max_steps` (`model.fit`, or trainexec's own loop for Keras 3 under
  MultiWorkerMirroredStrategy and ParameterServerStrategy), its input, callbacks,
  progress reports and summaries, and the checkpoint every task resumes from;
* `faults/`: preemption, restarts and peers: SIGTERM saves a checkpoint, the restart
  group a task announces, a ParameterServerStrategy chief's links to every ps and its
  coordinator's threads, the temporary directories removed if a task leaves early;
* `evaluate/`: evaluating checkpoints and exporting: `KerasTarget`, `SidecarEvaluator`,
  the SavedModel exporters;
* `compat/`: every private TensorFlow / Keras attribute or patch it relies on, with its
  inventory.

The public names are `trainexec.KerasTrainer`, `trainexec.SidecarEvaluator`,
`trainexec.TrainingCompleteCallback`, `trainexec.exporters` and `trainexec.keras_strategy`.
"""
