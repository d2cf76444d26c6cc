"""trainexec/launch/restart_groups.py: `--restart-group` values, and each task's group
as announced and given by flags."""

import pytest

from trainexec.contract.restart_announcements import RestartRule
from trainexec.launch.restart_groups import merge_rules, parse_group_flag

pytestmark = pytest.mark.any_line

NAMES = ["chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"]
PSS_WORKER = RestartRule("worker:1", ("worker:1",), carry_on=True,
                         strategy="parameter_server", ends_by_itself=True)


def test_announced_rules_are_merged_with_flag_groups():
    rules = {"worker:1": PSS_WORKER}  # as read back (tests/test_contract_restart_announcements.py)
    merged = merge_rules(rules, [("chief:0", "ps:0")], NAMES)
    assert merged["worker:1"].carry_on and merged["worker:1"].group == ("worker:1",)
    assert rules["worker:1"].ends_by_itself and merged["worker:1"].ends_by_itself
    assert merged["ps:0"].group == merged["chief:0"].group == ("chief:0", "ps:0")
    assert "worker:0" not in merged and "evaluator:0" not in merged


@pytest.mark.parametrize("value, words", [
    ("", ("names no task", "chief,worker")),
    ("chief,trainer", ("'trainer'", "not in this cluster", "worker:1")),
])
def test_restart_group_flag_rejects(value, words):
    with pytest.raises(ValueError) as raised:
        parse_group_flag(value, ["chief:0", "worker:0", "worker:1"])
    for word in words:
        assert word in str(raised.value)


def test_restart_group_flag_expands_jobs_in_task_order():
    assert parse_group_flag("worker, chief:0", ["chief:0", "worker:0", "worker:1", "ps:0"]) \
        == ("chief:0", "worker:0", "worker:1")
