"""One evaluation pass: statuses, EvalResult validation, exporters, rate-limited warnings."""

import logging
import os

import pytest

from trainexec.evaluation.one_pass import EvalResult, EvalStatus, Evaluator, RateLimitedLog
from trainexec.evaluation.target import describe_error
from fakes import (DirectoryTarget, FakeClock, RecordingExporter, point_state_file_at,
                   write_checkpoint)

pytestmark = pytest.mark.tf_line


@pytest.mark.parametrize("kwargs,error,words", [
    (dict(status=EvalStatus.MISSING_CHECKPOINT, metrics={"a": 1}), ValueError,
     "metrics must be `None`"),
    (dict(status=EvalStatus.NO_NEW_CHECKPOINT, checkpoint_path="/c"), ValueError,
     "checkpoint must be `None`"),
    (dict(status=EvalStatus.EVALUATED, metrics=None, checkpoint_path="/c"), ValueError,
     "never return empty metrics"),
    (dict(status=EvalStatus.EVALUATED, metrics=[1], checkpoint_path="/c"), TypeError,
     "should return dict"),
    (dict(status=EvalStatus.EVALUATED, metrics={"loss": 1}, checkpoint_path="/c"),
     ValueError, "should have `global_step`"),
    (dict(status=EvalStatus.EVALUATED, metrics={"global_step": 1}), ValueError,
     "`checkpoint_path` should never be empty"),
])
def test_eval_result_validation(kwargs, error, words):
    with pytest.raises(error, match=words):
        EvalResult(**kwargs)


def test_statuses_in_order(tmp_path):
    target = DirectoryTarget(str(tmp_path))
    exporter = RecordingExporter()
    evaluator = Evaluator(target, [exporter], max_training_steps=20, clock=FakeClock())
    assert evaluator.evaluate_and_export()[0].status == EvalStatus.MISSING_CHECKPOINT
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    result, exports = evaluator.evaluate_and_export()
    assert result.status == EvalStatus.EVALUATED and result.global_step == 10
    assert exports == [os.path.join(str(tmp_path), "export", "recorder")]
    assert evaluator.evaluate_and_export()[0].status == EvalStatus.NO_NEW_CHECKPOINT
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 20))
    result, _ = evaluator.evaluate_and_export()
    assert result.global_step == 20
    assert [c["final"] for c in exporter.calls] == [False, True]  # 20 >= max_steps
    assert exporter.calls[0]["estimator"] is target


def test_incomplete_checkpoint_is_not_evaluated(tmp_path):
    prefix = write_checkpoint(str(tmp_path), 10)
    point_state_file_at(str(tmp_path), prefix)
    for data in tmp_path.glob("model.ckpt-10.data-*"):
        data.unlink()  # index present, data shard not (yet)
    target = DirectoryTarget(str(tmp_path))
    result, _ = Evaluator(target, clock=FakeClock()).evaluate_and_export(prefix)
    assert result.status == EvalStatus.MISSING_CHECKPOINT
    assert target.evaluated == []


def test_rate_limited_warning(caplog):
    clock = FakeClock(0)
    log = RateLimitedLog(clock, interval_secs=600)
    with caplog.at_level(logging.WARNING, logger="trainexec.evaluation.one_pass"):
        shown = []
        for _ in range(5):
            shown.append(log.warning("waiting"))
            clock.time += 200
    assert shown == [True, False, False, True, False]
    assert len(caplog.records) == 2


# What TensorFlow 2.15's graph-mode errors look like: where the op was defined
# first, then what went wrong.
GRAPH_ERROR = """Graph execution error:

Detected at node 'IteratorGetNext' defined at (most recent call last):
  File "/job/eval.py", line 8, in <module>
Node: 'IteratorGetNext'
/data/eval.tfrecord; No such file or directory
\t [[{{node IteratorGetNext}}]]
Original stack trace for 'IteratorGetNext':
  File "/job/eval.py", line 8, in <module>
"""


@pytest.mark.parametrize("error,line", [
    (ValueError("The passed save_path is not a valid checkpoint: /m/model.ckpt-10"),
     "ValueError: The passed save_path is not a valid checkpoint: /m/model.ckpt-10"),
    (OSError(GRAPH_ERROR), "OSError: /data/eval.tfrecord; No such file or directory"),
    (RuntimeError("Graph execution error:"), "RuntimeError: Graph execution error:"),
    (KeyError(), "KeyError: "),
])
def test_describe_error_gives_the_line_that_says_what_went_wrong(error, line):
    assert describe_error(error) == line
