"""What an export serves: `PredictOutput`, `ClassificationOutput`, `RegressionOutput`.

Each turns into one SavedModel signature over the serving input's receiver tensors,
with the signature helpers of `tf.compat.v1.saved_model` (the method names and
input/output keys TF Serving's Predict, Classify and Regress APIs expect).

Example:
    ```python
    export_outputs = {"serving_default": PredictOutput({"class": classes}),
                      "classify": ClassificationOutput(scores=probabilities)}
    ```
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
           "SINGLE_OUTPUT_KEY"]

SINGLE_OUTPUT_KEY = "output"  # the output name of a PredictOutput given one tensor


class ExportOutput:
    """Base class: one signature of an export."""

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """The `SignatureDef` of this output over `receiver_tensors`."""
        raise NotImplementedError


def _single_string_input(kind: str, receiver_tensors: Mapping[str, Any]) -> Any:
    import tensorflow as tf

    if len(receiver_tensors) != 1:
        raise ValueError(
            f"{kind} signatures take one input, a batch of serialized tf.Example strings; "
            f"the serving input has {len(receiver_tensors)} ({', '.join(receiver_tensors)}). "
            "Use build_parsing_serving_input_receiver_fn, or a PredictOutput")
    (tensor,) = receiver_tensors.values()
    if tensor.dtype != tf.string:
        raise ValueError(
            f"{kind} signatures take serialized tf.Example strings; the serving input is "
            f"{tensor.dtype.name}. Use build_parsing_serving_input_receiver_fn, or a "
            "PredictOutput")
    return tensor


class PredictOutput(ExportOutput):
    """Any tensors, by name: a Tensor (named `output`) or a dict of Tensors (a tuple
    key, as multi-head models give, is joined with `/`)."""

    def __init__(self, outputs: Any) -> None:
        import tensorflow as tf

        if not isinstance(outputs, Mapping):
            outputs = {SINGLE_OUTPUT_KEY: outputs}
        checked = {}
        for key, value in outputs.items():
            if isinstance(key, tuple) and all(isinstance(part, str) for part in key):
                key = "/".join(key)
            if not isinstance(key, str):
                raise ValueError(f"Prediction output key must be a string; got {key!r} "
                                 f"(type {type(key).__name__}). PredictOutput names each "
                                 "output: give a dict keyed by strings")
            if not isinstance(value, (tf.Tensor, tf.SparseTensor)):
                raise ValueError(f"Prediction output value must be a Tensor; got {value!r} "
                                 f"(type {type(value).__name__}) for {key!r}. PredictOutput "
                                 "serves tensors of the graph the model_fn built")
            checked[key] = value
        self.outputs = checked

    def as_signature_def(self, receiver_tensors):
        import tensorflow as tf

        return tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


class ClassificationOutput(ExportOutput):
    """Class `scores` (float, [batch, classes]) and/or `classes` (string labels)."""

    def __init__(self, scores: Any = None, classes: Any = None) -> None:
        import tensorflow as tf

        if scores is not None and not (isinstance(scores, tf.Tensor)
                                       and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got "
                             f"{scores!r}. ClassificationOutput `scores` are the classes' "
                             "scores or probabilities, [batch, classes] (tf.cast(x, "
                             "tf.float32) turns integers into floats)")
        if classes is not None and not (isinstance(classes, tf.Tensor)
                                        and classes.dtype == tf.string):
            raise ValueError(f"Classification classes must be a string Tensor; got "
                             f"{classes!r}. ClassificationOutput `classes` are labels: "
                             "tf.strings.as_string turns class ids into strings")
        if scores is None and classes is None:
            raise ValueError("Cannot create a ClassificationOutput with empty arguments. At "
                             "least one of `scores` and `classes` must be defined: "
                             "ClassificationOutput needs `scores`, `classes` or both")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        import tensorflow as tf

        examples = _single_string_input("Classification", receiver_tensors)
        return tf.compat.v1.saved_model.classification_signature_def(
            examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """One float prediction per example (`value`)."""

    def __init__(self, value: Any) -> None:
        import tensorflow as tf

        if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got "
                             f"{value!r}. RegressionOutput `value` is one float prediction "
                             "per example (tf.cast(x, tf.float32) turns integers into "
                             "floats)")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        import tensorflow as tf

        examples = _single_string_input("Regression", receiver_tensors)
        return tf.compat.v1.saved_model.regression_signature_def(examples, self.value)
