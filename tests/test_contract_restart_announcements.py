"""trainexec/contract/restart_announcements.py: what a task announces in the launcher's
directory, and how the launcher reads it back."""

import json

from trainexec.contract.restart_announcements import (LAUNCH_DIR_ENV, RestartRule, announce,
                                                    read_rules)
import pytest

pytestmark = pytest.mark.any_line

NAMES = ["chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"]
PSS_WORKER = RestartRule("worker:1", ("worker:1",), carry_on=True,
                         strategy="parameter_server", ends_by_itself=True)


def test_announced_rules_are_read_back(tmp_path):
    env = {LAUNCH_DIR_ENV: str(tmp_path)}
    path = announce(PSS_WORKER, env)
    assert json.loads(open(path).read())["restart_group"] == ["worker:1"]
    assert announce(RestartRule("chief:0", ("chief:0",)), {}) is None  # no launcher
    (tmp_path / "ps-0.json").write_text("{half written")
    rules = read_rules(str(tmp_path), NAMES)
    assert set(rules) == {"worker:1"}  # the broken file counts as no announcement
    assert rules["worker:1"] == PSS_WORKER  # every field comes back
    assert rules["worker:1"].ends_by_itself
    assert read_rules(None, NAMES) == {}  # not under a launcher
