"""`LocalCluster`: the launcher users hold: starts, stops and restarts the tasks.

The facade only: its options are checked by `options`, the tasks' specs, their
TF_CONFIG and the rules that run them come from `cluster_plan` (over `spec`; the
runtime `Task`s are made from those specs here),
their processes are handled by `processes` (and the `orphan_reaper`), and `wait()` hands the running job to the `supervisor`,
which carries out the pure `policy.decide` with the restart groups of
`restart_groups` and returns a `result.JobResult`. The package doc
(`trainexec.launch`) describes the exit policy.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any, Callable, Mapping, Sequence

from trainexec.clock import Clock, SystemClock
from trainexec.cluster.config import TF_CONFIG
from trainexec.jobs.policies import RunPolicies, local_success
from trainexec.jobs.shape import JobShape
from trainexec.launch import processes
from trainexec.launch.gpus import TRAINING_JOBS, assign, gpus_here, parse_jobs
from trainexec.launch.network import HOST, PRIVATE, PrivateNetwork, open_network
from trainexec.launch.cluster_plan import ClusterPlan, check_job_runs
from trainexec.launch.options import (check_network, check_options, check_run_options,
                                      default_wait_for)
from trainexec.launch.orphan_reaper import OrphanReaper
from trainexec.launch.policy import EXIT_CODE
from trainexec.launch.processes import Output
from trainexec.launch.quiet_start import LEVEL_ENV, CppLogFilter, task_environment
from trainexec.contract.exit_watchdog import RECORD_DIR_ENV
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV
from trainexec.launch.result import JobResult
from trainexec.launch.spec import LAUNCH, TFJOB
from trainexec.launch.supervisor import Supervisor, TaskActions
from trainexec.launch.task import Task
from trainexec.contract.task_logging import LAUNCHED_TASK_ENV

__all__ = ["LocalCluster"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")

_POLL_SECS = 0.02
_ATEXIT_LOCK_SECS = 1.0


class LocalCluster:
    """Runs `command` once per task of a local TF_CONFIG cluster.

    Each task gets its own validated `TF_CONFIG` and a free port; its output
    lines are prefixed with its name. Entering the `with` block starts every
    task (as `start()` does); leaving it always stops every task still running.

    Example:
        ```python
        with LocalCluster([sys.executable, "train.py"], workers=2, ps=1) as c:
            result = c.wait(timeout=120)
        assert result.ok, result.reason
        ```

    Args:
      command: the program every task runs, as an argument list.
      workers: worker tasks besides the chief.
      ps: parameter server tasks.
      evaluator: add an evaluator task, outside the training cluster.
      chief: False: no chief, worker:0 leads the job.
      host: the address every task's port is on.
      env: added to os.environ for every task.
      max_restarts: how many times a failed task is restarted (per task; a group
        restart is charged once, to the task that failed first).
      grace_secs: seconds between SIGTERM and SIGKILL when a task is stopped.
      output: receives every line, prefixed with "[worker:1] " (a file-like or
        a callable; default sys.stdout).
      wait_for: the tasks ("worker:1") or whole jobs ("worker") that must exit
        0 for the job to succeed; by default the chief (worker:0 without one)
        and the evaluator. Pass ("chief", "worker", "evaluator") when every
        worker finishes by itself, as Estimator workers do at max_steps, so none
        is stopped early; add "ps" when the ps runs trainexec, which exits once
        every training task has finished (another ps serves until stopped).
      restart_groups: groups of task or job names restarted together when one
        of them fails (`[["chief", "worker"]]` for a hand-written
        MultiWorkerMirroredStrategy job; KerasTrainer tasks announce theirs, see
        `trainexec.contract.restart_announcements`).
      restart_policy: which failures `max_restarts` covers, in Kubeflow TFJob's
        words: `"ExitCode"` (the default: the exits the exit-code contract calls
        retryable, see `trainexec.contract.exit_codes`), `"OnFailure"` (any), `"Never"`;
        one for every task, or per job (`{"worker": "OnFailure"}`).
      network: `"private"` (the default) runs the tasks in a network namespace
        of their own holding only loopback: they reach each other, nothing else
        reaches them, and they have no outside network. `"host"` runs them on
        this machine's network, their servers reachable by anyone who reaches
        the machine (it warns so); see `trainexec.launch.network`. Where no
        namespace can be made the cluster runs on the host's network and warns
        why; `network_used` says which one the tasks got, once started.
      gpus_per_task: GPUs each training task sees (CUDA_VISIBLE_DEVICES); None (the
        default): an equal share of the GPUs, at least one; 0: every task sees
        every GPU. See `trainexec.launch.gpus`.
      gpus_to: the jobs that get GPUs (default chief, master and workers: the ps
        and the evaluator see none), e.g. `("chief", "worker", "evaluator")`.
      gpus: the GPU ids to share (default: this process's CUDA_VISIBLE_DEVICES, or
        `env`'s, else the machine's NVIDIA devices).
      clock: what times the tasks, the grace, `wait()`'s timeout and polling
        (default: the system's monotonic clock; tests pass a fake).

    Raises:
      ConfigError: a bad option (see `trainexec.launch.options`).
    """

    def __init__(self, command: Sequence[str], workers: int = 1, ps: int = 0,
                 evaluator: bool = False, chief: bool = True, host: str = "127.0.0.1",
                 env: Mapping[str, str] | None = None, max_restarts: int = 0,
                 grace_secs: float = 5.0, output: Output | None = None,
                 wait_for: Sequence[str] | None = None,
                 restart_groups: Sequence[Sequence[str] | str] = (),
                 restart_policy: str | Mapping[str, str] = EXIT_CODE,
                 network: str = PRIVATE, *, gpus_per_task: int | None = None,
                 gpus_to: Sequence[str] | str = TRAINING_JOBS,
                 gpus: Sequence[str] | None = None, clock: Clock | None = None) -> None:
        check_options(command, workers=workers, ps=ps, chief=chief,
                      max_restarts=max_restarts, grace_secs=grace_secs)
        job = JobShape.from_counts(command, workers=workers, ps=ps, evaluator=evaluator,
                                   chief=chief)
        self._setup(job, LAUNCH, host=host, env=env, max_restarts=max_restarts,
                    grace_secs=grace_secs, output=output,
                    wait_for=(default_wait_for(chief, evaluator) if wait_for is None
                              else wait_for),
                    # Without wait_for, tasks that announce they end by themselves
                    # (KerasTrainer's) are waited for too, once the primaries are done.
                    wait_for_ending=wait_for is None, restart_groups=restart_groups,
                    restart_policy=restart_policy, network=network, clock=clock,
                    gpus=(gpus, gpus_per_task, gpus_to))

    @classmethod
    def from_job(cls, job: JobShape, *, tf_config: str = TFJOB, host: str = "127.0.0.1",
                 env: Mapping[str, str] | None = None, max_restarts: int = 0,
                 grace_secs: float = 5.0, output: Output | None = None,
                 wait_for: Sequence[str] | None = None, wait_for_ending: bool = True,
                 restart_groups: Sequence[Sequence[str] | str] = (),
                 network: str = PRIVATE, clock: Clock | None = None,
                 gpus_per_task: int | None = None,
                 gpus_to: Sequence[str] | str = TRAINING_JOBS) -> "LocalCluster":
        """Runs a job described by a `trainexec.jobs.JobShape` (read from a TFJob
        manifest, say): each role's tasks with the role's own command, environment
        and restart policy, TF_CONFIG in the `tf_config` shape
        (`trainexec.launch.spec`: by default as the Kubeflow training operator
        writes it, 127.0.0.1 ports standing in for its service names).

        `wait_for` defaults to the operator's success rule with its default
        policies (the chief, master or worker 0) and the evaluators, which its
        default `cleanPodPolicy: None` leaves to finish; with `wait_for_ending`
        tasks that announce they end by themselves are waited for too. A role
        with tasks but no command, or a job with no training task, is a
        ConfigError naming the role (its `where`). `network` and `clock` as for
        `LocalCluster`, `gpus_per_task` and `gpus_to` too.
        """
        check_run_options(max_restarts=max_restarts, grace_secs=grace_secs)
        check_job_runs(job)
        cluster = cls.__new__(cls)
        cluster._setup(job, tf_config, host=host, env=env, max_restarts=max_restarts,
                       grace_secs=grace_secs, output=output,
                       wait_for=(local_success(job, RunPolicies()).wait_for
                                 if wait_for is None else wait_for),
                       wait_for_ending=wait_for_ending, restart_groups=restart_groups,
                       restart_policy={role.task_type: role.restart_policy
                                       for role in job.roles if role.count},
                       network=network, clock=clock, gpus=(None, gpus_per_task, gpus_to))
        return cluster

    def _setup(self, job: JobShape, tf_config: str, *, host: str,
               env: Mapping[str, str] | None, max_restarts: int, grace_secs: float,
               output: Output | None, wait_for: Sequence[str], wait_for_ending: bool,
               restart_groups: Sequence[Sequence[str] | str],
               restart_policy: str | Mapping[str, str], network: str,
               clock: Clock | None,
               gpus: tuple[Sequence[str] | None, int | None, Sequence[str] | str]) -> None:
        check_network(network, host)
        ids, per_task, gpus_to = gpus
        environ = {**os.environ, **(env or {})}
        gpu_plan = assign(job.tasks(), gpus_here(environ) if ids is None else list(ids),
                          per_task=per_task, jobs=parse_jobs(gpus_to), environ=environ)
        plan = ClusterPlan.build(job, tf_config, host=host, env=env, wait_for=wait_for,
                                 restart_groups=restart_groups, restart_policy=restart_policy,
                                 gpus=gpu_plan)
        self._clock: Clock = clock or SystemClock()
        self._plan = plan
        self.job, self.tf_config_shape, self.command = job, tf_config, plan.command
        self.env, self.evaluator, self.cluster_spec = plan.env, plan.evaluator, plan.cluster_spec
        self._tasks: list[Task] = [Task.from_spec(spec, self._clock) for spec in plan.tasks]
        self.primary, self.restart_groups = list(plan.primary), list(plan.restart_groups)
        self.restart_policies = dict(plan.restart_policies)
        self.exit_codes = plan.exit_codes
        self.max_restarts = max_restarts
        self.grace_secs = float(grace_secs)
        self.output = output
        self._wait_for_announced = wait_for_ending
        self._launch_dir: str | None = None  # TRAINEXEC_LAUNCH_DIR, made by start()
        self._supervisor: Supervisor | None = None  # made by start()
        self._lock = threading.RLock()
        self._started = False
        self._result: JobResult | None = None
        self._interrupt: int | None = None
        self._force = False
        self._reaper = OrphanReaper()
        self._prctl: Callable[..., int] | None = None
        self._hidden: dict[str, CppLogFilter] = {}  # per "[task] " prefix (quiet_start)
        self.network = network
        self.network_used: str | None = None  # set by start(): PRIVATE, or HOST
        self._private_network: PrivateNetwork | None = None

    # -- lookup ------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """All tasks in order: chief, workers, ps, evaluator."""
        return list(self._tasks)

    @property
    def launch_dir(self) -> str | None:
        """`TRAINEXEC_LAUNCH_DIR`, where tasks announce and report (None before start)."""
        return self._launch_dir

    def task(self, name: str) -> Task:
        """The task called `name` ("worker:1"; "ps" means "ps:0")."""
        key = name if ":" in name else f"{name}:0"
        for task in self._tasks:
            if task.name == key:
                return task
        raise KeyError(f"no task {name!r} in this cluster: tasks are "
                       f"{', '.join(t.name for t in self._tasks)}")

    def describe(self) -> str:
        """One line: the cluster spec, the evaluator if outside it, and the command
        (each job's, when they differ)."""
        return self._plan.describe()

    def plan(self) -> list[dict[str, Any]]:
        """What `start()` runs, task by task, starting nothing: `{"task": "worker:0",
        "command": [...], "env": {...}}`, `env` being what the task adds to this
        process's environment, its TF_CONFIG included (`trainexec launch --dry-run`)."""
        return self._plan.task_plans()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "LocalCluster":
        """Starts every task; on any error stops those already started and raises."""
        with self._lock:
            if self._started:
                raise RuntimeError("this LocalCluster was already started")
            self._started = True
            started_at = self._clock.now()
            self._launch_dir = tempfile.mkdtemp(prefix="trainexec-launch-")
            self._supervisor = Supervisor(
                self._tasks, TaskActions(spawn=self._spawn, stop=self._stop_tasks,
                                         sweep=self._sweep, stop_all=self.stop_all,
                                         poll=processes.poll,
                                         join_output=processes.join_reader),
                primary=self.primary, max_restarts=self.max_restarts,
                grace_secs=self.grace_secs, flag_groups=self.restart_groups,
                wait_for_announced=self._wait_for_announced, launch_dir=self._launch_dir,
                started_at=started_at, restart_policies=self.restart_policies,
                exit_codes=self.exit_codes, clock=self._clock)
            self._prctl = processes.load_prctl()
            if self._prctl is None:
                logger.warning("the parent-death signal (Linux prctl PR_SET_PDEATHSIG) is not "
                               "available on %s: if the launcher is killed, only its watcher "
                               "process stops the tasks", sys.platform)
            if self._plan.gpus.describe():
                logger.info("%s", self._plan.gpus.describe())
            try:
                self._private_network = open_network(self.network)
                self.network_used = HOST if self._private_network is None else PRIVATE
                for task in self._tasks:
                    self._spawn(task)
            except BaseException:
                self.stop_all()
                raise
        return self

    def _spawn(self, task: Task) -> None:
        if task.run.proc is not None:
            self._sweep(task)  # the previous run's group, before its id can be reused
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self._plan.added_env(task))
        if task.tf_config is None:  # a one-task TFJob: the operator sets none
            env.pop(TF_CONFIG, None)
        env[LAUNCHED_TASK_ENV] = task.name  # its lines are prefixed here, not again
        if self._launch_dir:
            env[LAUNCH_DIR_ENV] = self._launch_dir
        env.pop(RECORD_DIR_ENV, None)  # the launcher reads its own directory's records
        env = task_environment(env)  # TF_CPP_MIN_LOG_LEVEL=1 unless set (quiet_start)
        self._hidden[f"[{task.name}] "] = CppLogFilter.for_level(env[LEVEL_ENV])
        proc = processes.start(task, self._plan.command_of(task), env, self._preexec(), self._reaper,
                               self._write)
        atexit.unregister(self._kill_everything)  # safety net, registered once
        atexit.register(self._kill_everything)
        if task.started_at is None:
            task.started_at = self._clock.now()
        logger.info("started %s (pid %s) %s", task.name, proc.pid,
                    task.address or "outside the cluster")

    def _preexec(self) -> Callable[[], None] | None:
        """What a task does between fork and exec: enter the private network, then
        ask for the parent-death signal (after setns, whose credential change could
        otherwise clear it)."""
        steps = []
        if self.network_used == PRIVATE:
            network = self._private_network
            if network is None:  # closed by stop_all: never a task on the host's network
                raise RuntimeError("this LocalCluster has been stopped")
            steps.append(network.enter)
        if self._prctl:
            steps.append(processes.die_with_parent(self._prctl, os.getpid()))
        if not steps:
            return None

        def preexec() -> None:  # in the child between fork and exec: no locks, no logging
            for step in steps:
                step()

        return preexec

    def _write(self, line: str) -> None:
        prefix, _, text = line.partition("] ")
        hide = self._hidden.get(prefix + "] ")
        if hide is not None and hide(text):
            return  # a TensorFlow C++ line below the task's level (quiet_start)
        processes.write_line(self.output, line)

    def _sweep(self, task: Task) -> None:
        processes.sweep(task, self._reaper)

    def _stop_tasks(self, tasks: Sequence[Task], grace: float) -> None:
        with self._lock:
            processes.stop_tasks(tasks, grace, self._reaper, forced=lambda: self._force,
                                 clock=self._clock)

    def stop(self, name: str) -> Task:
        """Stops one task: SIGTERM to its process group, SIGKILL after grace_secs."""
        task = self.task(name)
        self._stop_tasks([task], self.grace_secs)
        return task

    def kill(self, name: str) -> Task:
        """SIGKILLs one task's process group (counted as stopped by us)."""
        task = self.task(name)
        self._stop_tasks([task], 0.0)
        return task

    def restart(self, name: str) -> Task:
        """Stops the task if running and starts it again with the same TF_CONFIG."""
        with self._lock:
            if not self._started:
                raise RuntimeError("start() the cluster before restarting a task")
            task = self.stop(name)
            task.restarts += 1
            self._spawn(task)
            return task

    def stop_all(self) -> None:
        """Stops every task (SIGTERM, SIGKILL after grace_secs); safe to repeat."""
        with self._lock:
            self._stop_tasks(self._tasks, self.grace_secs)
            self._reaper.close()
            if self._private_network is not None:
                self._private_network.close()  # it ends with the last of the tasks
                self._private_network = None
            atexit.unregister(self._kill_everything)
            if self._launch_dir:
                shutil.rmtree(self._launch_dir, ignore_errors=True)

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Makes a running `wait()` stop everything and return.

        Safe to call from a signal handler; a second call skips the grace period.
        """
        if self._interrupt is not None:
            self._force = True
        self._interrupt = signum

    def _kill_everything(self) -> None:
        """atexit safety net: SIGKILLs every group not swept yet (their leaders are
        unreaped, alive or not), without waiting; the zombies go with the process."""
        if not self._lock.acquire(timeout=_ATEXIT_LOCK_SECS):
            return  # another thread is stopping them; the watcher remains
        try:
            for task in self._tasks:
                if task.run.proc is not None and not task.run.swept:
                    processes.signal_group(task, signal.SIGKILL)
                    self._reaper.forget(task.run.proc.pid)  # done: its leader is reaped soon
        finally:
            self._lock.release()

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop_all()

    # -- exit policy -------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> JobResult:
        """Waits for the job to succeed or fail (see the package doc) and returns
        the result; every task has stopped by then. Repeated calls return it again."""
        if self._result is not None:
            return self._result
        if not self._started or self._supervisor is None:
            raise RuntimeError("call start() (or use `with LocalCluster(...)`) before wait()")
        deadline = None if timeout is None else self._clock.now() + timeout
        try:
            while self._result is None:
                with self._lock:
                    self._result = self._supervisor.check(deadline, timeout, self._interrupt)
                if self._result is None:
                    self._clock.sleep(_POLL_SECS)
        except BaseException:
            self.stop_all()
            raise
        return self._result
