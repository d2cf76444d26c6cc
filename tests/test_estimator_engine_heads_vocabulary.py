"""The heads' `label_vocabulary` helpers: the argument check, the name -> id and
id -> name tables (in a tf.compat.v1 graph, initialized by the graph's
`tables_initializer`, as an Estimator's scaffold does) and the `all_class_ids` /
`all_classes` predictions, at a batch size known only when the graph runs."""

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.heads import vocabulary

pytestmark = pytest.mark.tf_line

VOCABULARY = ["cat", "dog", "emu"]


@pytest.mark.parametrize("given", [None, ["no", "yes"], ("no", "yes")],
                         ids=["none", "list", "tuple"])
def test_none_a_list_or_a_tuple_is_taken_as_given(given):
    assert vocabulary.check_vocabulary(given) is given


def test_any_other_vocabulary_is_refused_with_its_type_and_the_expected_form():
    with pytest.raises(ValueError) as raised:
        vocabulary.check_vocabulary("no,yes")
    assert str(raised.value).startswith("label_vocabulary should be a list or a tuple. "
                                        "Given type: <class 'str'>.")
    assert "label_vocabulary=['no', 'yes']" in str(raised.value)
    with pytest.raises(ValueError,
                       match="^classes must be a list. Given type: <class 'set'>"):
        vocabulary.check_vocabulary({"no", "yes"}, words="classes must be a list")


def test_names_become_their_index_in_the_vocabulary_and_unknown_names_minus_one():
    with tf.Graph().as_default() as graph:
        labels = tf.compat.v1.placeholder(tf.string, [None, 1])
        ids = vocabulary.class_ids_of(labels, VOCABULARY)
        assert ids.dtype == tf.int64
        # The table is the graph's: its initializer waits in the table_initializer
        # collection, and a lookup before it has run fails.
        assert graph.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
        feed = {labels: [[b"emu"], [b"cat"], [b"yak"], [b"dog"], [b"Cat"]]}
        with tf.compat.v1.Session() as session:
            with pytest.raises(tf.errors.FailedPreconditionError):
                session.run(ids, feed)
            session.run(tf.compat.v1.tables_initializer())
            assert session.run(ids, feed).tolist() == [[2], [0], [-1], [1], [-1]]


def test_ids_become_their_names_and_ids_out_of_range_unk():
    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None])  # int32 ids are cast to int64
        names = vocabulary.class_names_of(ids, VOCABULARY)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            assert session.run(names, {ids: [1, 2, 0, 3, -1]}).tolist() == [
                b"dog", b"emu", b"cat", b"UNK", b"UNK"]


def test_each_graph_builds_its_own_tables():
    # As an Estimator does: training, then evaluation, each in a new graph.
    for vocab, label, expected in ((["a", "b"], b"b", 1), (["b", "c", "a"], b"a", 2)):
        with tf.Graph().as_default():
            ids = vocabulary.class_ids_of(tf.constant([label]), vocab)
            back = vocabulary.class_names_of(ids, vocab)
            with tf.compat.v1.Session() as session:
                session.run(tf.compat.v1.tables_initializer())
                id_value, name_value = session.run([ids, back])
                assert id_value.tolist() == [expected] and name_value.tolist() == [label]


def test_all_class_ids_repeat_every_id_on_every_row_of_the_batch():
    with tf.Graph().as_default():
        logits = tf.compat.v1.placeholder(tf.float32, [None, 4])
        ids = vocabulary.all_class_ids(logits, 4)
        assert ids.dtype == tf.int32
        with tf.compat.v1.Session() as session:
            value = session.run(ids, {logits: np.zeros([3, 4], np.float32)})
    assert value.tolist() == [[0, 1, 2, 3]] * 3


@pytest.mark.parametrize("vocab,expected", [
    (VOCABULARY, [b"cat", b"dog", b"emu"]),
    (None, [b"0", b"1", b"2"]),
    ([], [b"0", b"1", b"2"]),  # an empty vocabulary is no vocabulary
], ids=["vocabulary", "none", "empty"])
def test_all_classes_are_the_vocabulary_or_the_ids_as_strings_on_every_row(vocab, expected):
    with tf.Graph().as_default():
        logits = tf.compat.v1.placeholder(tf.float32, [None, 3])
        classes = vocabulary.all_classes(logits, 3, vocab)
        with tf.compat.v1.Session() as session:
            value = session.run(classes, {logits: np.zeros([2, 3], np.float32)})
    assert value.tolist() == [expected, expected]


def test_the_lookups_also_run_eagerly():
    ids = vocabulary.class_ids_of(tf.constant(["dog", "gnu"]), VOCABULARY)
    assert ids.numpy().tolist() == [1, -1]
    names = vocabulary.class_names_of(tf.constant([2, 7], tf.int64), VOCABULARY)
    assert names.numpy().tolist() == [b"emu", b"UNK"]
