"""trainexec/cli/tfconfig.py: `trainexec tfconfig` run in this process, its environment
set by the test: a local run, a cluster built from a Slurm step (and TF_CONFIG winning
over it), a task started by `trainexec launch`, what this installation cannot train, and
exit 2 naming what is wrong. The producer shapes of TF_CONFIG, run as the command, are
tests/test_cli.py."""

import argparse
import json

import pytest

from trainexec.cli.installation import Installation
from trainexec.cli.tfconfig import add_tfconfig_parser

pytestmark = pytest.mark.any_line

CHIEF_AND_WORKER = json.dumps({"cluster": {"chief": ["a:2222"], "worker": ["b:2222"]},
                               "task": {"type": "worker", "index": 0}})
# A two-task Slurm step (chief=1,worker=1), seen from rank 1: worker:0 on node n2.
SLURM_STEP = {"TRAINEXEC_SLURM_ROLES": "chief=1,worker=1", "SLURM_PROCID": "1",
              "SLURM_LOCALID": "0", "SLURMD_NODENAME": "n2",
              "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}
# An installation where tf.estimator is gone and tf_keras is asked for but missing.
NOTHING_TRAINS_HERE = Installation(tensorflow="2.21.0", estimator_installed=False,
                                   tf_keras_installed=False, legacy_keras_selected=True)


@pytest.fixture
def environment(monkeypatch):
    """A clean environment for the command: no TF_CONFIG, Slurm step or launcher."""
    for name in ("TF_CONFIG", "TRAINEXEC_LAUNCH_DIR", "TRAINEXEC_SLURM_PORT",
                 "SLURM_STEP_RESV_PORTS", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
                 *SLURM_STEP):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def installation(monkeypatch):
    """Sets what `Installation.detect()` finds (default: everything trains here)."""
    def use(found=Installation("2.15.1", True, True, False)):
        monkeypatch.setattr(Installation, "detect", classmethod(lambda cls: found))
    use()
    return use


def tfconfig(capsys, *argv):
    """Runs `trainexec tfconfig ARGV`: (exit code, stdout lines, stderr)."""
    parser = argparse.ArgumentParser(prog="trainexec")
    add_tfconfig_parser(parser.add_subparsers())
    args = parser.parse_args(["tfconfig", *argv])
    code = args.run(args)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_without_tf_config_the_role_is_a_local_run_and_no_trainer_verdict_is_printed(
        environment, installation, capsys):
    installation(NOTHING_TRAINS_HERE)  # no cluster to train: no notes on it either
    assert tfconfig(capsys) == (0, ["role: local (no cluster in TF_CONFIG): train and "
                                    "evaluate in this one process"], "")
    code, out, err = tfconfig(capsys, "--json")
    assert (code, json.loads("\n".join(out)), err) == (0, {}, "")


def test_a_slurm_steps_cluster_is_shown_as_built_from_the_step(environment, installation,
                                                                capsys):
    for name, value in SLURM_STEP.items():
        environment.setenv(name, value)
    code, out, err = tfconfig(capsys)
    assert code == 0, err
    assert out[0] == "recognised shape: slurm"
    assert "  chief:0      n1:2222" in out
    assert "  worker:0     n2:2222   <- this task" in out
    assert out[out.index("rewrote:") + 1].startswith(
        "  cluster built from the Slurm step (TRAINEXEC_SLURM_ROLES, SLURM_PROCID,")
    # --json: the TF_CONFIG the step's task hands on.
    code, out, err = tfconfig(capsys, "--json")
    assert code == 0, err
    assert json.loads("\n".join(out)) == {
        "cluster": {"chief": ["n1:2222"], "worker": ["n2:2222"]},
        "task": {"type": "worker", "index": 0}}


def test_tf_config_wins_over_a_slurm_step_and_the_shape_is_not_called_slurm(
        environment, installation, capsys):
    for name, value in SLURM_STEP.items():
        environment.setenv(name, value)
    environment.setenv("TF_CONFIG", CHIEF_AND_WORKER)
    code, out, err = tfconfig(capsys)
    assert code == 0, err
    assert out[0] == "recognised shape: generic"
    assert "  worker:0     b:2222   <- this task" in out
    assert not any("n1:2222" in line or "Slurm step" in line for line in out)


def test_a_task_started_by_trainexec_launch_is_recognised_as_such(
        environment, installation, capsys, tmp_path):
    environment.setenv("TF_CONFIG", CHIEF_AND_WORKER)
    assert tfconfig(capsys)[1][0] == "recognised shape: generic"
    environment.setenv("TRAINEXEC_LAUNCH_DIR", str(tmp_path))
    code, out, _ = tfconfig(capsys)
    assert (code, out[0]) == (0, "recognised shape: trainexec launch")


def test_what_this_installation_cannot_train_follows_the_clusters_verdicts(
        environment, installation, capsys):
    environment.setenv("TF_CONFIG", CHIEF_AND_WORKER)
    code, out, _ = tfconfig(capsys)
    assert code == 0 and "on this installation:" not in out  # nothing to say
    installation(NOTHING_TRAINS_HERE)
    code, out, _ = tfconfig(capsys)
    assert code == 0
    notes = out[out.index("on this installation:") + 1:]
    assert out.index("trainers for this cluster:") < out.index("on this installation:")
    assert [line.split(":")[0] for line in notes] == ["  Estimator", "  Keras"]
    assert notes[0].startswith("  Estimator: not here: TensorFlow 2.21.0 has no tf.estimator")
    assert notes[1].startswith("  Keras: not here: TF_USE_LEGACY_KERAS=1 selects tf_keras")


def test_tf_config_that_is_not_json_exits_2_quoting_it_with_an_example(
        environment, installation, capsys):
    environment.setenv("TF_CONFIG", "{not json")
    code, out, err = tfconfig(capsys)
    assert (code, out) == (2, [])
    assert err.startswith("trainexec: TF_CONFIG is not valid JSON")
    assert '"{not json"' in err and '"task": {"type": "worker", "index": 0}' in err
    code, out, _ = tfconfig(capsys, "--json")  # --json refuses it the same way
    assert (code, out) == (2, [])


def test_a_slurm_step_missing_its_node_list_exits_2_naming_the_variable(
        environment, installation, capsys):
    for name, value in SLURM_STEP.items():
        if name != "SLURM_STEP_NODELIST":
            environment.setenv(name, value)
    code, out, err = tfconfig(capsys)
    assert (code, out) == (2, [])
    assert err.startswith("trainexec: TRAINEXEC_SLURM_ROLES is set but "
                          "SLURM_STEP_NODELIST is not")
    assert "srun ... inside sbatch" in err and "unset TRAINEXEC_SLURM_ROLES" in err
