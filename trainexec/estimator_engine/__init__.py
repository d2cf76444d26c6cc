"""trainexec's own `model_fn` engine: tf.estimator's custom-model surface on public
TensorFlow only (`tf.compat.v1` graphs, sessions, hooks, savers, SavedModel builder),
on every TensorFlow line trainexec supports. Users import it as `trainexec.estimator`.

* `model_spec`: `ModeKeys`, `EstimatorSpec` (validated as tf.estimator validates it);
* `keras_metrics`: Keras `Metric` objects in `eval_metric_ops`, as evaluation runs them;
* `logit_fn`: `call_logit_fn` (tf.estimator.experimental's);
* `heads/`: the heads (`BinaryClassHead`, `MultiClassHead`, `RegressionHead`,
  `PoissonRegressionHead`, `LogisticRegressionHead`, `MultiLabelHead`, `MultiHead`) over
  their shared loss and metrics core;
* `canned/`: the canned estimators (`DNNClassifier`, `LinearClassifier`,
  `DNNLinearCombinedClassifier`, `BaselineClassifier`, their regressors and `*Estimator`
  forms) over the heads;
* `extenders`: `add_metrics`;
* `run_config`: `RunConfig`, answering as tf.estimator's; `run_config_checks`: its
  value rules; `task_placement`: this task's place, read from TF_CONFIG by tf.estimator's
  rules; `session_configs`: the default session configs (and a cluster task's device
  filters);
* `calls`: checking and calling a `model_fn`;
* `input_fn`: calling an `input_fn` and reading what it returns (datasets, tensors,
  Python values; `inputs`' tensors as the dataset behind them);
* `graph`: one mode's graph on this task's devices; the Saver tf.estimator used;
* `model_fn_keras`: what a `model_fn`'s Keras sees: the same layer names in every
  graph, and how to run a Keras 2 `model_fn` where `tf.keras` is Keras 3;
* `inputs/`: `numpy_input_fn`, `pandas_input_fn` (tf.estimator's `inputs`, on tf.data);
* `training`: `Estimator.train` (MonitoredSession, chief and worker sessions);
* distribution strategies beside it (RunConfig `train_distribute` / `eval_distribute`):
  `strategy_checks`: the strategies taken and those refused; `strategy_setup`: this
  task's copy of the strategy and its session and server configs; `replicated_graph`:
  the `model_fn` once per replica; `collective_hooks`: the saving hooks every
  MultiWorkerMirroredStrategy task runs; `one_session`: such a task's one session, and
  the error that ended it;
* `evaluation`: `Estimator.evaluate` and the persistent evaluation graph;
* `hook_runner`: one step in a plain session with SessionRunHooks;
* `eval_summaries`: the eval events under `model_dir/eval[_<name>]`;
* `prediction`: `Estimator.predict`;
* `serving_input`, `export_outputs`, `saved_model`: serving SavedModels;
* `exporters`: `LatestExporter`, `BestExporter`, `FinalExporter`;
* `warm_start`: `WarmStartSettings`;
* `session_hooks`: `SessionRunHook` and the standard hooks (TensorFlow's own);
* `estimator`: `Estimator`;
* `compat/`: the private Keras and TensorFlow attributes the engine relies on (Keras's
  layer names, tf.estimator's loss scaling under a strategy), and their `INVENTORY`.

`tests/test_estimator_engine_estimator.py` (`test_the_engine_uses_public_tensorflow_only`)
checks that nothing here, `compat/` aside, reaches into TensorFlow's or Keras's internal
modules.
"""
