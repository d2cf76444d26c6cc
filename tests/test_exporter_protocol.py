"""What counts as an exporter, and the checks every exporter list and name get:
one row per bad input, asserting the exception type and the words that say what to fix."""

import pytest

from fakes import RecordingExporter
from trainexec.errors import ConfigError
from trainexec.exporter_protocol import (NotAnExporterError, check_exporter_name,
                                         is_exporter, validate_exporters)

pytestmark = pytest.mark.any_line

BAD_NAMES = [
    ("", "exporter `name` ('') must be a non-empty string"),
    (None, "exporter `name` (None) must be a non-empty string"),
    (5, "exporter `name` (5) is of type int; use a string"),
    (".", "exporter `name` ('.') must be a single directory name"),
    ("..", "it is '..', the parent of the export directory"),
    ("a/b", "it contains a path separator"),
    ("a\\b", "it contains a path separator"),
    ("a\x00b", "it contains a NUL character"),
    ("a\nb", "it contains a control character"),
    (" best", "it has surrounding spaces"),
]


@pytest.mark.parametrize("name,words", BAD_NAMES)
def test_bad_exporter_names_are_refused_with_the_fix(name, words):
    with pytest.raises(ConfigError) as info:
        check_exporter_name(name)
    assert words in str(info.value)
    assert "e.g. 'best'" in str(info.value)  # the fix
    assert isinstance(info.value, ValueError)  # what tf.estimator's EvalSpec raises


def test_good_exporter_names_pass():
    for name in ("best", "final_v2", "a.b", "eval-set-1", ".hidden", "名前"):
        assert check_exporter_name(name) == name



def test_an_exporter_is_a_name_and_an_export_method():
    assert is_exporter(RecordingExporter("best"))
    assert not is_exporter(object())
    named = type("Named", (), {"name": "best"})()
    assert not is_exporter(named)  # no export(...)
    assert not is_exporter(type("Exports", (), {"export": lambda self: None})())


def test_exporter_lists_that_pass():
    a, b = RecordingExporter("a"), RecordingExporter("b")
    assert validate_exporters(None) == ()
    assert validate_exporters([]) == ()
    assert validate_exporters(a) == (a,)  # one exporter, as tf.estimator accepts
    assert validate_exporters([a, b]) == (a, b)
    assert validate_exporters(e for e in (b, a)) == (b, a)


NOT_EXPORTERS = [
    3,
    [object()],
    [RecordingExporter("a"), object()],
    [RecordingExporter("bad/name"), object()],  # every item is checked before any name
]


@pytest.mark.parametrize("exporters", NOT_EXPORTERS)
def test_not_an_exporter_is_both_errors_callers_raise(exporters):
    with pytest.raises(NotAnExporterError) as info:
        validate_exporters(exporters)
    # EvalSpec's callers expect a TypeError (as tf.estimator raises), SidecarEvaluator's
    # a ConfigError: the one check raises both.
    assert isinstance(info.value, TypeError) and isinstance(info.value, ConfigError)
    assert "`exporters` must be an Exporter, an iterable of Exporter" in str(info.value)
    assert "needs a non-empty string `name` and an export(" in str(info.value)


BAD_LISTS = [
    ([RecordingExporter("")], "cannot have a name"),
    ([RecordingExporter(None)], "cannot have a name that is `None`"),
    ([RecordingExporter(5)], "must have a string name"),
    ([RecordingExporter("a/b")], "single directory name"),
    ([RecordingExporter("a"), RecordingExporter("a")], "must have unique names"),
    ([RecordingExporter("a"), RecordingExporter("a")], "must be unique: each names a "
                                                       "directory <model_dir>/export/"),
    # names are checked in turn: the repeat comes before the bad name
    ([RecordingExporter("a"), RecordingExporter("a"), RecordingExporter("b/")],
     "All exporter names: ['a', 'a', 'b/']"),
]


@pytest.mark.parametrize("exporters,words", BAD_LISTS)
def test_bad_names_in_a_list_are_config_errors(exporters, words):
    with pytest.raises(ConfigError) as info:
        validate_exporters(exporters)
    assert words in str(info.value)
    assert isinstance(info.value, ValueError) and not isinstance(info.value, TypeError)
