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

The site's own resources come as `--partition`, `--account`, `--gres` (GPUs:
`gpu:2`) and `--cpus-per-task`, and any other `#SBATCH` option as `--sbatch
LINE` (refused for the options the script sets itself, naming the flag that
sets them). Every node runs trainexec as `--trainexec` says (default: this
Python's absolute path), so that path must exist on each node: the script
says so above the line.

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

from trainexec.contract.slurm_env import MODEL_DIR_ENV, ROLES_ENV
from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape

__all__ = ["DEFAULT_TRAINEXEC", "SbatchOptions", "sbatch_script"]

_TIME = re.compile(r"^(?:\d+-)?\d+(?::\d{1,2}){0,2}$|^\d+-\d+$")
_GRES = re.compile(r"[A-Za-z][\w]*(?::[\w.-]+)*(?:,[A-Za-z][\w]*(?::[\w.-]+)*)*")
DEFAULT_TRAINEXEC = f"{sys.executable} -m trainexec"

# The sbatch options the script decides itself, by every spelling, and from what.
_NAME, _NODES, _TASKS = "from NAME", "from --nodes", "one per TensorFlow task, from the role flags"
_BLOCK, _REQUEUE = "block, which trainexec's placement needs", "on, to requeue retryable ends"
_OWN_OPTIONS = {
    "--job-name": _NAME, "-J": _NAME, "--nodes": _NODES, "-N": _NODES,
    "--ntasks": _TASKS, "-n": _TASKS, "--ntasks-per-node": _TASKS,
    "--distribution": _BLOCK, "-m": _BLOCK, "--requeue": _REQUEUE, "--no-requeue": _REQUEUE,
    "--open-mode": "append, so a requeue keeps the log", "--time": "from --time",
    "-t": "from --time", "--output": "from --output", "-o": "from --output",
    "--signal": "from --grace", "--partition": "from --partition", "-p": "from --partition",
    "--account": "from --account", "-A": "from --account", "--gres": "from --gres",
    "--cpus-per-task": "from --cpus-per-task", "-c": "from --cpus-per-task",
}


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
      partition: --partition (one or several, comma-separated); None: the default.
      account: --account to charge; None: the user's default.
      gres: --gres per node, e.g. "gpu:2" or "gpu:a100:4"; None: no generic resources.
      cpus_per_task: --cpus-per-task; None: Slurm's (1).
      extra: further `#SBATCH` lines, e.g. "--mem=32G" (`--sbatch`).
    """

    nodes: int
    model_dir: str
    time: str | None = None
    grace: int = 60
    max_restarts: int = 3
    trainexec: str = DEFAULT_TRAINEXEC
    output: str | None = None
    partition: str | None = None
    account: str | None = None
    gres: str | None = None
    cpus_per_task: int | None = None
    extra: tuple[str, ...] = ()

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
        for flag, value, example in (("--partition", self.partition, "gpu"),
                                     ("--account", self.account, "my-project")):
            if value is not None and (not value or any(c.isspace() or c in "'\"#"
                                                       for c in value)):
                raise ConfigError(f"{flag} {value!r} is not a Slurm {flag[2:]} name: give "
                                  f"one without spaces or quotes, e.g. {flag} {example}")
        if self.gres is not None and not _GRES.fullmatch(self.gres):
            raise ConfigError(f"--gres {self.gres!r} is not a Slurm GRES: give NAME[:TYPE]"
                              "[:COUNT] per node, comma-separated, e.g. --gres gpu:2 or "
                              "--gres gpu:a100:4")
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            raise ConfigError(f"--cpus-per-task {self.cpus_per_task}: give 1 or more CPUs "
                              "for each task, e.g. --cpus-per-task 8")
        for line in self.extra:
            _check_extra(line)
        if not self.trainexec.strip():
            raise ConfigError("--trainexec is empty: give how the nodes run trainexec, e.g. "
                              "--trainexec trainexec (on their PATH) or --trainexec "
                              "'/shared/venv/bin/python -m trainexec'")


def _extra_line(line: str) -> str:
    """An `--sbatch` value as the option part of its `#SBATCH` line: `mem=32G`,
    `--mem=32G` and `#SBATCH --mem=32G` are all `--mem=32G`."""
    text = line.strip()
    text = text[len("#SBATCH"):].strip() if text.startswith("#SBATCH") else text
    return text if text.startswith("-") else f"--{text}"


def _check_extra(line: str) -> None:
    text = _extra_line(line)
    example = "e.g. --sbatch mem=32G (#SBATCH --mem=32G) or --sbatch=--exclusive"
    if (text in ("-", "--") or text.startswith("---") or any(c in text for c in "\n\r#")
            or not re.match(r"-[A-Za-z]|--[A-Za-z]", text)):
        raise ConfigError(f"--sbatch {line!r} is not an sbatch option: give one option as "
                          f"sbatch takes it, its value after '=', {example}")
    option = re.split(r"[=\s]", text, maxsplit=1)[0]
    if not option.startswith("--"):
        option = option[:2]  # -pgpu is -p
    if option in _OWN_OPTIONS:
        raise ConfigError(f"--sbatch {line!r}: the script decides {option} itself "
                          f"({_OWN_OPTIONS[option]}): drop this --sbatch")


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
    cpus = f" --cpus-per-task={options.cpus_per_task}" if options.cpus_per_task else ""
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
    site = [f"#SBATCH --{name}={value}" for name, value in (
        ("partition", options.partition), ("account", options.account),
        ("gres", options.gres), ("cpus-per-task", options.cpus_per_task))
        if value is not None]
    if site:
        lines += ["# The site's resources: every node gets --gres, every task --cpus-per-task.",
                  *site]
    if options.extra:
        lines += ["# Further options (--sbatch).",
                  *(f"#SBATCH {_extra_line(line)}" for line in options.extra)]
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
        "# How every node runs trainexec (--trainexec): each node must have it at this",
        "# path (a virtual environment on storage every node mounts, or trainexec on",
        "# their PATH, e.g. after a module load before sbatch, with --trainexec trainexec).",
        f"TRAINEXEC=({trainexec})",
        "echo \"trainexec: job $SLURM_JOB_ID run $((${SLURM_RESTART_COUNT:-0})) on "
        "$SLURM_JOB_NODELIST\"",
        "",
        "# One step runs every task. srun in a session of its own: the job's SIGTERM",
        "# (preemption, requeue) goes to the tasks, which save; srun itself would answer",
        "# it by SIGKILLing them. A permanent exit cancels the step (slurm-exec), not",
        "# --kill-on-bad-exit, which would also kill peers still saving after SIGTERM.",
        *(["# --cpus-per-task again: some Slurm versions' srun does not inherit it."]
          if options.cpus_per_task else []),
        "trap '' TERM",
        f"setsid srun --ntasks={tasks}{cpus} --distribution=block \"${{TRAINEXEC[@]}}\" "
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
