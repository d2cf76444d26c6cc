"""A local cluster: one process per TF_CONFIG task, on this machine.

`LocalCluster` runs the same command once per task (chief, workers, ps and an
optional evaluator), each with its own validated `TF_CONFIG` and a free port,
streams their output prefixed with the task name, applies an exit policy and
never leaves a process behind. `trainexec launch` is its command line.

Example:
    ```python
    with LocalCluster(["python", "train.py"], workers=2, ps=1,
                      evaluator=True) as cluster:
        result = cluster.wait(timeout=600)
    print(result.summary())
    if not result.ok:
        print(result.reason)
    ```

The same from the command line:

```console
$ trainexec launch --workers 2 --ps 1 --evaluator -- python train.py
```

`LocalCluster.from_job(shape)` runs a `trainexec.jobs.JobShape` instead, each
role with its own command, environment and restart policy and, by default,
TF_CONFIG as the Kubeflow training operator writes it (`trainexec launch
--from FILE.yaml` reads the shape from a TFJob manifest).

Exit policy: the job succeeds when the primary tasks (the chief, or worker:0
without a chief, and the evaluator; or those named by `wait_for`) exit 0;
tasks still running then (ps, serving workers) are stopped: SIGTERM, then
SIGKILL after `grace_secs`. A task that exits non-zero, or dies by a signal
we did not send, is restarted with the same TF_CONFIG while it has restarts
left; otherwise the job fails and every other task is stopped. The decision
is a pure function, `trainexec.launch.policy.decide`.

Restart groups (`trainexec.launch.restart_groups`): a failed task restarts
together with the tasks it cannot run without, one fault costing one restart.
Tasks announce their group in the directory the launcher names in
`TRAINEXEC_LAUNCH_DIR` (`trainexec.contract.restart_announcements`; KerasTrainer
jobs do: all MultiWorkerMirroredStrategy training tasks together; a
ParameterServerStrategy ps with the chief; a PSS worker alone, and the job goes
on without it once no restarts are left);
`restart_groups=[["chief", "worker"]]` (`--restart-group chief,worker`) does
it for hand-written jobs. Which failures are restarted follows the exit-code
contract (`trainexec.contract.exit_codes`; `restart_policy`, TFJob's names): by default
only retryable exits (128 and up, or a signal), as TFJob's `ExitCode` policy.

No process is left behind, even if the launcher is SIGKILLed: see
`trainexec.launch.processes` and `trainexec.launch.orphan_reaper`.

Network: by default the tasks run in a network namespace of their own holding
only loopback, so no one else reaches their unauthenticated TensorFlow servers;
`network="host"` (`--network host`) gives them this machine's network, with a
warning. See `trainexec.launch.network`.

Its modules:

* `cluster`: LocalCluster: starts, stops, restarts the tasks; waits for the job;
* `cluster_plan`: ClusterPlan: what a LocalCluster runs, from a JobShape (its tasks,
  which of them decide the job, restart groups and policies), decided before any starts;
* `options`: the checks of the launcher's options (LocalCluster and CLI);
* `spec`: free ports, the cluster spec, one TF_CONFIG per task (the launcher's
  shape, or the TFJob operator's);
* `task`: Task: one task's runs and output;
* `processes`: starting a task, its output, exits, group signals, stopping, reaping;
* `network`: the tasks' private network namespace (only loopback; the default), or
  the host's network, and why;
* `gpus`: each training task its own GPUs (CUDA_VISIBLE_DEVICES), the ps and the
  evaluator none unless asked;
* `reach`: whether the tasks reach their model_dir (a bucket is out of the private
  network's reach: said before anything starts), and `launch --from --model-dir`;
* `orphan_reaper`: the process that kills the task groups if the launcher dies;
* `supervisor`: the loop carrying out the exit policy: decide, then act;
* `policy`: the pure exit and restart decision;
* `restart_groups`: which tasks restart together (announced and flag groups);
* `result`: TaskOutcome, JobResult and the texts for exits;
* `quiet_start`: TensorFlow's C++ start-up lines held back for launched tasks;
* `status_view`: the live status block below the logs, on a terminal;
* `slurm_exec`: `trainexec slurm-exec`, one Slurm task: its TF_CONFIG, signals and verdict.

Names are imported on first use: a task that only announces its restart group
(`trainexec.contract.restart_announcements`) does not load the launcher.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors
    from trainexec.launch.cluster import LocalCluster
    from trainexec.launch.result import JobResult, TaskOutcome
    from trainexec.launch.task import Task

__all__ = ["JobResult", "LocalCluster", "Task", "TaskOutcome"]

_EXPORTS = {
    "JobResult": "trainexec.launch.result",
    "LocalCluster": "trainexec.launch.cluster",
    "Task": "trainexec.launch.task",
    "TaskOutcome": "trainexec.launch.result",
}


if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
