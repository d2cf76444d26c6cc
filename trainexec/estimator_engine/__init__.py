"""trainexec's own `model_fn` engine: tf.estimator's custom-model surface on public
TensorFlow only (`tf.compat.v1` graphs, sessions, hooks, savers, SavedModel builder),
on every TensorFlow line trainexec supports. Users import it as `trainexec.estimator`.

* `model_spec`: `ModeKeys`, `EstimatorSpec` (validated);
* `run_config`: `RunConfig` (the cluster from TF_CONFIG via `ClusterConfig`);
* `calls`: checking and calling a `model_fn`;
* `input_fn`: calling an `input_fn` and reading what it returns (datasets, tensors,
  Python values);
* `graph`: one mode's graph on this task's devices; the Saver tf.estimator used;
* `training`: `Estimator.train` (MonitoredSession, chief and worker sessions);
* `evaluation`: `Estimator.evaluate` and the persistent evaluation graph;
* `hook_runner`: one step in a plain session with SessionRunHooks;
* `eval_summaries`: the eval events under `model_dir/eval[_<name>]`;
* `prediction`: `Estimator.predict`;
* `serving_input`, `export_outputs`, `saved_model`: serving SavedModels;
* `exporters`: `LatestExporter`, `BestExporter`, `FinalExporter`;
* `warm_start`: `WarmStartSettings`;
* `session_hooks`: `SessionRunHook` and the standard hooks (TensorFlow's own);
* `estimator`: `Estimator`.

`tests/test_estimator_engine_estimator.py` (`test_the_engine_uses_public_tensorflow_only`)
checks that nothing here reaches into TensorFlow's internal modules.
"""
