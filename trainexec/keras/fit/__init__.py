"""Fitting: a Keras training task runs to `max_steps`, with checkpoints.

* `training`: `model.fit` to `max_steps`, with checkpoints;
* `distributed_fit`: the loop that stands in for `fit` for Keras 3 under MWMS and PSS;
* `input_data`: calling a job's `input_fn` and checking what it returns;
* `restore_point`: every MultiWorkerMirroredStrategy task resumes from the same checkpoint;
* `callbacks`: `TrainingCompleteCallback`, the completion record from a user's `model.fit`;
* `log_values`: Keras `logs` values as callbacks and History get them;
* `progress`: a progress report every N steps (the `step 200/600: loss = ...` line);
* `summaries`: training summaries for TensorBoard, laid out as an Estimator's.
"""
