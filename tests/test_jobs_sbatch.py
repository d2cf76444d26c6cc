"""`trainexec render sbatch` (trainexec.jobs.sbatch)."""

import shutil
import sys
import subprocess

import pytest

from trainexec.cli import main

pytestmark = pytest.mark.any_line

ARGS = ["render", "sbatch", "demo", "--nodes", "3", "--workers", "2", "--evaluator",
        "--model-dir", "/shared/demo", "--time", "30", "--grace", "45",
        "--max-restarts", "2", "--env", "TF_USE_LEGACY_KERAS=1", "--trainexec", "trainexec",
        "--", "python", "train.py", "--model-dir", "/shared/demo"]


def render(capsys, args=ARGS):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_script_says_why_each_line_is_there(capsys):
    code, script, _ = render(capsys)
    assert code == 0
    lines = script.splitlines()
    for line in ("#SBATCH --nodes=3", "#SBATCH --ntasks=4", "#SBATCH --distribution=block",
                 "#SBATCH --requeue", "#SBATCH --open-mode=append", "#SBATCH --signal=TERM@45",
                 "#SBATCH --time=30",
                 "export TRAINEXEC_SLURM_ROLES=chief=1,worker=2,evaluator=1",
                 "export TRAINEXEC_SLURM_MODEL_DIR=/shared/demo",
                 "export TF_USE_LEGACY_KERAS=1"):
        assert line in lines
        assert lines[lines.index(line) - 1].startswith("#")  # its reason above it
    assert "B:" not in script.replace("Not B:", "")          # every task gets the SIGTERM
    assert ('setsid srun --ntasks=4 --distribution=block "${TRAINEXEC[@]}" slurm-exec -- '
            "python train.py --model-dir /shared/demo &") in lines
    assert 'slurm-verdict --max-restarts 2' in script
    assert 'scontrol requeue "$SLURM_JOB_ID"' in script and lines[-1] == "exit $code"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_script_is_valid_bash(capsys, tmp_path):
    _, script, _ = render(capsys)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


@pytest.mark.parametrize("change, words", [
    (["--nodes", "5"], "--nodes 5 is more than the job's 4 tasks"),
    (["--nodes", "0"], "--nodes 0"),
    (["--time", "soon"], "not a Slurm time"),
    (["--grace", "0"], "--grace 0"),
    (["--max-restarts", "-1"], "negative"),
])
def test_bad_flags_exit_2_naming_the_fix(capsys, change, words):
    args = ARGS[:ARGS.index("--")] + change + ARGS[ARGS.index("--"):]
    code, _, err = render(capsys, args)
    assert code == 2 and words in err


def test_a_name_with_spaces_is_refused(capsys):
    args = list(ARGS)
    args[2] = "my job"
    code, _, err = render(capsys, args)
    assert code == 2 and "Slurm job name" in err


SITE = ["--partition", "gpu", "--account", "ml-team", "--gres", "gpu:a100:4",
        "--cpus-per-task", "8", "--sbatch", "mem=64G", "--sbatch=--exclusive",
        "--sbatch", "#SBATCH --constraint=a100"]


def _with(flags):
    return ARGS[:ARGS.index("--")] + flags + ARGS[ARGS.index("--"):]


def test_site_flags_become_sbatch_lines(capsys, tmp_path):
    code, script, _ = render(capsys, _with(SITE))
    assert code == 0
    lines = script.splitlines()
    site = ["#SBATCH --partition=gpu", "#SBATCH --account=ml-team", "#SBATCH --gres=gpu:a100:4",
            "#SBATCH --cpus-per-task=8", "#SBATCH --mem=64G", "#SBATCH --exclusive",
            "#SBATCH --constraint=a100"]
    for line in site:
        assert lines.count(line) == 1
    # sbatch reads #SBATCH lines only before the first command: all of them are there
    first_command = next(i for i, line in enumerate(lines[1:], 1)
                         if line and not line.startswith("#"))
    assert all(lines.index(line) < first_command for line in site)
    assert ('setsid srun --ntasks=4 --cpus-per-task=8 --distribution=block '
            '"${TRAINEXEC[@]}" slurm-exec -- python train.py --model-dir /shared/demo &'
            ) in lines
    if shutil.which("bash"):
        path = tmp_path / "job.sbatch"
        path.write_text(script)
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_without_site_flags_there_are_no_site_lines(capsys):
    _, script, _ = render(capsys)
    for option in ("--partition", "--account", "--gres", "--cpus-per-task"):
        assert option not in script.replace("every node gets --gres", "")


@pytest.mark.parametrize("change, words", [
    (["--partition", "gpu queue"], "--partition 'gpu queue' is not a Slurm partition name"),
    (["--account", ""], "--account '' is not a Slurm account name"),
    (["--gres", "2 gpus"], "--gres '2 gpus' is not a Slurm GRES: give NAME[:TYPE][:COUNT]"),
    (["--cpus-per-task", "0"], "--cpus-per-task 0: give 1 or more CPUs for each task"),
    (["--sbatch=--nodes=4"], "--sbatch '--nodes=4': the script decides --nodes itself "
     "(from --nodes): drop this --sbatch"),
    (["--sbatch", "ntasks-per-node=2"], "decides --ntasks-per-node itself"),
    (["--sbatch=-pdebug"], "decides -p itself (from --partition)"),
    (["--sbatch", "#SBATCH --signal=USR1@30"], "decides --signal itself (from --grace)"),
    (["--sbatch", "=5"], "--sbatch '=5' is not an sbatch option"),
    (["--trainexec", " "], "--trainexec is empty"),
])
def test_bad_site_flags_exit_2_naming_the_fix(capsys, change, words):
    code, out, err = render(capsys, _with(change))
    assert (code, out) == (2, "")
    assert err.startswith("trainexec render sbatch: ") and words in err


def test_the_default_trainexec_is_this_python_and_the_nodes_must_see_it(capsys):
    args = [a for a in ARGS if a not in ("--trainexec", "trainexec")]
    code, script, err = render(capsys, args)
    assert code == 0
    lines = script.splitlines()
    at = lines.index(f"TRAINEXEC=({sys.executable} -m trainexec)")
    assert "each node must have it at this" in lines[at - 3]
    assert err == (f"trainexec render sbatch: note: the nodes will run trainexec as "
                   f"{sys.executable} -m trainexec (this machine's Python): every node must "
                   "see that path (a virtual environment on shared storage); else pass "
                   "--trainexec, e.g. --trainexec trainexec when it is on the nodes' PATH\n")
    _, _, err = render(capsys)  # --trainexec given: no note
    assert err == ""


def test_the_slurm_guides_site_command_renders_what_it_says(capsys):
    import pathlib
    import re
    import shlex

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "guides" / "slurm.md"
            ).read_text().replace("\\\n", " ")
    [line] = [m for m in re.findall(r"^(trainexec render sbatch .*?) > \S+$", text, re.M)
              if "--partition" in m]
    code, script, err = render(capsys, shlex.split(line)[1:])
    assert code == 0, err
    lines = script.splitlines()
    for option in ("--partition=gpu", "--account=ml-team", "--gres=gpu:1",
                   "--cpus-per-task=8", "--mem=32G", "--constraint=a100"):
        assert f"#SBATCH {option}" in lines
    assert "TRAINEXEC=(/shared/venvs/tf/bin/trainexec)" in lines and err == ""
