"""The README's `multihost` example runs as written: a TFJob's pods on separate hosts
(network namespaces), a killed worker restarted, every pod ending by itself. Root only."""

import pytest

from readme_examples import run_group
from trainexec.testing.netns import unavailable

WHY_NOT = unavailable()
pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def test_multihost_example(tmp_path, monkeypatch):
    ns = run_group("multihost", tmp_path, monkeypatch)
    restarted = [e for e in ns["outcome"].events if e.what == "restarting"]
    assert [e.pod for e in restarted] == ["demo-worker-1"]
    assert ns["run"].pod("worker", 1).restarts == 1
