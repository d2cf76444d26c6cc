"""The README's `launch` example runs as written: LocalCluster, from Python, starts a real
process per task of its cluster. The README's other examples are tests/test_readme.py;
tests/readme_examples.py finds and runs them.
"""

import pytest

from readme_examples import run_group

pytestmark = pytest.mark.cluster


def test_launch_example(tmp_path, monkeypatch, capsys):
    run_group("launch", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "playing ps 0" in out and "playing evaluator 0" in out
