"""An Estimator task's hooks (trainexec/estimator_trainer/hooks.py): its server.

The rest of the sequence these hooks take is tests/test_tasks_roles.py's (the records
in order, every role's steps) and the estimator tests' (training, evaluation)."""

import pytest

from fakes import FakeClock, FakeEstimator, FakeServer
from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.keepalive import OPTIONS, OPTIONS_VAR, SETTING_VAR
from trainexec.estimator_trainer.hooks import EstimatorHooks
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.trainer import JobSettings

pytestmark = pytest.mark.any_line

WITH_PS = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
WITHOUT_PS = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}


def _server_options(monkeypatch, tmp_path, cluster, task):
    """What `TF_GRPC_DEFAULT_OPTIONS` was when the task's server was made."""
    monkeypatch.delenv(OPTIONS_VAR, raising=False)
    monkeypatch.setenv(SETTING_VAR, "2")
    FakeServer.made.clear()
    job, index = task.split(":")
    settings = JobSettings(
        train_spec=TrainSpec(lambda: None, max_steps=20),
        eval_spec=EvalSpec(lambda: None, throttle_secs=0),
        cluster=ClusterConfig(cluster=cluster, task_type=job, task_index=int(index)),
        clock=FakeClock(), poll_secs=1.0, idle_timeout_secs=None,
        listener=ContinuousEvalListener(), server_factory=FakeServer)
    hooks = EstimatorHooks(FakeEstimator(tmp_path, job, int(index)), settings)
    assert hooks.start_server() is not None
    return [server.environ.get(OPTIONS_VAR) for server in FakeServer.made]


@pytest.mark.parametrize("task", ["chief:0", "worker:0", "ps:0"])
def test_a_task_of_a_job_with_parameter_servers_gets_keepalive_before_its_server(
        monkeypatch, tmp_path, task):
    """Chaos row canned-local-cut-ps0: without keepalive, the chief's session call to a
    ps cut off for 15 s waited out the job's 300 s."""
    assert _server_options(monkeypatch, tmp_path, WITH_PS, task) == [
        ",".join(f"{name}=2000" for name in OPTIONS)]


@pytest.mark.parametrize("task", ["chief:0", "worker:0"])
def test_a_job_without_parameter_servers_keeps_grpcs_defaults(monkeypatch, tmp_path, task):
    assert _server_options(monkeypatch, tmp_path, WITHOUT_PS, task) == [None]
