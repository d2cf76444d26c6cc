"""What a served model receives: `ServingInputReceiver` and the functions that build one.

A `serving_input_receiver_fn` (called in the export's graph) returns the tensors a
request feeds (`receiver_tensors`: the SavedModel signature's inputs) and the
`features` the `model_fn` gets from them.

Example:
    ```python
    def serving_input_receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        return ServingInputReceiver({"x": x}, {"x": x})

    raw = build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 4])})
    parsing = build_parsing_serving_input_receiver_fn(
        {"x": tf.io.FixedLenFeature([4], tf.float32)})
    ```
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

__all__ = ["ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]

_FEATURE_KEY = "feature"    # the key of a single Tensor given as `features`
_RECEIVER_KEY = "input"     # the key of a single Tensor given as `receiver_tensors`
_EXAMPLES_KEY = "examples"  # the parsing receiver's input


def _tensor_dict(field: str, value: Any, single_key: str, int_keys: bool) -> dict:
    """`value` as a dict of Tensors, SparseTensors or RaggedTensors by string key (also
    int keys, for `features`)."""
    import tensorflow as tf

    kinds = (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)
    if not isinstance(value, Mapping):
        value = {single_key: value}
    if not value:
        raise ValueError(f"`{field}` must hold at least one Tensor")
    key_kinds = (str, int) if int_keys else (str,)
    for key, tensor in value.items():
        if not isinstance(key, key_kinds) or isinstance(key, bool):
            raise ValueError(f"`{field}` keys must be strings, given: {key!r}")
        if not isinstance(tensor, kinds):
            raise ValueError(f"`{field}[{key!r}]` must be a Tensor, given: {tensor!r}")
    return dict(value)


def _alternatives(value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError("`receiver_tensors_alternatives` must be a dict of name -> "
                         f"receiver tensors, given: {value!r}")
    return {name: _tensor_dict(f"receiver_tensors_alternatives[{name!r}]", tensors,
                               _RECEIVER_KEY, int_keys=False)
            for name, tensors in value.items()}


class ServingInputReceiver(NamedTuple("ServingInputReceiver", [
        ("features", dict), ("receiver_tensors", dict),
        ("receiver_tensors_alternatives", dict)])):
    """`features` for the `model_fn` (a Tensor becomes `{"feature": tensor}`) and the
    `receiver_tensors` a request feeds (a Tensor becomes `{"input": tensor}`)."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: Any = None) -> "ServingInputReceiver":
        return super().__new__(
            cls, _tensor_dict("features", features, _FEATURE_KEY, int_keys=True),
            _tensor_dict("receiver_tensors", receiver_tensors, _RECEIVER_KEY,
                         int_keys=False),
            _alternatives(receiver_tensors_alternatives))


class TensorServingInputReceiver(NamedTuple("TensorServingInputReceiver", [
        ("features", Any), ("receiver_tensors", dict),
        ("receiver_tensors_alternatives", dict)])):
    """Like `ServingInputReceiver`, but the `model_fn` gets `features` as the one
    Tensor it is, not a dict."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: Any = None) -> "TensorServingInputReceiver":
        import tensorflow as tf

        if not isinstance(features, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)):
            raise ValueError("TensorServingInputReceiver `features` must be a single "
                             f"Tensor, given: {features!r} (for a dict, use "
                             "ServingInputReceiver)")
        return super().__new__(
            cls, features, _tensor_dict("receiver_tensors", receiver_tensors,
                                        _RECEIVER_KEY, int_keys=False),
            _alternatives(receiver_tensors_alternatives))


def build_raw_serving_input_receiver_fn(features: Any, default_batch_size: int | None = None
                                        ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn feeding placeholders shaped like `features` (a dict of Tensors or
    one Tensor), their first dimension the batch (`default_batch_size`, or any)."""
    import tensorflow as tf

    given = features if isinstance(features, Mapping) else {_FEATURE_KEY: features}
    for key, tensor in given.items():
        if not isinstance(tensor, tf.Tensor):
            raise ValueError(f"build_raw_serving_input_receiver_fn: features[{key!r}] must "
                             f"be a Tensor (its dtype and shape are copied), given: {tensor!r}")

    def serving_input_receiver_fn() -> ServingInputReceiver:
        placeholders = {}
        for key, tensor in given.items():
            shape = [default_batch_size] + tensor.shape.as_list()[1:]
            placeholders[key] = tf.compat.v1.placeholder(tensor.dtype, shape, name=key)
        if isinstance(features, Mapping):
            return ServingInputReceiver(placeholders, placeholders)
        return ServingInputReceiver(placeholders[_FEATURE_KEY],
                                    {_RECEIVER_KEY: placeholders[_FEATURE_KEY]})

    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec: Mapping[str, Any],
                                            default_batch_size: int | None = None
                                            ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn taking serialized `tf.Example`s (input `examples`), parsed with
    `feature_spec` (e.g. `tf.feature_column.make_parse_example_spec(columns)`)."""
    import tensorflow as tf

    if not isinstance(feature_spec, Mapping) or not feature_spec:
        raise ValueError("build_parsing_serving_input_receiver_fn: `feature_spec` must be a "
                         f"non-empty dict of feature name -> parsing spec, given: "
                         f"{feature_spec!r}")

    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = tf.compat.v1.placeholder(tf.string, [default_batch_size],
                                              name="input_example_tensor")
        features = tf.io.parse_example(serialized, dict(feature_spec))
        return ServingInputReceiver(features, {_EXAMPLES_KEY: serialized})

    return serving_input_receiver_fn
