"""trainexec/cli/role_flags.py: the role flags `launch` and `render` share."""

import argparse

import pytest

from trainexec.cli.role_flags import ROLE_DEFAULTS, add_role_flags

pytestmark = pytest.mark.any_line


def parser(**kwargs):
    parser = argparse.ArgumentParser()
    add_role_flags(parser, unit="tasks", evaluator_help="an evaluator", leader="worker:0",
                   **kwargs)
    return parser


def test_unset_flags_take_the_role_defaults():
    assert vars(parser().parse_args([])) == ROLE_DEFAULTS


def test_with_unset_default_a_flag_not_given_is_none():
    assert vars(parser(unset_default=True).parse_args([])) == dict.fromkeys(ROLE_DEFAULTS)


@pytest.mark.parametrize("argv, expected", [
    (["--workers", "3"], {"workers": 3}),
    (["--ps", "2"], {"ps": 2}),
    (["--evaluator"], {"evaluator": True}),
    (["--no-chief"], {"chief": False}),
])
def test_each_flag_sets_its_role(argv, expected):
    assert vars(parser().parse_args(argv)) == {**ROLE_DEFAULTS, **expected}


def test_the_help_uses_the_commands_nouns():
    text = parser().format_help()
    assert "worker tasks besides the chief" in text
    assert "no chief: worker:0 leads the job" in text
