"""trainexec/estimator_engine/inputs/pandas_io.py: `pandas_input_fn` gives what
tf.estimator's did (the contracts of tf.estimator's pandas_io_test, in our words): a
DataFrame's columns without its index, labels from a Series or a DataFrame (names
shared with the features kept apart), epochs and the end of the input, and the errors
tf.estimator raised, in its words, then what to do; pandas imported only when used."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from input_readers import columns, read_all
from trainexec.estimator_engine.inputs.pandas_io import pandas_input_fn

pytestmark = pytest.mark.tf_line

pd = pytest.importorskip("pandas", reason="pandas_input_fn needs pandas: pip install pandas")

IN_ORDER = dict(batch_size=2, shuffle=False, num_epochs=1)


def frame(rows=4):
    index = np.arange(100, 100 + rows)
    x = pd.DataFrame({"a": np.arange(rows), "b": np.arange(32, 32 + rows)}, index=index)
    return x, pd.Series(np.arange(-32, -32 + rows), index=index)


def labels_frame(**renamed):
    x, _ = frame()
    y = pd.DataFrame({"a_target": np.arange(10, 14), "b_target": np.arange(50, 54)},
                     index=x.index)
    return x, y.rename(columns=renamed)


def test_the_columns_without_the_index_and_a_series_as_labels():
    got = read_all(pandas_input_fn(*frame(), **IN_ORDER))
    assert [columns(batch) for batch in got] == [({"a": [0, 1], "b": [32, 33]}, [-32, -31]),
                                                 ({"a": [2, 3], "b": [34, 35]}, [-30, -29])]


@pytest.mark.parametrize("renamed, expected", [
    ({}, {"a_target": [10, 11], "b_target": [50, 51]}),
    ({"a_target": "a", "b_target": "b"}, {"a": [10, 11], "b": [50, 51]}),
    ({"a_target": "a", "b_target": "a_n"}, {"a": [10, 11], "a_n": [50, 51]}),
], ids=["own-names", "names-of-features", "name-and-a-derived-one"])
def test_a_dataframe_of_labels_keeps_its_names(renamed, expected):
    got = read_all(pandas_input_fn(*labels_frame(**renamed), **IN_ORDER))
    features, labels = columns(got[0])
    assert features == {"a": [0, 1], "b": [32, 33]} and labels == expected


def test_features_alone_without_y():
    got = read_all(pandas_input_fn(frame()[0], y=None, **IN_ORDER))
    assert columns(got[0]) == {"a": [0, 1], "b": [32, 33]}


@pytest.mark.parametrize("rows, options, batches", [
    (2, dict(batch_size=128, num_epochs=2), [[0, 1, 0, 1]]),
    (5, dict(batch_size=2), [[0, 1], [2, 3], [4]]),
    (4, dict(batch_size=4), [[0, 1, 2, 3]]),
    (4, dict(batch_size=3), [[0, 1, 2], [3]]),
], ids=["large-batch-two-epochs", "last-batch-short", "one-batch", "uneven"])
def test_epochs_and_the_end_in_order(rows, options, batches):
    got = read_all(pandas_input_fn(*frame(rows), **{**IN_ORDER, **options}))
    assert [batch[0]["a"].tolist() for batch in got] == batches
    assert [batch[1].tolist() for batch in got] == [[v - 32 for v in b] for b in batches]


@pytest.mark.parametrize("options, count", [
    (dict(batch_size=4, num_epochs=1), 1),
    (dict(batch_size=2, num_epochs=2, queue_capacity=None), 4),
], ids=["one-epoch", "two-epochs-capacity-sized-to-the-data"])
def test_shuffled_reads_end_after_the_epochs(options, count):
    got = read_all(pandas_input_fn(*frame(), shuffle=True, **options))
    assert len(got) == count
    assert sorted(sum((batch[0]["a"].tolist() for batch in got), [])) == \
        sorted(list(range(4)) * options["num_epochs"])


def test_making_input_fns_again_and_again():
    x, y = frame()
    for shuffle in (False, True, False, True):
        with tf.Graph().as_default():
            pandas_input_fn(x, y, batch_size=2, shuffle=shuffle, num_epochs=1)()


def test_text_columns_and_the_frames_are_copied():
    x = pd.DataFrame({"kind": ["sedan", "wagon"], "price": [1.5, 2.5]})
    input_fn = pandas_input_fn(x, batch_size=2, shuffle=False)
    x.loc[0, "price"] = 99.0  # after the input_fn was made
    (got,) = read_all(input_fn)
    assert columns(got) == {"kind": [b"sedan", b"wagon"], "price": [1.5, 2.5]}


@pytest.mark.parametrize("make, error, words", [
    (lambda x, y: dict(x=x, y=pd.Series(np.arange(-32, -28))), ValueError,
     ["Index for x and y are mismatched", "Give y the index of x"]),
    (lambda x, y: dict(x=x, y=y, target_column=["one", "two"]), TypeError,
     ["target_column must be a string type"]),
    (lambda x, y: dict(x=x, y=y, target_column="a"), ValueError,
     ["Cannot use name a for target column: DataFrame already has a column with that "
      "name", "pass another target_column"]),
    (lambda x, y: dict(x=x, y=y, shuffle=None), ValueError,
     ["shuffle must be provided and explicitly set as boolean", "got None",
      "pandas_input_fn(..., shuffle=True)"]),
    (lambda x, y: dict(x=x["a"], y=y), TypeError,
     ["x must be a pandas DataFrame, got Series", "to_frame()"]),
    (lambda x, y: dict(x=x, y=y.to_numpy()), TypeError,
     ["y must be a pandas Series or DataFrame", "got ndarray"]),
    (lambda x, y: dict(x=x.assign(kind=pd.Categorical(["p", "q", "p", "q"])), y=y),
     TypeError, ["x column 'kind' has dtype category", ".cat.codes"]),
    (lambda x, y: dict(x=x.assign(kind=pd.array([1, None, 3, 4], dtype="Int64")), y=y),
     TypeError, ["x column 'kind' has dtype Int64 (holding integer values)"]),
    (lambda x, y: dict(x=x.assign(kind=["p", 2, "q", "r"]), y=y), TypeError,
     ["x column 'kind' has dtype object (holding mixed-integer values)"]),
    (lambda x, y: dict(x=x.assign(kind=["p", None, "q", "r"]), y=y), ValueError,
     ["x column 'kind' has missing values", "fillna"]),
    (lambda x, y: dict(x=pd.concat([x, x["a"]], axis=1), y=y), ValueError,
     ["x has more than one column named a", "rename them"]),
    (lambda x, y: dict(x=x, y=y, queue_capacity=0), ValueError,
     ["pandas_input_fn: queue_capacity must be an integer > 0 (or None"]),
], ids=["index-mismatch", "target-column-a-list", "target-column-taken",
        "shuffle-not-given", "x-a-series", "y-an-array", "a-category-column",
        "nullable-integers", "mixed-objects", "missing-text", "a-column-twice", "no-capacity"])
def test_bad_inputs_are_refused_in_tensorflows_words_then_ours(make, error, words):
    kwargs = {"batch_size": 2, "shuffle": False, "num_epochs": 1, **make(*frame())}
    with pytest.raises(error) as raised:
        pandas_input_fn(**kwargs)
    assert all(word in str(raised.value) for word in words), str(raised.value)


def test_pandas_is_loaded_on_first_use_and_its_absence_says_how_to_install_it():
    code = ("import sys\n"
            "from trainexec.estimator import inputs\n"
            "assert 'pandas' not in sys.modules, 'importing the inputs loaded pandas'\n"
            "sys.modules['pandas'] = None  # as if it were not installed\n"
            "try:\n"
            "    inputs.pandas_input_fn(None, shuffle=False)\n"
            "except TypeError as err:\n"
            "    print(err)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pandas_input_fn should not be called without pandas installed" in done.stdout
    assert "pip install pandas" in done.stdout
