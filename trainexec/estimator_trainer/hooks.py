"""`EstimatorHooks`: how each step of a role's sequence (`trainexec.tasks`) is done for a
`tf.estimator.Estimator` (between-graph replication, as `tf.estimator.train_and_evaluate`).

* before anything, a task that trains with a `trainexec.estimator` RunConfig's
  MultiWorkerMirroredStrategy announces its restart group to `trainexec launch`: the
  chief and every worker, restarted together (their steps are collectives of all);
* its server: a standard TensorFlow server as the Estimator's RunConfig says (its
  session config and protocol; with a `train_distribute` strategy in a cluster, the
  config the strategy asks for: `trainexec.estimator_engine.strategy_setup`), from the
  job's `server_factory`; in a cluster with parameter servers, after its gRPC channels
  get keepalive (`trainexec.cluster.keepalive`), so a session call to a ps cut off
  fails, and the session recovers, instead of waiting on TCP;
* the worker's staggered start: `WorkerDelay` with RunConfig's
  `experimental_max_worker_delay_secs`;
* waiting for the chief: re-check every `poll_secs` (not TensorFlow's 30 s) that the chief
  has initialized the model (`Estimator.readiness_checks_every` of trainexec's own
  Estimator; for tf.estimator's, `trainexec.estimator_trainer.readiness`);
* training: `estimator.train` with the train spec's hooks and the job's `train_hooks`,
  and, where the task writes the checkpoints, the train spec's saving listeners; the
  evaluation after saves is one more saving listener
  (`trainexec.estimator_trainer.evaluate_on_save`);
* while it trains, a MultiWorkerMirroredStrategy task beats and, once the group's first
  step ran, leaves as a lost peer should a peer's beats stop for a minute
  (`trainexec.tasks.peer_heartbeats`: a step that never returned after the chief was
  killed held its restarted group for good);
* after its records, a MultiWorkerMirroredStrategy task waits (up to
  `PEER_EXIT_WAIT_SECS`) for its peers to record finishing too, so that they leave
  together (an exited peer stalls the others' last collective steps);
* serving: a ps serves until every training task has recorded that it finished, or until
  training is over and the ones missing had `DRAIN_SECS` more (`trainexec.tasks.serving`);
* evaluating: an `EstimatorTarget`, its persistent evaluation session closed at the end;
* its words: tf.estimator's log lines; roles without evaluation return None, as
  tf.estimator's do.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Callable, ContextManager, Iterator

from trainexec.contract.exit_codes import PREEMPTED, ExitCodes
from trainexec.contract.restart_announcements import RestartRule, announce
from trainexec.contract.termination import note_termination_requested
from trainexec.estimator_engine.run_config import RunConfig
from trainexec.estimator_engine.strategy_checks import MULTI_WORKER_MIRRORED, strategy_kind
from trainexec.estimator_engine.strategy_setup import server_config, serving_already
from trainexec.estimator_trainer.availability import TrainableModel
from trainexec.estimator_trainer.compat.run_config import distribute_coordinator_mode
from trainexec.estimator_trainer.evaluate_on_save import (ESTIMATOR_WORDING,
                                                          EvaluateOnSaveListener)
from trainexec.estimator_trainer.readiness import model_readiness_checks_every
from trainexec.estimator_trainer.target import EstimatorTarget
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave
from trainexec.records.checkpoints import latest_checkpoint
from trainexec.records.finished_tasks import FinishedTasks
from trainexec.cluster.keepalive import apply_keepalive
from trainexec.cluster.server import start_standard_server
from trainexec.tasks.hooks import BeforeTraining, Evaluation, Trained, TrainerHooks, TrainerWords
from trainexec.tasks.peer_heartbeats import PeerHeartbeats
from trainexec.tasks.peer_watchdog import LINGER_SECS, PeerWatchdog
from trainexec.tasks.serving import ServingJob, wait_for_training_peers
from trainexec.trainer import JobSettings, RolePlan

__all__ = ["DRAIN_SECS", "EstimatorHooks", "train_strategy_kind"]

logger = logging.getLogger(__name__)

# Once training is over, how long a ps waits for the training tasks that have not yet
# recorded finishing. A worker still running records within the peer watchdog's linger
# (and a poll) of the chief's records (`trainexec.tasks.peer_watchdog`); one still
# missing after that is gone (killed or preempted after the job succeeded: a finished
# TFJob restarts no pod) or not running yet (its restart finds the checkpoint at
# max_steps before it needs the ps. Not so in a run without max_steps or whose input ran
# out first: such a restart trains again against a ps that may be gone, a gap the 30 s
# drain only put off). Waiting longer only holds the ps past every pod's exit bound (30 s
# did: chaos regression estimator-48, a worker SIGTERMed just after the chief's success).
DRAIN_SECS = LINGER_SECS + 5.0
# How a MultiWorkerMirroredStrategy task names its strategy to the launcher (as Keras's).
_ANNOUNCED_MWMS = "multi_worker_mirrored"


def train_strategy_kind(estimator: Any) -> str | None:
    """The kind of a `trainexec.estimator` RunConfig's `train_distribute`
    (`trainexec.estimator_engine.strategy_checks`), or None: no strategy, or
    tf.estimator's own RunConfig (whose strategies its distribute coordinator runs)."""
    config = getattr(estimator, "config", None)
    strategy = getattr(config, "train_distribute", None)
    if strategy is None or not isinstance(config, RunConfig) or \
            distribute_coordinator_mode(config):
        return None
    return strategy_kind(strategy)


