"""Your own job under chaos: a job factory from its command, and whether it trains long
enough for a schedule's faults.

`run_schedule(schedule, workdir, job=factory)` runs any job: `factory(schedule,
paths)` returns its `trainexec.testing.kubelet.TFJobSpec`, with the schedule's shape
(`schedule.tasks()`: a chief, `schedule.workers` workers, `schedule.ps` ps, an
evaluator if `schedule.evaluator`) and `paths.model_dir` (`JobPaths`: where the pods
keep model_dir on the schedule's storage, and `paths.env`, what their environment
needs for it). `program_job(command)` writes that factory for a program that takes
its model_dir on the command line: `{model_dir}` in the command is replaced by the
storage's (`{result_file}` likewise, where the evaluator may write its final metrics).

A schedule's faults start some seconds after training began (the first checkpoint).
A job that is over by then tests nothing: `check_training_span` raises `JobTooShort`
when a fault would start after the job's training (`run_schedule` calls it with the
length a run without faults measured, or the one you give), naming how to draw a
schedule for the job (`Schedule.generate(..., training_secs=...)`) or to train longer.

Example:
    ```python
    job = program_job([sys.executable, "train.py", "--model-dir", "{model_dir}"])
    report = run_schedule(schedule, "/tmp/chaos", job=job, max_steps=300)
    ```
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from trainexec.testing.chaos.schedule import Schedule
from trainexec.testing.chaos.storages import JobPaths
from trainexec.testing.kubelet import Replicas, TFJobSpec

__all__ = ["JobTooShort", "check_training_span", "program_job", "replicas_of"]


class JobTooShort(ValueError):
    """A schedule's faults would start after the job has finished training."""


def replicas_of(schedule: Schedule) -> dict[str, Replicas]:
    """The TFJob replicas of the schedule's shape: Chief, Worker, PS, Evaluator."""
    replicas = {"Chief": Replicas(1)}
    if schedule.workers:
        replicas["Worker"] = Replicas(schedule.workers)
    if schedule.ps:
        replicas["PS"] = Replicas(schedule.ps)
    if schedule.evaluator:
        replicas["Evaluator"] = Replicas(1)
    return replicas


def program_job(command: Sequence[str], *, env: Mapping[str, str] | None = None,
                name: str = "job") -> Callable[[Schedule, JobPaths], TFJobSpec]:
    """A job factory for `run_schedule(job=...)`: every pod of the schedule's shape
    runs `command` (`{model_dir}` and `{result_file}` in it replaced by the storage's
    paths), with `env` and what the storage needs added to its environment."""
    words = list(command)
    if not any("{model_dir}" in word for word in words):
        raise ValueError(f"command {words!r}: put {{model_dir}} where the program takes its "
                         "model_dir, e.g. --model-dir {model_dir}")

    def factory(schedule: Schedule, paths: JobPaths) -> TFJobSpec:
        filled = [word.replace("{model_dir}", paths.model_dir)
                  .replace("{result_file}", paths.result_file) for word in words]
        return TFJobSpec(name, replicas_of(schedule), command=filled,
                         env={**(env or {}), **paths.env})

    return factory


def check_training_span(schedule: Schedule, training_secs: float | None) -> None:
    """Raises JobTooShort when a fault of `schedule` starts after `training_secs` (how
    long the job trains after its first checkpoint; None: unknown, nothing checked)."""
    if training_secs is None or not schedule.faults:
        return
    late = [f for f in schedule.faults if f.at_secs > training_secs]
    if not late:
        return
    raise JobTooShort(
        f"{schedule.label()}: the job trains {training_secs:.1f}s after its first "
        f"checkpoint, and {len(late)} of this schedule's {len(schedule.faults)} faults "
        f"start later ({'; '.join(f.describe() for f in late[:3])}): they would meet a job "
        f"that has finished. Draw the schedule for this job, Schedule.generate(seed, ..., "
        f"training_secs={training_secs:.1f}), or train longer (more steps)")
