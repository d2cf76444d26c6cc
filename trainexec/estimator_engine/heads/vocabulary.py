"""Class ids and class names: a classification head's `label_vocabulary` tables and its
`all_class_ids` / `all_classes` predictions.

The tables (`tf.lookup.StaticHashTable`) are made in the graph that uses them each
time a head builds one (an Estimator builds a new graph for training, evaluation and
prediction); in a graph their initializers join the `table_initializer` collection,
which the Estimator's scaffold runs. A label missing from the vocabulary becomes id -1,
which the range check refuses when the batch runs; an id without a name becomes "UNK".
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["all_class_ids", "all_classes", "class_ids_of", "class_names_of",
           "check_vocabulary"]


def check_vocabulary(label_vocabulary: Any, n_classes: int | None = None,
                     words: str = "label_vocabulary should be a list or a tuple") -> Any:
    """`label_vocabulary` if it is None, a list or a tuple; ValueError otherwise."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"{words}. Given type: {type(label_vocabulary)}. Give the class "
                         "names in class-id order, e.g. label_vocabulary=['no', 'yes']")
    return label_vocabulary


def class_ids_of(labels: Any, vocabulary: Sequence[str]) -> Any:
    """String `labels` as int64 class ids (their index in `vocabulary`, -1 if absent)."""
    import tensorflow as tf

    keys = tf.constant(list(vocabulary), dtype=tf.string)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, tf.range(len(vocabulary), dtype=tf.int64)),
        default_value=-1, name="class_id_lookup")
    return table.lookup(labels)


def class_names_of(class_ids: Any, vocabulary: Sequence[str]) -> Any:
    """int64 `class_ids` as their names in `vocabulary` ("UNK" when out of range)."""
    import tensorflow as tf

    values = tf.constant(list(vocabulary), dtype=tf.string)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.range(len(vocabulary), dtype=tf.int64),
                                            values),
        default_value="UNK", name="class_string_lookup")
    return table.lookup(tf.cast(class_ids, tf.int64))


def all_class_ids(logits: Any, n_classes: int) -> Any:
    """[batch_size, n_classes]: every class id, on every row (int32)."""
    import tensorflow as tf

    return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [tf.shape(logits)[0], 1])


def all_classes(logits: Any, n_classes: int, vocabulary: Sequence[str] | None = None) -> Any:
    """[batch_size, n_classes]: every class name (the vocabulary's, or the ids as
    strings), on every row."""
    import tensorflow as tf

    if vocabulary:
        names = tf.convert_to_tensor([list(vocabulary)])
    else:
        names = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), 0))
    return tf.tile(names, [tf.shape(logits)[0], 1])