@contextlib.contextmanager
def _leave_on_sigterm(task: str) -> Iterator[None]:
    """Within the block, SIGTERM (a preemption) ends this MultiWorkerMirroredStrategy
    task with the exit-code contract's `preempted` code, at its next Python line (between
    steps), so that the launcher restarts its group, which resumes from the chief's last
    checkpoint. TensorFlow's own handler, installed with the strategy's server, would
    swallow it: the task would neither save nor leave. Nothing is saved (a save is a
    step of every task, and the others are not stopping)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    code = ExitCodes.from_env().code_for(PREEMPTED)

    def on_sigterm(signum: int, frame: Any) -> None:
        del signum, frame
        note_termination_requested()
        logger.warning("%s got SIGTERM (a preemption): leaving with exit code %d; its "
                       "group resumes from the chief's last checkpoint", task, code)
        raise SystemExit(code)

    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _after_each_step(callback: Callable[[], None]) -> Any:
    """A `SessionRunHook` that calls `callback` after every step."""
    import tensorflow as tf

    class AfterEachStep(tf.compat.v1.train.SessionRunHook):
        def after_run(self, run_context: Any, run_values: Any) -> None:
            callback()

    return AfterEachStep()


class EstimatorHooks(TrainerHooks):
    """The `trainexec.tasks.hooks.TrainerHooks` of one Estimator task (module doc).
    Its evaluation after saves runs on the training thread (the default)."""

    def __init__(self, estimator: TrainableModel, settings: JobSettings) -> None:
        self.estimator = estimator
        self.settings = settings
        self.model_dir = estimator.model_dir
        self._all_reduces = (train_strategy_kind(estimator) == MULTI_WORKER_MIRRORED
                             and settings.cluster.is_distributed
                             and settings.cluster.task_type in settings.cluster.training_cluster)
        self._peers_watch: FinishedTasks | None = None
        config = getattr(estimator, "config", None)
        throttle = getattr(settings.eval_spec, "throttle_secs", None)
        self.words = TrainerWords(
            on_save=ESTIMATOR_WORDING,
            local_start="Start train and evaluate loop: evaluation follows checkpoint saves "
                        f"(save_checkpoints_steps={getattr(config, 'save_checkpoints_steps', None)}, "
                        f"save_checkpoints_secs={getattr(config, 'save_checkpoints_secs', None)}), "
                        f"at most every {throttle}s.")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """A MultiWorkerMirroredStrategy task announces its restart group first, and
        leaves on SIGTERM (`_leave_on_sigterm`)."""
        if not self._all_reduces:
            yield
            return
        cluster = self.settings.cluster
        announce(RestartRule(cluster.task_name, cluster.training_tasks,
                             strategy=_ANNOUNCED_MWMS, ends_by_itself=True))
        with _leave_on_sigterm(cluster.task_name):
            yield

    def start_server(self) -> Any:
        config = self.estimator.config
        if self._all_reduces and serving_already(config):
            logger.info("%s: the MultiWorkerMirroredStrategy built in this process already "
                        "serves this task: no other server started",
                        self.settings.cluster.task_name)
            return None
        if self.settings.cluster.num_ps and not self._all_reduces:
            apply_keepalive()  # before the server makes its gRPC channels (to the ps)
        return start_standard_server(
            self.settings.cluster, getattr(config, "session_config", None),
            self.settings.server_factory, getattr(config, "protocol", None),
            server_config=server_config(config) if isinstance(config, RunConfig) else None)

    def before_training(self, plan: RolePlan) -> BeforeTraining:
        """A worker's staggered start (`WorkerDelay` with RunConfig's
        `experimental_max_worker_delay_secs`), then the wait for the chief's model,
        re-checked every `poll_secs`."""
        return BeforeTraining(
            start_delay_secs=self._start_delay_secs() if plan.start_delay else 0.0,
            waiting_for_chief=self._waiting_for_chief())

    def _start_delay_secs(self) -> float:
        cluster = self.settings.cluster
        return self.settings.worker_delay.secs_for(
            cluster.task_type, cluster.task_index,
            getattr(self.estimator.config, "experimental_max_worker_delay_secs", None))

    def _waiting_for_chief(self) -> ContextManager[Any]:
        checks_every = getattr(self.estimator, "readiness_checks_every", None)
        if checks_every is not None:  # trainexec.estimator.Estimator: public, no patch
            return checks_every(self.settings.poll_secs)
        return model_readiness_checks_every(self.settings.poll_secs)

    def train(self, plan: RolePlan, on_save: EvaluateOnSave | None,
              record_finished: Callable[[], None]) -> Trained:
        """Trains to max_steps. A worker also leaves by itself (recording that it
        finished) should it still be in `train` once the chief has finished: its session
        can wait for a ps that was restarted under it (`trainexec.tasks.peer_watchdog`)."""
        cluster = self.settings.cluster
        watchdog = None
        heartbeats = None
        if self._all_reduces:
            self._peers_watch = FinishedTasks.starting_now(self.model_dir, cluster.task_name)
            heartbeats = PeerHeartbeats(  # on real time: it ends the process
                self.model_dir, cluster.task_name, cluster.training_tasks,
                finished=FinishedTasks(self.model_dir, self._peers_watch.since_nsec).finished
            ).start()
        if not plan.writes_checkpoints and not plan.is_local and cluster.chief_task:
            watchdog = PeerWatchdog(
                FinishedTasks.starting_now(self.model_dir, cluster.task_name),
                cluster.chief_task, cluster.task_name, self.model_dir,
                record_finished).start()  # on real time: it ends the process
        try:
            return self._train(plan, on_save, heartbeats)
        finally:
            if watchdog is not None:
                watchdog.stop()
            if heartbeats is not None:
                heartbeats.stop()

    def _train(self, plan: RolePlan, on_save: EvaluateOnSave | None,
               heartbeats: PeerHeartbeats | None) -> Trained:
        train_spec = self.settings.train_spec
        # The train spec's saving listeners run where the checkpoints are saved.
        listeners = list(train_spec.saving_listeners) if plan.writes_checkpoints else []
        evaluating = EvaluateOnSaveListener(on_save) if on_save is not None else None
        if evaluating is not None:
            listeners.append(evaluating)
        hooks = list(train_spec.hooks) + list(self.settings.train_hooks)
        if heartbeats is not None:
            hooks.append(_after_each_step(heartbeats.group_formed))
        self.estimator.train(
            input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
            hooks=hooks, saving_listeners=listeners or None)
        latest = latest_checkpoint(self.model_dir)
        return Trained(step=latest.step if latest else None,
                       checkpoint=latest.path if latest else None,
                       final_step=evaluating.ended_at_step if evaluating else None)

    def after_records(self, plan: RolePlan, trained: Trained) -> None:
        """A MultiWorkerMirroredStrategy task waits for its peers to finish too."""
        if self._peers_watch is None:
            return
        wait_for_training_peers(self._peers_watch, self.settings.cluster, self.settings.clock)

    @contextlib.contextmanager
    def evaluation(self) -> Iterator[Evaluation]:
        """An `EstimatorTarget`; a corrupt-looking checkpoint is retried after
        `poll_secs` on the job's clock. (The sequence has checked there is an EvalSpec:
        `JobSettings.eval_spec_for`.)"""
        settings = self.settings
        yield Evaluation(EstimatorTarget(self.estimator, settings.eval_spec,
                                         clock=settings.clock, retry_secs=settings.poll_secs))

    def serving_job(self) -> ServingJob:
        cluster = self.settings.cluster
        return ServingJob(task=cluster.task_name, model_dir=self.model_dir,
                          waited_for=frozenset(cluster.training_tasks),
                          max_steps=self.settings.train_spec.max_steps, drain_secs=DRAIN_SECS)
