"""What a served model receives: `ServingInputReceiver` and the functions that build one.

A `serving_input_receiver_fn` (called in the export's graph) returns the tensors a
request feeds (`receiver_tensors`: the SavedModel signature's inputs) and the
`features` the `model_fn` gets from them. Both are checked as tf.estimator checks
them, with its words: defined, keyed by strings (ints too for features and labels),
each a Tensor, SparseTensor or RaggedTensor (an object with a `tensor` attribute that
TensorFlow converts, such as a LabeledTensor, stands for that Tensor).

`build_raw_supervised_input_receiver_fn` (tf.estimator.experimental's) gives a
`SupervisedInputReceiver`: placeholders for features and labels both.

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

import re
from typing import Any, Callable, Mapping, NamedTuple

__all__ = ["ServingInputReceiver", "SupervisedInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
           "build_raw_supervised_input_receiver_fn"]

# The key of a single Tensor given where a dict is expected, by field.
_SINGLE_KEYS = {"feature": "feature", "label": "label", "receiver_tensor": "input",
                "receiver_tensors_alternative": "input"}
_EXAMPLES_KEY = "examples"  # the parsing receiver's input
_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_KINDS = "Tensor, SparseTensor, or RaggedTensor."


def _tensor(value: Any, field: str, key: Any, owner: str) -> Any:
    """`value` if it is a Tensor, SparseTensor or RaggedTensor (a LabeledTensor-like
    object becomes its Tensor); ValueError with tf.estimator's words otherwise."""
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)):
        return value
    if hasattr(value, "tensor"):
        try:
            return tf.convert_to_tensor(value)
        except (TypeError, ValueError):
            pass
    where = f"{field} {key}" if key is not None else field
    place = f"`{field}s[{key!r}]`" if key is not None else f"`{field}s`"
    raise ValueError(f"{where} must be a {_KINDS} {owner} {place} is {value!r} (type "
                     f"{type(value).__name__}): give the graph's tensors, e.g. a "
                     "tf.compat.v1.placeholder or what tf.io.parse_example returns")


def _tensor_dict(value: Any, field: str, owner: str, int_keys: bool = False) -> dict:
    """`value` as a dict of tensors by key (a single tensor under its field's key)."""
    if value is None:
        raise ValueError(f"{field}s must be defined. {owner} `{field}s` is None: give a "
                         "Tensor or a dict of Tensors")
    if not isinstance(value, Mapping):
        value = {_SINGLE_KEYS[field]: value}
    checked = {}
    for key, tensor in value.items():
        if not isinstance(key, str) and not (int_keys and isinstance(key, int)
                                             and not isinstance(key, bool)):
            kinds = "strings or ints" if int_keys else "strings"
            raise ValueError(f"{field} keys must be {kinds}: {key!r}. {owner} `{field}s` "
                             f"has a key of type {type(key).__name__}")
        checked[key] = _tensor(tensor, field, key, owner)
    return checked


def _single(value: Any, field: str, owner: str) -> Any:
    """A dict of tensors (checked, kept as given) or one tensor, as features or labels."""
    if value is None:
        raise ValueError(f"{field}s must be defined. {owner} `{field}s` is None: give a "
                         "Tensor or a dict of Tensors")
    if isinstance(value, Mapping):
        return _tensor_dict(value, field, owner, int_keys=True)
    return _tensor(value, field, None, owner)


def _alternatives(value: Any, owner: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"receiver_tensors_alternatives must be a dict: {value!r}. {owner} "
                         "`receiver_tensors_alternatives` maps a name to receiver tensors")
    return {name: _tensor_dict(tensors, "receiver_tensors_alternative", owner)
            for name, tensors in value.items()}


class ServingInputReceiver(NamedTuple("ServingInputReceiver", [
        ("features", dict), ("receiver_tensors", dict),
        ("receiver_tensors_alternatives", dict)])):
    """`features` for the `model_fn` (a Tensor becomes `{"feature": tensor}`) and the
    `receiver_tensors` a request feeds (a Tensor becomes `{"input": tensor}`);
    `receiver_tensors_alternatives` name further groups of inputs, each a signature
    (none: `{}`)."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: Any = None) -> "ServingInputReceiver":
        owner = "ServingInputReceiver"
        return super().__new__(
            cls, _tensor_dict(features, "feature", owner, int_keys=True),
            _tensor_dict(receiver_tensors, "receiver_tensor", owner),
            _alternatives(receiver_tensors_alternatives, owner))


class TensorServingInputReceiver(NamedTuple("TensorServingInputReceiver", [
        ("features", Any), ("receiver_tensors", dict),
        ("receiver_tensors_alternatives", dict)])):
    """Like `ServingInputReceiver`, but the `model_fn` gets `features` as the one
    Tensor it is, not a dict."""

    def __new__(cls, features: Any, receiver_tensors: Any,
                receiver_tensors_alternatives: Any = None) -> "TensorServingInputReceiver":
        owner = "TensorServingInputReceiver"
        if features is None:
            raise ValueError(f"features must be defined. {owner} `features` is None: give "
                             "the one Tensor the model_fn gets")
        if isinstance(features, Mapping):
            raise ValueError(f"feature must be a {_KINDS} {owner} `features` must be a "
                             "single Tensor, given a dict: for a dict of features use "
                             "ServingInputReceiver")
        return super().__new__(
            cls, _tensor(features, "feature", None, owner),
            _tensor_dict(receiver_tensors, "receiver_tensor", owner),
            _alternatives(receiver_tensors_alternatives, owner))


class SupervisedInputReceiver(NamedTuple("SupervisedInputReceiver", [
        ("features", Any), ("labels", Any), ("receiver_tensors", dict)])):
    """`features` and `labels` (each a Tensor or a dict of Tensors, kept as given) and
    the `receiver_tensors` that feed them: what
    `build_raw_supervised_input_receiver_fn`'s function returns."""

    def __new__(cls, features: Any, labels: Any,
                receiver_tensors: Any) -> "SupervisedInputReceiver":
        owner = "SupervisedInputReceiver"
        return super().__new__(cls, _single(features, "feature", owner),
                               _single(labels, "label", owner),
                               _tensor_dict(receiver_tensors, "receiver_tensor", owner))


