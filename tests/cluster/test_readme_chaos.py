"""The multi-host testing guide's chaos example runs as written on the README's train.py:
a run without faults measures its training, seed 7's faults drawn within it are applied
(two restarts at least), and the run keeps every promise it is judged on, exports not
among them (train.py has no exporter). Root only."""

import pytest

from readme_examples import run_group
from trainexec.testing.netns import unavailable

WHY_NOT = unavailable()
pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def test_the_chaos_suite_on_the_getting_started_program(tmp_path, monkeypatch):
    ns = run_group("chaos", tmp_path, monkeypatch)
    calm, report = ns["calm"], ns["report"]
    assert calm.violations == () and 0 < calm.training_secs
    assert report.violations == ()  # the example asserts it too
    assert report.faults_applied >= 1 and sum(report.restarts.values()) >= 1
    assert "export" not in report.judged and "export" in report.not_judged
    assert {"outcome", "final-step", "final-evaluated", "processes-left"} <= set(report.judged)
    assert all(f.at_secs <= calm.training_secs for f in report.schedule.faults)
