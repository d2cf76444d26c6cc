"""trainexec/launch/reach.py: a model_dir on a remote file system is found in a job's
commands (every spelling of the flag), replaced by a local one for `launch --from
--model-dir`, and refused in the private network with both fixes named."""

from __future__ import annotations

import pytest

from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape, Role
from trainexec.launch.reach import (command_model_dirs, remote_model_dirs,
                                    unreachable_message, with_model_dir)

pytestmark = pytest.mark.any_line


@pytest.mark.parametrize("command, found", [
    (["python", "t.py", "--model-dir", "gs://b/run"], ["gs://b/run"]),
    (["python", "t.py", "--model-dir=gs://b/run"], ["gs://b/run"]),
    (["python", "t.py", "--model_dir", "/runs/x"], ["/runs/x"]),
    (["python", "t.py", "--model-directory", "gs://b"], []),
    (["python", "t.py", "--model-dir"], []),
])
def test_the_model_dir_a_command_gives(command, found):
    assert command_model_dirs(command) == found


def _job(model_dir):
    return JobShape((Role("chief", 1, ("python", "t.py", "--model-dir", model_dir),
                          where="spec.tfReplicaSpecs.Chief"),
                     Role("worker", 2, ("python", "t.py", f"--model-dir={model_dir}"),
                          where="spec.tfReplicaSpecs.Worker"),
                     Role("ps", 0, None)))


@pytest.mark.parametrize("model_dir, remote", [
    ("gs://bucket/run", True), ("S3://bucket/run", True), ("hdfs://nn/run", True),
    ("/gcs/bucket/run", False), ("/tmp/run", False), ("run", False),
])
def test_remote_file_systems_are_out_of_reach(model_dir, remote):
    found = remote_model_dirs(_job(model_dir))
    assert found == ([("spec.tfReplicaSpecs.Chief", model_dir),
                      ("spec.tfReplicaSpecs.Worker", model_dir)] if remote else [])


def test_a_local_model_dir_replaces_every_roles_own_in_its_spelling():
    job = with_model_dir(_job("gs://bucket/run"), "/tmp/run")
    assert job.role("chief").command == ("python", "t.py", "--model-dir", "/tmp/run")
    assert job.role("worker").command == ("python", "t.py", "--model-dir=/tmp/run")
    assert remote_model_dirs(job) == []


def test_no_model_dir_to_replace_is_said():
    job = JobShape((Role("chief", 1, ("python", "t.py")),))
    with pytest.raises(ConfigError, match="no replica's command has a --model-dir"):
        with_model_dir(job, "/tmp/run")


def test_the_message_names_the_value_the_roles_and_both_fixes():
    found = remote_model_dirs(_job("gs://bucket/mnist"))
    said = unreachable_message(found, "mnist.yaml")
    assert said.startswith("mnist.yaml: model_dir gs://bucket/mnist (Chief, Worker) is out of "
                           "reach here")
    assert "--model-dir /tmp/mnist (it replaces" in said and "--network host" in said
    assert "a local directory in the command" in unreachable_message(found, None)
