"""Evaluating Keras checkpoints and exporting SavedModels.

* `target`: `KerasTarget`, restoring Keras and custom-loop checkpoints and evaluating them;
* `sidecar`: `SidecarEvaluator`, a dedicated evaluator for Keras and custom-loop runs;
* `first_checkpoint_hint`: the hint `SidecarEvaluator` logs while no checkpoint appears;
* `exporters`: SavedModel exporters for Keras models (`trainexec.exporters`).
"""
