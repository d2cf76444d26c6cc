"""`SessionRunHook` and the standard hooks, as tf.estimator exported them.

They are TensorFlow's own public classes (`tf.compat.v1.train`), which every line
keeps; tf.estimator re-exported the same objects, so a hook written for
`tf.estimator.SessionRunHook` is one of these.

Example:
    ```python
    class Counter(SessionRunHook):
        def after_run(self, run_context, run_values): ...
    ```
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
           "GlobalStepWaiterHook", "LoggingTensorHook", "NanLossDuringTrainingError",
           "NanTensorHook", "ProfilerHook", "SecondOrStepTimer", "SessionRunArgs",
           "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
           "StopAtStepHook", "SummarySaverHook", "VocabInfo"]

_train = tf.compat.v1.train
CheckpointSaverHook = _train.CheckpointSaverHook
CheckpointSaverListener = _train.CheckpointSaverListener
FeedFnHook = _train.FeedFnHook
FinalOpsHook = _train.FinalOpsHook
GlobalStepWaiterHook = _train.GlobalStepWaiterHook
LoggingTensorHook = _train.LoggingTensorHook
NanLossDuringTrainingError = _train.NanLossDuringTrainingError
NanTensorHook = _train.NanTensorHook
ProfilerHook = _train.ProfilerHook
SecondOrStepTimer = _train.SecondOrStepTimer
SessionRunArgs = _train.SessionRunArgs
SessionRunContext = _train.SessionRunContext
SessionRunHook = _train.SessionRunHook
SessionRunValues = _train.SessionRunValues
StepCounterHook = _train.StepCounterHook
StopAtStepHook = _train.StopAtStepHook
SummarySaverHook = _train.SummarySaverHook
VocabInfo = _train.VocabInfo
