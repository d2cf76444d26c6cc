"""`trainexec render sbatch`: a job as a Slurm batch script, each line's reason beside it.

The script runs COMMAND as every task of one `srun` step, with
`TRAINEXEC_SLURM_ROLES` set so that each task builds its cluster from the
step (`trainexec.cluster.slurm`), through `trainexec slurm-exec` (which also
gives COMMAND a TF_CONFIG and records the task's verdict). Once the step
ends, `trainexec slurm-verdict` decides from the verdicts: success, a
permanent failure (no requeue), or a requeue (`scontrol requeue`) while the
job has been requeued fewer than `--max-restarts` times. The script's exit
code is the exit-code contract's (0, 1, 2, 143, 170, 171), so a site with
`RequeueExit=143,170,171` requeues what trainexec calls retryable.

Example:
    ```python
    shape = render_shape("sbatch", "demo", ["python", "train.py"], workers=2)
    print(sbatch_script(shape, SbatchOptions(nodes=3, model_dir="/shared/demo")))
    ```
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import sys

from trainexec.cluster.slurm import ROLES_ENV
from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape
from trainexec.launch.slurm_exec import MODEL_DIR_ENV

__all__ = ["SbatchOptions", "sbatch_script"]

_TIME = re.compile(r"^(?:\d+-)?\d+(?::\d{1,2}){0,2}$|^\d+-\d+$")


@dataclasses.dataclass(frozen=True)
class SbatchOptions:
    """The Slurm side of the script (validated by `check`).

    Attributes:
      nodes: --nodes.
      model_dir: where tasks record their verdicts (the run's model_dir, shared).
      time: --time (Slurm's forms: MM, HH:MM:SS, D-HH...); None: the partition's.
      grace: seconds between the SIGTERM and the time limit (--signal=TERM@grace).
      max_restarts: how often the script itself requeues after retryable ends.
      trainexec: the command that runs trainexec on the nodes.
      output: the log file pattern (%j: the job id).
    """

    nodes: int
    model_dir: str
    time: str | None = None
    grace: int = 60
    max_restarts: int = 3
    trainexec: str = f"{sys.executable} -m trainexec"
    output: str | None = None

    def check(self, tasks: int) -> None:
        if self.nodes < 1:
            raise ConfigError(f"--nodes {self.nodes}: give 1 or more, e.g. --nodes 3")
        if self.nodes > tasks:
            raise ConfigError(f"--nodes {self.nodes} is more than the job's {tasks} tasks: "
                              f"give --nodes {tasks} or fewer (a node without a task "
                              "only idles)")
        if not self.model_dir or not self.model_dir.strip():
            raise ConfigError("--model-dir is empty: give the run's model directory on "
                              "storage every node shares, e.g. --model-dir /shared/demo")
        if self.time is not None and not _TIME.match(self.time):
            raise ConfigError(f"--time {self.time!r} is not a Slurm time: write MINUTES, "
                              "HH:MM:SS or DAYS-HH:MM, e.g. --time 30")
        if self.grace < 1:
            raise ConfigError(f"--grace {self.grace}: give the seconds a task needs to save "
                              "after SIGTERM, e.g. --grace 60")
        if self.max_restarts < 0:
            raise ConfigError(f"--max-restarts {self.max_restarts} is negative: give 0 "
                              "(never requeue) or more")


def sbatch_script(shape: JobShape, options: SbatchOptions) -> str:
    """The batch script for `shape` (see the module doc)."""
    tasks = shape.task_count
    options.check(tasks)
    roles = ",".join(f"{role.task_type}={role.count}" for role in shape.roles if role.count)
    described = ", ".join(f"{role.count} {role.task_type}" for role in shape.roles
                          if role.count)
    first = shape.roles[0]
    command = shlex.join(first.command or ())
    trainexec = options.trainexec
    output = options.output or f"{shape.name}-%j.out"
    lines = [
        "#!/bin/bash",
        f"# {shape.name}: {described} ({tasks} tasks) on {options.nodes} nodes.",
        "# Rendered by `trainexec render sbatch`; submit with `sbatch FILE`.",
        f"#SBATCH --job-name={shape.name}",
        "# One Slurm task per TensorFlow task, spread over the nodes:",
        f"#SBATCH --nodes={options.nodes}",
        f"#SBATCH --ntasks={tasks}",
        "# Block distribution (ranks fill a node, then the next): every task works out",
        "# its peers' addresses from it; trainexec refuses any other placement.",
        "#SBATCH --distribution=block",
    ]
    if options.time:
        lines += ["# The time limit; the SIGTERM below comes this long before it ends.",
                  f"#SBATCH --time={options.time}"]
    lines += [
        "# Requeue (rather than end) on node failure and preemption, and when this script",
        "# asks for it below; SLURM_RESTART_COUNT counts the requeues.",
        "#SBATCH --requeue",
        "# A requeued run appends to the log instead of overwriting the first run's.",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={output}",
        f"# SIGTERM to every task {options.grace} s before the time limit: each saves a",
        "# checkpoint and exits 143. Not B:, which would signal only this shell.",
        f"#SBATCH --signal=TERM@{options.grace}",
        "",
        "# Each task builds its cluster from the step: ranks in this role order.",
        f"export {ROLES_ENV}={roles}",
        "# Where each task records how it ended (srun's own code is the highest over",
        "# tasks, so a permanent exit 1 can come back as 143).",
        f"export {MODEL_DIR_ENV}={shlex.quote(options.model_dir)}",
    ]
    if first.env:
        lines.append("# The job's own variables (--env).")
    for name, value in first.env:
        lines.append(f"export {name}={shlex.quote(value)}")
    lines += [
        f"TRAINEXEC=({trainexec})",
        "echo \"trainexec: job $SLURM_JOB_ID run $((${SLURM_RESTART_COUNT:-0})) on "
        "$SLURM_JOB_NODELIST\"",
        "",
        "# One step runs every task. srun in a session of its own: the job's SIGTERM",
        "# (preemption, requeue) goes to the tasks, which save; srun itself would answer",
        "# it by SIGKILLing them. A permanent exit cancels the step (slurm-exec), not",
        "# --kill-on-bad-exit, which would also kill peers still saving after SIGTERM.",
        "trap '' TERM",
        f"setsid srun --ntasks={tasks} --distribution=block \"${{TRAINEXEC[@]}}\" "
        f"slurm-exec -- {command} &",
        "wait $!",
        "",
        "# succeed, fail (a permanent exit: no requeue) or requeue (retryable, at most",
        f"# {options.max_restarts} times); the exit code is the contract's, for sites with",
        "# RequeueExit=143,170,171.",
        "action=$(\"${TRAINEXEC[@]}\" slurm-verdict "
        f"--max-restarts {options.max_restarts})",
        "code=$?",
        "if [ \"$action\" = requeue ]; then",
        "    scontrol requeue \"$SLURM_JOB_ID\"",
        "fi",
        "exit $code",
    ]
    return "\n".join(lines) + "\n"
