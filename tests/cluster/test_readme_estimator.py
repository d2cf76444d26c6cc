"""The Estimator guide's "Change one call" program runs as written in every role of a
cluster (chief, worker, ps, evaluator), not only locally: each task runs the page's block
after the stand-ins for the user's own (model_dir, feature columns, input functions), and
the job must train to max_steps, the evaluator print the final metrics and export once.

Broken the way the guide once was (`metrics, exports = trainexec.train_and_evaluate(...)`:
None cannot be unpacked on the chief, the worker and the ps), the chief exits 1 and the
test fails.
"""

import os
import sys

import pytest

from readme_examples import ROOT, blocks

pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.estimator]

PROGRAM_HEAD = """\
import pathlib, sys
sys.path[:0] = [{tests!r}, {root!r}]
from readme_examples import estimator_stand_ins
globals().update(estimator_stand_ins(pathlib.Path(sys.argv[1])))
"""


def test_estimator_guide_program_plays_every_role(tmp_path):
    pytest.importorskip("tensorflow_estimator")
    import trainexec
    from trainexec.launch import LocalCluster

    snippet = blocks()[1]["estimator"][0]  # "Change one call"; the next block adds options
    program = tmp_path / "estimator_program.py"
    program.write_text(PROGRAM_HEAD.format(tests=str(ROOT / "tests"), root=str(ROOT))
                       + snippet)
    with LocalCluster([sys.executable, str(program), str(tmp_path)], workers=1, ps=1,
                      evaluator=True, wait_for=["chief", "worker", "ps", "evaluator"]
                      ) as cluster:
        result = cluster.wait(timeout=600)
    assert result.ok, result.reason + "\n" + "\n".join(result.last_lines)
    assert {task.name: task.returncode for task in result.tasks} == {
        "chief:0": 0, "worker:0": 0, "ps:0": 0, "evaluator:0": 0}
    model_dir = str(tmp_path / "run")  # the stand-ins' model_dir
    complete = trainexec.read_training_complete(model_dir)
    assert complete is not None and complete.global_step >= 1000
    final = result.reports["evaluator:0"]
    assert final["final"] and final["step"] >= 1000 and final["metrics"]["accuracy"] > 0.5
    [export] = final["exports"]
    assert os.path.isfile(os.path.join(export, "saved_model.pb"))
