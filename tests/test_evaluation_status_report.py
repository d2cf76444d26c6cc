"""trainexec/evaluation/status_report.py: what the evaluator tells `trainexec launch`."""

import pathlib

import pytest
import numpy as np

from trainexec.contract.task_status import EVALUATION
from trainexec.evaluation.one_pass import EvalResult, EvalStatus
from trainexec.evaluation.status_report import EvaluationStatus, plain_metrics

pytestmark = pytest.mark.any_line


class Reporter:
    def __init__(self):
        self.reports = []

    def report(self, kind, data):
        self.reports.append((kind, data))
        return True


def test_plain_metrics_are_floats_without_the_global_step_or_non_numbers():
    metrics = {"loss": np.float32(0.5), "global_step": 7, "auc": 1, "table": [1, 2],
               "name": "x"}
    assert plain_metrics(metrics) == {"loss": 0.5, "auc": 1.0}
    assert plain_metrics(None) == {}


def test_each_evaluation_then_the_final_result_is_reported():
    reporter = Reporter()
    status = EvaluationStatus(reporter, pathlib.Path("/models/run"))
    assert status.after_eval(EvalResult(EvalStatus.NO_NEW_CHECKPOINT)) is True
    assert status.after_eval(EvalResult(EvalStatus.EVALUATED, {"loss": 2.0, "global_step": 40},
                                        "/models/run/ckpt-40")) is True
    status.report_final({"loss": 1.0, "global_step": np.int64(100)},
                        [b"/exports/1", pathlib.Path("/exports/2"), None])
    status.report_final({}, ["/exports/3"])  # no final metrics: nothing to tell
    assert reporter.reports == [
        (EVALUATION, {"step": 40, "metrics": {"loss": 2.0}, "model_dir": "/models/run"}),
        (EVALUATION, {"step": 100, "metrics": {"loss": 1.0}, "model_dir": "/models/run",
                      "final": True, "exports": ["/exports/1", "/exports/2"]}),
    ]


def test_without_a_launcher_there_is_no_status(monkeypatch):
    monkeypatch.delenv("TRAINEXEC_LAUNCH_DIR", raising=False)
    assert EvaluationStatus.from_env("evaluator:0", "/models/run") is None
