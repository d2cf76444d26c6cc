"""`KerasHooks`: how each step of a role's sequence (`trainexec.tasks`) is done for a
`KerasTrainer`, on the strategy TF_CONFIG gives (`trainexec.keras.strategy`).

* before anything: the task announces its restart group to `trainexec launch`
  (`trainexec.keras.faults.restart_rule`);
* its server: only a ParameterServerStrategy worker or ps starts one (the other
  strategies own theirs), after its gRPC channels get keepalive
  (`trainexec.cluster.keepalive`), so a step waiting on a ps that is cut off fails instead
  of hanging;
* no start delay and no wait for the chief: the strategy brings the tasks together;
* training: `trainexec.keras.fit.training.train_to_max_steps`, with the user's callbacks and
  the chief's progress reports (log lines, TensorBoard summaries, the status record
  `trainexec launch` shows); a MultiWorkerMirroredStrategy task watches the chief
  (`trainexec.tasks.peer_watchdog`) and, once it recorded finishing, waits for its peers,
  so that they leave together (an exited peer stalls the others' last steps);
* evaluating: a `KerasTarget` on a model of its own, built without a strategy; the
  evaluation after a save runs off the training thread; each evaluation's metrics go to
  TensorBoard under `model_dir/eval`;
* serving: a ParameterServerStrategy worker or ps serves until the chief has finished
  (`trainexec.tasks.serving`);
* what a role returns is the same for every trainer (`trainexec.tasks.result`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import dataclasses
from typing import Any, Callable, Iterator, Sequence

from trainexec.clock import Clock
from trainexec.cluster.config import CHIEF
from trainexec.cluster.server import start_standard_server
from trainexec.contract.restart_announcements import announce
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave
from trainexec.keras.fit.input_data import call_input_fn
from trainexec.keras.faults.restart_rule import rule_for_plan
from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, StrategyPlan
from trainexec.keras.faults import scratch
from trainexec.keras.fit.training import check_compiled, train_to_max_steps
from trainexec.records.finished_tasks import FinishedTasks
from trainexec.specs import EvalSpec
from trainexec.tasks.hooks import ON_SAVE_WORDING, Evaluation, Trained, TrainerHooks
from trainexec.tasks.peer_watchdog import PeerWatchdog
from trainexec.tasks.serving import ServingJob, wait_for_training_peers
from trainexec.trainer import JobSettings, RolePlan

__all__ = ["CHIEF_TASK", "KERAS_WORDING", "KerasHooks", "KerasSettings"]

logger = logging.getLogger(__name__)

CHIEF_TASK = f"{CHIEF}:0"

# The lines a KerasTrainer logs as it evaluates its own saves: trainexec's own.
KERAS_WORDING = ON_SAVE_WORDING


@dataclasses.dataclass(frozen=True)
class KerasSettings:
    """What a `KerasTrainer` was configured with, as its hooks read it (checked by
    `KerasTrainer`; see its Args)."""

    build_model: Callable[[], Any]
    model_dir: str
    save_checkpoints_steps: int
    callbacks: tuple
    keep_checkpoint_max: int | None
    verbose: int | str
    log_step_count_steps: int | None
    summaries: bool


def _off_the_training_thread(fn: Callable[[], Any]) -> Any:
    """`fn()` on a helper thread, outside the training strategy's scope.

    Evaluation runs during `model.fit` (after a save), inside the scope of the
    strategy that trains; an evaluation model evaluated there would create its
    metric variables as that strategy's (Keras 2 then fails under
    MirroredStrategy). Strategy scopes belong to their thread, so a helper
    thread has none.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as err:  # re-raised on the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=run, name="trainexec-evaluate-on-save")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class KerasHooks(TrainerHooks):
    """The `trainexec.tasks.hooks.TrainerHooks` of one KerasTrainer task (module doc).

    `keras` is the trainer's configuration (`KerasSettings`), `settings` the job's, with
    specs the trainer has checked (`KerasTrainer.task_hooks`), and `max_steps` their
    `TrainSpec.max_steps`, which a KerasTrainer requires. No
    start delay and no wait for the chief (`before_training`'s defaults): the trainer
    refuses plans with either.
    """

    run_evaluation = staticmethod(_off_the_training_thread)

    def __init__(self, keras: KerasSettings, strategy: StrategyPlan,
                 settings: JobSettings, max_steps: int) -> None:
        self.keras = keras
        self.strategy = strategy
        self.settings = settings
        self.max_steps = max_steps
        self.model_dir = keras.model_dir
        self._peers_watch: FinishedTasks | None = None
        self._watchdog: PeerWatchdog | None = None

    @property
    def _clock(self) -> Clock:
        return self.settings.clock

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Announces the task's restart group first; stops the peer watchdog at the end."""
        logger.debug("KerasTrainer job: %s", self.strategy.describe())
        announce(rule_for_plan(self.strategy))  # to `trainexec launch`, when it started this task
        try:
            yield
        finally:
            if self._watchdog is not None:
                self._watchdog.stop()
                self._watchdog = None

    # -- serving --------------------------------------------------------------------------
    def start_server(self) -> Any:
        from trainexec.cluster.keepalive import apply_keepalive

        apply_keepalive()  # before the server makes its gRPC channels (to the ps)
        return start_standard_server(self.strategy.cluster,
                                     server_factory=self.settings.server_factory)

    def serving_job(self) -> ServingJob:
        cluster = self.strategy.cluster
        return ServingJob(task=cluster.task_name, model_dir=self.model_dir,
                          waited_for=frozenset({cluster.chief_task or CHIEF_TASK}),
                          max_steps=self.max_steps,
                          serves="ParameterServerStrategy training")

    # -- training -------------------------------------------------------------------------
    def train(self, plan: RolePlan, on_save: EvaluateOnSave | None,
              record_finished: Callable[[], None]) -> Trained:
        """Trains to max_steps; a MultiWorkerMirroredStrategy peer watches the chief
        (and records that it finished with `record_finished` if it must leave early)."""
        strategy, keras = self.strategy, self.keras
        # MultiWorkerMirroredStrategy tasks leave together (`after_records`).
        if strategy.kind == MULTI_WORKER_MIRRORED:
            self._peers_watch = FinishedTasks.starting_now(self.model_dir,
                                                           strategy.cluster.task_name)
            if not plan.writes_checkpoints:
                chief = strategy.cluster.chief_task
                assert chief is not None, "a MultiWorkerMirroredStrategy task has a cluster"
                # A peer also leaves by itself if, the chief done, it is still in this
                # role (inside TensorFlow, or waiting): the watchdog ends with the role.
                self._watchdog = PeerWatchdog(
                    FinishedTasks(self.model_dir, self._peers_watch.since_nsec),
                    chief, strategy.cluster.task_name,
                    self.model_dir, record_finished, cleanup=scratch.remove_all).start()
        summaries = None
        if plan.writes_checkpoints and keras.summaries:
            from trainexec.keras.fit.summaries import TrainingSummaries

            summaries = TrainingSummaries(self.model_dir)
        train_spec = self.settings.train_spec
        try:
            trained = train_to_max_steps(
                strategy, keras.build_model, self.model_dir, train_spec.input_fn,
                self.max_steps, keras.save_checkpoints_steps,
                keras.keep_checkpoint_max,
                (*keras.callbacks, *self._reporting_callbacks(plan, summaries)),
                keras.verbose,
                after_save=(lambda path, step: on_save.after_save(step, path))
                if on_save is not None else None)
        finally:
            if summaries is not None:
                summaries.close()
        if trained.stopped_early:
            logger.warning("Training %s", trained.reason)
        logger.info("Training finished at step %s", trained.step)
        return dataclasses.replace(
            trained, final_step=trained.step if trained.checkpoint is not None else None)

    def after_records(self, plan: RolePlan, trained: Trained) -> None:
        if self._peers_watch is None or trained.stopped_early or trained.skipped:
            return
        # A peer's last `fit` steps still need this task's server: leave together.
        wait_for_training_peers(self._peers_watch, self.strategy.cluster, self._clock)

    def _reporting_callbacks(self, plan: RolePlan, summaries: Any) -> list:
        """The chief's (or a local run's) progress reports: log lines (unless
        `log_step_count_steps` is None), TensorBoard `summaries` (when given) and,
        whatever those two settings, the status record `trainexec launch` shows
        when it started this task (`trainexec.keras.fit.progress`)."""
        if not plan.writes_checkpoints:
            return []
        from trainexec.keras.fit.progress import ProgressTracker, log_progress, progress_callback

        logs = self.keras.log_step_count_steps is not None
        sinks = [sink for sink in (log_progress if logs else None, self._status_sink(),
                                   summaries) if sink is not None]
        if not sinks:
            return []
        tracker = ProgressTracker(self.max_steps,
                                  self.keras.log_step_count_steps or 100, sinks,
                                  self._clock)
        return [progress_callback(tracker)]

    def _status_sink(self) -> Callable[[Any], object] | None:
        from trainexec.contract.task_status import TRAINING, StatusReporter

        strategy = self.strategy
        reporter = StatusReporter.from_env("local" if strategy.is_local
                                           else strategy.cluster.task_name,
                                           clock=self._clock)
        if reporter is None:
            return None
        model_dir = self.model_dir
        return lambda progress: reporter.report(TRAINING, {**progress.to_json(),
                                                           "model_dir": model_dir})

    # -- evaluating -----------------------------------------------------------------------
    @contextlib.contextmanager
    def evaluation(self) -> Iterator[Evaluation]:
        """A `KerasTarget` on a model of its own, built without a strategy; the
        evaluation summaries under `model_dir/eval` (`eval_<name>`), unless
        `summaries=False`, closed when the context exits."""
        with self._evaluation_summaries() as listeners:
            yield Evaluation(self._eval_target(), listeners)

    def _eval_target(self) -> Any:
        from trainexec.keras.evaluate.target import KerasTarget  # loads TensorFlow

        eval_spec = self._eval_spec()
        model = self.keras.build_model()
        check_compiled(model)
        return KerasTarget(model, call_input_fn(eval_spec.input_fn), self.model_dir,
                           steps=eval_spec.steps, verbose=self.keras.verbose,
                           clock=self._clock)

    def _eval_spec(self) -> EvalSpec:
        """The job's EvalSpec: there is one where this task evaluates (the sequence and
        `KerasTrainer.task_hooks` checked, `JobSettings.eval_spec_for`)."""
        return self.settings.eval_spec_for(
            "local" if self.strategy.is_local else self.strategy.cluster.task_name)

    @contextlib.contextmanager
    def _evaluation_summaries(self) -> Iterator[Sequence[Any]]:
        if not self.keras.summaries:
            yield ()
            return
        from trainexec.evaluation.summaries import EvalSummaries, eval_summary_dir

        summaries = EvalSummaries(eval_summary_dir(self.model_dir, self._eval_spec().name))
        try:
            yield (summaries,)
        finally:
            summaries.close()
