"""`trainexec.estimator.export`: what tf.estimator's `export` module held for serving.

Example:
    ```python
    from trainexec.estimator import export
    receiver_fn = export.build_parsing_serving_input_receiver_fn(feature_spec)
    outputs = {"serving_default": export.PredictOutput({"scores": scores})}
    ```
"""

from trainexec.estimator_engine.export_outputs import (ClassificationOutput, ExportOutput,
                                                       PredictOutput, RegressionOutput)
from trainexec.estimator_engine.serving_input import (
    ServingInputReceiver, TensorServingInputReceiver, build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn)

__all__ = ["ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
           "ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]
