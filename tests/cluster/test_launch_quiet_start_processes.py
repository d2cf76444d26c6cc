"""trainexec/launch/quiet_start.py through LocalCluster: a real child process printing
TensorFlow's start-up lines (as TensorFlow 2.21 does at import) shows only what its
TF_CPP_MIN_LOG_LEVEL allows, 1 unless the user set it; every line is still kept."""

import sys

import pytest

from test_launch_quiet_start import CUINIT, NOTICE, ONEDNN
from trainexec.launch import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

PROGRAM = f"""
import os
print({NOTICE!r}); print({ONEDNN!r}); print({CUINIT!r})
print("level", os.environ["TF_CPP_MIN_LOG_LEVEL"])
"""


@pytest.mark.parametrize("env, shown", [
    ({}, [CUINIT, "level 1"]),
    ({"TF_CPP_MIN_LOG_LEVEL": "0"}, [NOTICE, ONEDNN, CUINIT, "level 0"]),
])
def test_a_launched_task_starts_quietly_unless_the_user_set_the_level(monkeypatch, env,
                                                                        shown):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    lines = []
    with LocalCluster([sys.executable, "-c", PROGRAM], workers=0, output=lines.append,
                      env=env) as cluster:
        result = cluster.wait(timeout=60)
        kept = cluster.task("chief").output_lines()
    assert result.ok, result.reason
    assert lines == [f"[chief:0] {line}" for line in shown]
    assert kept[:3] == [NOTICE, ONEDNN, CUINIT]  # every line is still kept
