"""The `checkpoint` state file parsed as TensorFlow writes it, and the ways a read cut
short shows (each names the line that does not parse). Reading real state files,
whole and cut, is tests/test_records_checkpoints.py."""

import pytest

from trainexec.records.checkpoint_state import parse_checkpoint_state

pytestmark = pytest.mark.any_line


@pytest.mark.parametrize("text, words", [
    ('model_checkpoint_path: "model', "line 1"),
    ('model_checkpoint_path: "m-1"\nall_mo', "line 2 of the checkpoint state does not "
                                            "parse: 'all_mo'"),
    ('model_checkpoint_path: "m-1"\nall_model_checkpoint_paths: ', "line 2"),
    ('all_model_checkpoint_paths: "m-1"\n', "names no model_checkpoint_path"),
    ("", "names no model_checkpoint_path"),
])
def test_state_text_that_does_not_parse_says_where(text, words):
    with pytest.raises(ValueError) as info:
        parse_checkpoint_state(text, "/m")
    assert words in str(info.value)


def test_state_text_paths_resolve_as_tensorflow_resolves_them():
    text = ('model_checkpoint_path: "model.ckpt-3"\n'
            'all_model_checkpoint_paths: "/elsewhere/model.ckpt-1"\n'
            'all_model_checkpoint_paths: "gs://b/m/model.ckpt-2"\n'
            "all_model_checkpoint_paths: 'quo\\\"ted-3'\n"
            "all_model_checkpoint_timestamps: 1795916535.25\n"
            "last_preserved_timestamp: 1.7e9\n")
    state = parse_checkpoint_state(text, "gs://b/m/")
    assert state.latest == "gs://b/m/model.ckpt-3"
    assert state.kept == ("/elsewhere/model.ckpt-1", "gs://b/m/model.ckpt-2",
                          'gs://b/m/quo"ted-3')