def _check_source(function: str, field: str, key: Any, tensor: Any) -> None:
    import tensorflow as tf

    if not isinstance(tensor, tf.Tensor):
        place = f"{field}[{key!r}]" if key is not None else field
        raise ValueError(f"{function}: {place} must be a Tensor (its dtype and shape are "
                         f"copied), given: {tensor!r}")


def _placeholder_like(tensor: Any, batch_size: int | None, name: Any) -> Any:
    """A placeholder of `tensor`'s dtype and shape, its first dimension the batch
    (`batch_size`, or any); of unknown shape when `tensor`'s rank is unknown."""
    import tensorflow as tf

    shape = tf.TensorShape([batch_size]).concatenate(tensor.shape[1:])
    name = name if isinstance(name, str) and _OP_NAME.match(name) else None
    return tf.compat.v1.placeholder(tensor.dtype, shape, name=name)


def _placeholders(given: Any, batch_size: int | None, single_key: str) -> tuple[Any, dict]:
    """(what the model gets: a dict or one placeholder, the receiver tensors by key)."""
    if isinstance(given, Mapping):
        made = {key: _placeholder_like(tensor, batch_size, key)
                for key, tensor in given.items()}
        return made, dict(made)
    made = _placeholder_like(given, batch_size, single_key)
    return made, {single_key: made}


def build_raw_serving_input_receiver_fn(features: Any, default_batch_size: int | None = None
                                        ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn feeding placeholders shaped like `features` (a dict of Tensors or
    one Tensor), their first dimension the batch (`default_batch_size`, or any); a
    tensor of unknown shape gives a placeholder of unknown shape."""
    function = "build_raw_serving_input_receiver_fn"
    given = features if isinstance(features, Mapping) else {None: features}
    for key, tensor in given.items():
        _check_source(function, "features", key, tensor)

    def serving_input_receiver_fn() -> ServingInputReceiver:
        made, receivers = _placeholders(features, default_batch_size,
                                        _SINGLE_KEYS["receiver_tensor"])
        return ServingInputReceiver(made, receivers)

    return serving_input_receiver_fn


def build_raw_supervised_input_receiver_fn(features: Any, labels: Any,
                                           default_batch_size: int | None = None
                                           ) -> Callable[[], SupervisedInputReceiver]:
    """A receiver fn feeding placeholders shaped like `features` and `labels` (each a
    dict of Tensors or one Tensor, `input` and `label` as receiver keys), as the
    `model_fn` gets them. ValueError when features and labels share a key."""
    function = "build_raw_supervised_input_receiver_fn"
    feature_keys = (set(features) if isinstance(features, Mapping)
                    else {_SINGLE_KEYS["receiver_tensor"]})
    label_keys = set(labels) if isinstance(labels, Mapping) else {_SINGLE_KEYS["label"]}
    overlap = feature_keys & label_keys
    if overlap:
        raise ValueError(f"Features and labels must have distinct keys. Found overlapping "
                         f"keys: {sorted(overlap, key=str)}. {function} makes one receiver "
                         "tensor per key: rename the labels' or the features' keys")
    for field, value in (("features", features), ("labels", labels)):
        for key, tensor in (value.items() if isinstance(value, Mapping) else [(None, value)]):
            _check_source(function, field, key, tensor)

    def supervised_input_receiver_fn() -> SupervisedInputReceiver:
        made_features, receivers = _placeholders(features, default_batch_size,
                                                 _SINGLE_KEYS["receiver_tensor"])
        made_labels, label_receivers = _placeholders(labels, default_batch_size,
                                                     _SINGLE_KEYS["label"])
        return SupervisedInputReceiver(made_features, made_labels,
                                       {**receivers, **label_receivers})

    return supervised_input_receiver_fn


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
