"""The shell commands of the README and the docs run as written (tests/doc_commands.py reads
them from the pages): every command has a rule, the `trainexec render` commands write
what their guide says (a TFJob the operator's schema accepts, a Vertex job, a batch
script bash can read), `launch --from` of a rendered TFJob accepts it without a note,
and each `console` session prints what its page shows. The commands that start a
cluster are tests/cluster/test_doc_commands_run.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from doc_commands import NOT_RUN, commands, sessions
from job_manifests import schema_errors

pytestmark = pytest.mark.any_line

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RENDERS = [c for c in commands() if c.kind == "render"]


def shell(script: str, cwd, env=None) -> subprocess.CompletedProcess:
    """`script` run by bash in `cwd`, with this environment's `trainexec` and `python`
    first on PATH and this tree importable."""
    env = dict(env or os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = ROOT
    env.pop("TF_CONFIG", None)
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_command_has_a_rule():
    kinds = {command.text: command.kind for command in commands()}  # raises on no rule
    assert {"render", "launch", "python"} <= set(kinds.values())
    assert all(reason.strip() for reason in NOT_RUN.values())


@pytest.mark.parametrize("command", RENDERS, ids=lambda c: f"{c.page}:{c.words[2]}")
def test_render_commands_write_what_their_guide_says(command, tmp_path):
    done = shell(command.text, tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / command.redirect()).read_text()
    target = command.words[2]
    if target == "tfjob":
        tfjob, *others = list(yaml.safe_load_all(written))
        assert tfjob["kind"] == "TFJob" and schema_errors(tfjob) == []
        assert [other["kind"] for other in others] == ["NetworkPolicy"]
        pods = [spec["template"]["spec"] for spec in tfjob["spec"]["tfReplicaSpecs"].values()]
        container = pods[0]["containers"][0]
        assert container["image"] == command.option("--image")
        assert command.option("--model-dir") in container["command"] + container.get("args", [])
    elif target == "vertex":
        job = json.loads(written)
        pools = job["jobSpec"]["workerPoolSpecs"]
        assert pools[0]["machineSpec"]["machineType"] == command.option("--machine-type")
    else:
        assert target == "sbatch"
        assert written.startswith("#!/bin/bash")
        check = subprocess.run(["bash", "-n", str(tmp_path / command.redirect())],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        assert f"#SBATCH --nodes={command.option('--nodes')}" in written


def test_launch_from_a_rendered_tfjob_accepts_it_without_a_note(tmp_path):
    """`trainexec launch --from mnist.yaml --model-dir /tmp/mnist` after the guide's
    render: the manifest is read exactly as the cluster would get it, and every replica
    runs on the local model_dir (tests/cluster/test_doc_commands_run.py runs it)."""
    [render] = [c for c in RENDERS if c.redirect() == "mnist.yaml"]
    [launch] = [c for c in commands() if c.kind == "launch from"]
    done = shell(f"{render.text}\n{launch.text.split('#')[0]} --dry-run", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "backoffLimit" not in done.stderr and "note" not in done.stderr.lower()
    plans = {plan["task"]: plan for plan in map(json.loads, done.stdout.splitlines())}
    assert sorted(plans) == ["chief:0", "evaluator:0", "worker:0", "worker:1"]
    for plan in plans.values():
        words = plan["command"]
        assert words[words.index("--model-dir") + 1] == launch.option("--model-dir")


def test_launch_from_says_a_bucket_is_out_of_reach_before_any_task_starts(tmp_path):
    """The same pair without `--model-dir`: the manifest's gs:// model_dir cannot be
    reached from the tasks' private network; the launcher says so, naming both fixes,
    and exits 2 having started nothing."""
    [render] = [c for c in RENDERS if c.redirect() == "mnist.yaml"]
    done = shell(f"{render.text}\ntrainexec launch --from mnist.yaml", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "mnist.yaml: model_dir gs://my-bucket/mnist (Chief, Worker, Evaluator) is out of " \
           "reach here" in said
    assert "--model-dir /tmp/mnist" in said and "--network host" in said
    assert "started" not in done.stdout + done.stderr and "[chief:0]" not in done.stdout


def _mistyped_manifest(tmp_path):
    """The Kubernetes guide's session: its mnist.yaml, rendered, then the two typos the
    page shows (a replica type and a restart policy)."""
    [render] = [c for c in RENDERS if c.redirect() == "mnist.yaml"]
    assert shell(render.text, tmp_path).returncode == 0
    text = (tmp_path / "mnist.yaml").read_text()
    text = text.replace("    Worker:", "    Workr:", 1)
    head, _, tail = text.partition("    Workr:")
    tail = tail.replace("restartPolicy: ExitCode", "restartPolicy: Onfailure", 1)
    (tmp_path / "mnist.yaml").write_text(head + "    Workr:" + tail)


SETUP = {"docs/guides/kubernetes.md": _mistyped_manifest}


@pytest.mark.parametrize("session", sessions(), ids=lambda s: s.page)
def test_console_sessions_print_what_their_page_shows(session, tmp_path):
    SETUP.get(session.page, lambda _: None)(tmp_path)
    done = shell("\n".join(session.typed), tmp_path)
    printed = " ".join((done.stdout + done.stderr).split())
    assert " ".join(" ".join(session.shown).split()) in printed, printed[-2000:]
