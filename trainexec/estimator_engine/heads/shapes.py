"""The shape checks every head makes on logits, labels and example weights.

With tf.estimator's rules and words: eagerly (and for what a graph knows statically)
a ValueError at once; in a graph, for what is known only when it runs, an assertion
op the value depends on, failing with `InvalidArgumentError` and the shapes seen
(`[expected_labels_shape: ] [2 1] [labels_shape: ] [2 2]`). Each message then says
what to change.

* logits: `[D0, ... DN, logits_dimension]` (rank 2 at least);
* labels: `[D0, ... DN, dimension]`, or `[D0, ... DN]` when the dimension is 1 (a
  trailing 1 is added); never a SparseTensor (except multi-label's, converted first);
* weights (`weight_column`): `[D0, ... DN]` (a trailing 1 is added) or
  `[D0, ... DN, 1]`, and for regression also `[D0, ... DN, logits_dimension]`;
* class ids in `[0, n_classes)`, checked when the batch runs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LABEL_NONE_ERR", "check_label_range", "check_labels", "check_logits",
           "check_weights"]

LABEL_NONE_ERR = (
    "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: "
    "Check that your data contains your label feature. Check that your input_fn properly "
    "parses and returns labels. (The head was called for training or evaluation with "
    "labels=None: the input_fn must return (features, labels).)")
_SPARSE_LABEL_ERR = (
    "SparseTensor labels are not supported. Labels must be a Tensor of shape [D0, D1, ..., "
    "DN, {0}], e.g. [batch_size, {0}]. Suggested Fix (1): Check the label feature in your "
    "data. Each example must contain {0} value(s). If not, your choice of label was "
    "probably incorrect. Suggested Fix (2): In your input_fn, use tf.sparse.to_dense() to "
    "turn labels into a Tensor.")
_MISMATCHED_LABEL_DIM_ERR = (
    "Mismatched label shape. Expected labels dimension={0}.  Received {1}. Suggested Fix: "
    "If your classifier expects one-hot encoding label, check your n_classes argument to "
    "the estimator and/or the shape of your label. Otherwise, check the shape of your "
    "label. (The head takes one class id per example, or label_dimension values.)")
_LABEL_SHAPE_ERR = ("labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your "
                    "n_classes argument to the head and/or the shape of your label.")
_LOGITS_SHAPE_ERR = "logits shape must be [D0, D1, ... DN, logits_dimension]"
_LOGITS_FIX = ("; the model's last layer must have head.logits_dimension ({}) units")
_WEIGHTS_ERR = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
_WEIGHTS_PER_LOGIT_ERR = ("weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
                          "[D0, D1, ... DN, logits_dimension]")
_WEIGHTS_FIX = ("weight_column {!r} gives each example one weight: one value per example "
                "(per logit for regression)")


def check_logits(logits: Any, dimension: Any) -> Any:
    """`logits` as float32, checked to be `[D0, ... DN, dimension]`."""
    import tensorflow as tf

    logits = tf.cast(logits, tf.float32)
    shape = logits.shape
    if tf.executing_eagerly():
        if shape.rank < 2:
            raise ValueError(f"logits must have rank at least 2.  Received rank "
                             f"{shape.rank}, shape {tuple(shape.as_list())}"
                             + _LOGITS_FIX.format(dimension))
        if isinstance(dimension, int) and shape[-1] != dimension:
            raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], got "
                             f"{tuple(shape.as_list())}" + _LOGITS_FIX.format(dimension))
        return logits
    with tf.compat.v1.name_scope("logits") as scope:
        dynamic = tf.shape(logits)
        rank_ok = tf.compat.v1.debugging.assert_rank_at_least(
            logits, 2, data=[dynamic], message=_LOGITS_SHAPE_ERR + _LOGITS_FIX.format(
                dimension))
        with tf.control_dependencies([rank_ok]):
            if shape.rank is not None and shape[-1] is not None:
                if isinstance(dimension, int) and shape[-1] != dimension:
                    raise ValueError(f"logits shape must be [D0, D1, ... DN, "
                                     f"logits_dimension], got {shape}"
                                     + _LOGITS_FIX.format(dimension))
                return logits
            dim_ok = tf.compat.v1.debugging.assert_equal(
                dimension, dynamic[-1], data=[dynamic],
                message=_LOGITS_SHAPE_ERR + _LOGITS_FIX.format(dimension))
            with tf.control_dependencies([dim_ok]):
                return tf.identity(logits, name=scope)


def check_labels(labels: Any, logits: Any, dimension: int) -> Any:
    """Dense `labels` matching `logits` with a last dimension of `dimension`, a
    trailing dimension added when the labels have one dimension fewer."""
    import tensorflow as tf

    if labels is None:
        raise ValueError(LABEL_NONE_ERR)
    if isinstance(labels, tf.SparseTensor):
        raise ValueError(_SPARSE_LABEL_ERR.format(dimension))
    labels = tf.convert_to_tensor(labels)
    with tf.compat.v1.name_scope("labels") as scope:
        if (labels.shape.rank is not None and logits.shape.rank is not None
                and labels.shape.rank == logits.shape.rank - 1):
            labels = tf.expand_dims(labels, -1)
        if tf.executing_eagerly():
            return _check_labels_now(labels, logits, dimension)
        rank_ok = tf.compat.v1.debugging.assert_rank_at_least(
            labels, 2, message=_LABEL_SHAPE_ERR.format(dimension))
        with tf.control_dependencies([rank_ok]):
            if labels.shape.rank is not None:
                last = labels.shape[-1]
                if last is not None and last != dimension:
                    raise ValueError(_MISMATCHED_LABEL_DIM_ERR.format(dimension, last))
            expected = tf.concat([tf.shape(logits)[:-1], [dimension]], axis=0)
            got = tf.shape(labels)
            shape_ok = tf.compat.v1.debugging.assert_equal(
                expected, got, message=_LABEL_SHAPE_ERR.format(dimension),
                data=["expected_labels_shape: ", expected, "labels_shape: ", got])
            with tf.control_dependencies([shape_ok]):
                return tf.identity(labels, name=scope)


def _check_labels_now(labels: Any, logits: Any, dimension: int) -> Any:
    shape = tuple(labels.shape.as_list())
    if len(shape) < 2:
        raise ValueError(f"labels must have rank at least 2.  Received rank {len(shape)}, "
                         f"shape {shape}: give labels of shape [batch_size, {dimension}]")
    if shape[-1] != dimension:
        raise ValueError(_MISMATCHED_LABEL_DIM_ERR.format(dimension, shape[-1]))
    expected = tuple(logits.shape.as_list()[:-1]) + (dimension,)
    if expected != shape:
        raise ValueError(f"{_LABEL_SHAPE_ERR.format(dimension)}, expected_labels_shape: "
                         f"{expected}. labels_shape: {shape}. (The labels and the logits "
                         "must have the same batch shape.)")
    return labels


def check_label_range(labels: Any, n_classes: int, message: str | None = None) -> Any:
    """`labels` checked to be in `[0, n_classes)` (when the batch runs, in a graph)."""
    import tensorflow as tf

    fix = "" if message else (f" (a head with n_classes={n_classes} takes class ids 0 to "
                              f"{n_classes - 1}; string labels need label_vocabulary)")
    with tf.compat.v1.name_scope("check_label_range"):
        if tf.executing_eagerly():
            if not bool(tf.reduce_all(labels <= n_classes - 1)):
                raise ValueError((message or f"Labels must be <= {n_classes} - 1") + fix)
            if not bool(tf.reduce_all(labels >= 0)):
                raise ValueError((message or "Labels must be >= 0") + fix)
            return labels
        below = tf.compat.v1.debugging.assert_less_equal(
            labels, tf.cast(n_classes - 1, labels.dtype),
            message=(message or "Labels must be <= n_classes - 1") + fix)
        non_negative = tf.compat.v1.debugging.assert_non_negative(
            labels, message=(message or "Labels must be >= 0") + fix)
        with tf.control_dependencies([below, non_negative]):
            return tf.identity(labels)


def check_weights(weights: Any, logits: Any, column: str,
                  per_logit: bool = False) -> Any:
    """Float32 `weights` of `[D0, ... DN, 1]` (or `[D0, ... DN, logits_dimension]`
    when `per_logit`), from `[D0, ... DN]` by a trailing dimension."""
    import tensorflow as tf

    err = _WEIGHTS_PER_LOGIT_ERR if per_logit else _WEIGHTS_ERR
    fix = _WEIGHTS_FIX.format(column)
    w_shape, l_shape = weights.shape, logits.shape
    if tf.executing_eagerly():
        got, logit_dims = tuple(w_shape.as_list()), tuple(l_shape.as_list())
        if len(got) == len(logit_dims) - 1:
            if logit_dims[:-1] != got:
                raise ValueError(f"{err}, logits_shape: {logit_dims}. weights_shape: "
                                 f"{got}. {fix}")
            return tf.expand_dims(weights, -1)
        allowed = [logit_dims[:-1] + (1,)] + ([logit_dims] if per_logit else [])
        if got not in allowed:
            raise ValueError(f"{err}, logits_shape: {logit_dims}. weights_shape: {got}. "
                             f"{fix}")
        return weights
    if (w_shape.rank is not None and l_shape.rank is not None
            and w_shape.rank not in (l_shape.rank - 1, l_shape.rank)):
        # Known as the graph is built: said now, in these words, not as TensorFlow's
        # "Dimensions must be equal" of comparing shape vectors of two lengths.
        raise ValueError(f"{err}, logits_shape: {l_shape}. weights_shape: {w_shape}. "
                         f"{fix}")
    with tf.compat.v1.name_scope("weights") as scope:
        got_t, logits_t = tf.shape(weights), tf.shape(logits)
        data = ["logits_shape: ", logits_t, "weights_shape: ", got_t]
        if (w_shape.rank is not None and l_shape.rank is not None
                and w_shape.rank == l_shape.rank - 1):
            ok = tf.compat.v1.debugging.assert_equal(logits_t[:-1], got_t,
                                                     message=f"{err}. {fix}", data=data)
            with tf.control_dependencies([ok]):
                return tf.expand_dims(weights, -1, name=scope)
        one_per_row = tf.concat([logits_t[:-1], [1]], axis=0)
        if per_logit:
            fits = tf.reduce_any([_same(logits_t, got_t), _same(one_per_row, got_t)])
            ok = tf.debugging.Assert(fits, [err, *data, fix])
        else:
            ok = tf.compat.v1.debugging.assert_equal(one_per_row, got_t,
                                                     message=f"{err}. {fix}", data=data)
        with tf.control_dependencies([ok]):
            return tf.identity(weights, name=scope)


def _same(a: Any, b: Any) -> Any:
    """Whether two shape vectors are equal (False for different ranks)."""
    import tensorflow as tf

    if a.shape[0] is not None and b.shape[0] is not None and a.shape[0] != b.shape[0]:
        return tf.constant(False)  # known to differ: no graph compares them
    return tf.cond(tf.equal(tf.size(a), tf.size(b)),
                   lambda: tf.reduce_all(tf.equal(a, b)), lambda: tf.constant(False))
