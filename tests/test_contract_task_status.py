"""trainexec/contract/task_status.py: the status records a task leaves for `trainexec launch`,
written whole (no temporary file left, even when the data cannot be written), stamped by
an injectable clock, and written without loading TensorFlow."""

import os
import subprocess
import sys

import pytest
from fakes import FakeClock
from trainexec.contract.task_status import STATUS_DIR, TRAINING, StatusReporter, read_statuses

pytestmark = pytest.mark.any_line


def test_a_report_is_read_back_stamped_by_the_reporters_clock(tmp_path):
    reporter = StatusReporter.from_env("chief:0", {"TRAINEXEC_LAUNCH_DIR": str(tmp_path)},
                                       clock=FakeClock(start=1234.5))
    assert reporter.report(TRAINING, {"step": 20, "max_steps": 40})
    assert read_statuses(str(tmp_path), ["chief:0", "worker:0"]) == {"chief:0": {
        "task": "chief:0", "kind": TRAINING, "time": 1234.5, "step": 20, "max_steps": 40}}
    assert os.listdir(tmp_path / STATUS_DIR) == ["chief-0.json"]


def test_data_that_cannot_be_written_leaves_the_last_record_and_no_temporary_file(tmp_path):
    reporter = StatusReporter(str(tmp_path), "evaluator:0", FakeClock())
    assert reporter.report(TRAINING, {"step": 1})
    assert not reporter.report(TRAINING, {"step": 2, "metrics": {"loss": object()}})
    assert os.listdir(tmp_path / STATUS_DIR) == ["evaluator-0.json"]
    assert read_statuses(str(tmp_path), ["evaluator:0"])["evaluator:0"]["step"] == 1


def test_reporting_does_not_load_tensorflow(tmp_path):
    """A hand-written task reports without paying for TensorFlow's import."""
    program = ("import sys\n"
               "from trainexec.contract.task_status import StatusReporter\n"
               f"assert StatusReporter({str(tmp_path)!r}, 'worker:1').report('training', {{}})\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))\n")
    out = subprocess.run([sys.executable, "-c", program], check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]"
    assert os.listdir(tmp_path / STATUS_DIR) == ["worker-1.json"]
