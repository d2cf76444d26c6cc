"""trainexec/jobs/yaml_text.py: YAML documents out with comments above their keys, and in."""

import pytest

from trainexec.errors import ConfigError
from trainexec.jobs.yaml_text import dump_documents, load_documents

pytestmark = pytest.mark.any_line

pytest.importorskip("yaml")


def test_documents_keep_their_key_order_and_comments_sit_above_their_keys():
    text = dump_documents(
        [{"kind": "TFJob", "spec": {"runPolicy": {"cleanPodPolicy": "None"}}}, {"kind": "B"}],
        comments=[{("spec", "runPolicy"): ["why the policy"]}],
        header=["made by a test"])
    assert text.splitlines() == [
        "# made by a test", "kind: TFJob", "spec:", "  # why the policy", "  runPolicy:",
        "    cleanPodPolicy: None", "---", "kind: B"]
    assert load_documents(text) == [
        {"kind": "TFJob", "spec": {"runPolicy": {"cleanPodPolicy": "None"}}}, {"kind": "B"}]


def test_empty_documents_are_left_out():
    assert load_documents("---\n---\na: 1\n") == [{"a": 1}]


def test_a_syntax_error_names_the_source_line_and_column():
    with pytest.raises(ConfigError, match=r"job\.yaml is not valid YAML \(line 2, column"):
        load_documents("a: 1\n  b: [\n", source="job.yaml")
