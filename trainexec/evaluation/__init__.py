"""The framework-neutral evaluation engine.

It knows models only through `target.EvaluationTarget`, and exporters through
`trainexec.exporter_protocol` (below it: the specs check exporter lists). Modules, bottom up:

* `target`: the target protocol and the errors a checkpoint can raise;
* `export_files`: an exporter's directory: numbered exports, published whole (a rename,
  or on object storage the SavedModel's graph last), clean-up;
* `staged_export`: tf.estimator's exporters made to publish whole exports on `gs://`;
* `one_pass`: one evaluation of one checkpoint, then the exporters (`Evaluator`);
* `listeners`: hooks around each evaluation (`ContinuousEvalListener`);
* `policy`: the pure "what next?" of the continuous evaluation (`decide`);
* `watch`: waiting for a directory to change (inotify, else sleeping);
* `loop`: the driver that observes, asks `policy.decide` and acts;
* `final_export`: the final export, once per run, across restarts;
* `lease`: one evaluator per evaluation state directory;
* `lease_store`: the lease file's exclusive create and conditional changes, on files
  and on `gs://` (generation preconditions);
* `evaluate_on_save`: evaluation after a training task's own checkpoint saves;
* `evaluator_role`: the evaluator task of every trainer;
* `summaries`: each evaluation's metrics for TensorBoard (`EvalSummaries`);
* `status_report`: the evaluator's status record for `trainexec launch`;
"""
