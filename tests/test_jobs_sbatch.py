"""`trainexec render sbatch` (trainexec.jobs.sbatch)."""

import shutil
import subprocess

import pytest

from trainexec.cli import main

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
