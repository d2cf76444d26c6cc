"""trainexec/testing/tfjob_spec.py: the TFJob spec the bed's operator acts on (its
hosts, refusals) and its pure decisions: the TF_CONFIG it writes per pod, a container's
exit code, a pod's log prefix. tests/test_testing_kubelet.py runs them (TFJobRun)."""

import json

import pytest

from trainexec.testing.tfjob_spec import (Replicas, TFJobSpec, exit_code_of, log_line,
                                          tf_config_for)

pytestmark = pytest.mark.any_line

JOB = TFJobSpec("demo", {"Chief": Replicas(1), "Worker": Replicas(2), "PS": Replicas(1),
                         "Evaluator": Replicas(1)}, command=["python", "job.py"])


def test_every_pod_gets_the_operators_tf_config():
    config = json.loads(tf_config_for(JOB, "worker", 1))
    assert config == {
        "cluster": {"chief": ["demo-chief-0.default.svc:2222"],
                    "worker": ["demo-worker-0.default.svc:2222",
                               "demo-worker-1.default.svc:2222"],
                    "ps": ["demo-ps-0.default.svc:2222"],
                    "evaluator": ["demo-evaluator-0.default.svc:2222"]},
        "task": {"type": "worker", "index": 1},
        "environment": "cloud"}
    assert JOB.hosts() == ["demo-chief-0", "demo-worker-0", "demo-worker-1", "demo-ps-0",
                           "demo-evaluator-0"]


@pytest.mark.parametrize("returncode, code", [(0, 0), (1, 1), (170, 170), (-9, 137),
                                              (-15, 143)])
def test_a_signal_is_reported_as_a_containers_exit_code(returncode, code):
    assert exit_code_of(returncode) == code


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="restartPolicy 'onfailure'"):
        Replicas(1, "onfailure")
    with pytest.raises(ValueError, match="replica types \\['Workr'\\]"):
        TFJobSpec("demo", {"Workr": Replicas(1)}, command=["x"])


@pytest.mark.parametrize("line, shown", [
    ("INFO trainexec.tasks: Role: chief:0 trains",
     "[chief:0] INFO trainexec.tasks: Role: chief:0 trains"),
    ("[chief:0] INFO trainexec.tasks: Role", "[chief:0] INFO trainexec.tasks: Role"),
    ("[worker:0] a line naming another task", "[chief:0] [worker:0] a line naming another task"),
])
def test_a_pods_line_names_its_task_once(line, shown):
    assert log_line("chief:0", line) == shown
