"""`KerasTrainer` and `run_keras_job`: one Keras train-and-evaluate job, every role.

The same program runs as every task of a TF_CONFIG cluster, or alone; only
TF_CONFIG differs. `KerasTrainer.plan_role` decides this process's role
(`trainexec.keras.strategy.plan_for`, then `role_plan`), and
`KerasTrainer.run_role` carries out that `RolePlan` by its action and flags;
`run_keras_job` does both:

* local (no TF_CONFIG): trains to `max_steps`, evaluating after new checkpoints
  at most every `eval_spec.throttle_secs` and always at the end
  (`trainexec.evaluation.evaluate_on_save`); returns `(metrics, export_results)`;
* training tasks (chief and workers under MultiWorkerMirroredStrategy, the
  chief under ParameterServerStrategy): train (see `trainexec.keras.training`);
  the chief clears an earlier run's completion record first and records
  completion at the end, so evaluators stop by themselves; each records that it
  finished (`trainexec.records.finished_tasks`); returns `(None, [])`;
* ParameterServerStrategy workers and ps: serve until the chief has finished,
  then return `(None, [])` (`trainexec.keras.serving`);
* the evaluator: the continuous evaluation loop on `model_dir`; returns
  `(metrics, export_results)` once the run's last checkpoint is evaluated.

Example:
    ```python
    def build_model():
        model = tf.keras.Sequential([tf.keras.layers.Input((4,)),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    trainer = KerasTrainer(build_model, model_dir="/shared/run1",
                           save_checkpoints_steps=20)
    result = run_keras_job(trainer, TrainSpec(train_input_fn, max_steps=200),
                           EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    ```
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Callable, Iterable, Sequence

from trainexec.clock import Clock, SystemClock
from trainexec.cluster.config import ClusterConfig
from trainexec.records.completion import clear_training_complete, record_training_complete
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave, OnSaveWording
from trainexec.evaluation.listeners import ContinuousEvalListener, ListenerList
from trainexec.errors import ConfigError
from trainexec.records.finished_tasks import FinishedTasks, record_task_finished
from trainexec.keras import strategy as strategies
from trainexec.keras.input_data import call_input_fn
from trainexec.keras.peer_watchdog import PeerWatchdog
from trainexec.keras.serving import serve_until_training_over
from trainexec.keras.strategy import (DEFAULT, MIRRORED, MULTI_WORKER_MIRRORED,
                                      PARAMETER_SERVER, StrategyPlan, is_keras_3, plan_for,
                                      visible_gpus)
from trainexec.keras.training import check_compiled, train_to_max_steps
from trainexec.keras.restart_rule import rule_for_plan
from trainexec.contract.restart_announcements import announce
from trainexec.tasks.serving import wait_for_tasks_to_finish
from trainexec.contract.task_logging import configure_task_logging
from trainexec.specs import EvalSpec, TrainSpec, as_eval_spec, as_train_spec
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, JobSettings,
                               RolePlan)

__all__ = ["KerasTrainer", "role_plan", "run_keras_job"]

logger = logging.getLogger(__name__)

def _positive_int(field: str, value: Any, example: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        none = " or None" if allow_none else ""
        raise ConfigError(f"KerasTrainer `{field}` ({value!r}) must be a positive "
                          f"integer{none}, e.g. {example}")


class KerasTrainer:
    """A Keras model to train in every role: what `train_and_evaluate` takes for Keras.

    The same program runs in every task; the strategy follows from TF_CONFIG
    (see the module doc, and `run_keras_job`, which this configures).

    Example:
        ```python
        trainer = KerasTrainer(build_model, model_dir="gs://bucket/run",
                               save_checkpoints_steps=100)
        metrics, exports = trainexec.train_and_evaluate(
            trainer, TrainSpec(train_input_fn, max_steps=1000), EvalSpec(eval_input_fn))
        ```

    Args:
      build_model: called with no arguments, returns a compiled `tf.keras.Model`;
        trainexec calls it inside the scope of the strategy it chose (and once
        more, without a strategy, for the model that evaluates).
      model_dir: where the chief writes checkpoints (`ckpt-<step>`) and records;
        shared by every task of a cluster.
      save_checkpoints_steps: save a checkpoint every this many training steps
        (and at the end).
      callbacks: Keras callbacks for `model.fit` on every training task (on a
        Keras 3 cluster, for trainexec's loop, which calls them as `fit` does:
        `trainexec.keras.distributed_fit`).
      keep_checkpoint_max: how many checkpoints to keep (None keeps all).
      verbose: `model.fit` / `model.evaluate` verbosity (0, 1, 2 or "auto").
      log_step_count_steps: the chief (or a local run) logs its progress every
        this many steps and at `max_steps` (`trainexec.keras.progress`); None
        turns it off.
      summaries: TensorBoard summaries, as an Estimator writes them: training
        scalars under `model_dir` from the chief (at the progress steps: every
        `log_step_count_steps`, 100 when that is None), each evaluation's
        metrics under `model_dir/eval` (`eval_<name>`). False turns them off.
    """

    def __init__(self, build_model: Callable[[], Any], model_dir: str | os.PathLike,
                 save_checkpoints_steps: int = 100, callbacks: Sequence[Any] | None = None,
                 keep_checkpoint_max: int | None = 5, verbose: int | str = 0,
                 log_step_count_steps: int | None = 100, summaries: bool = True) -> None:
        if callable(getattr(build_model, "fit", None)):
            raise ConfigError(
                f"KerasTrainer `build_model` is a {type(build_model).__name__} instance: "
                "pass the function that builds and compiles the model (trainexec calls "
                "it inside the scope of the strategy it chooses), not the model itself")
        if not callable(build_model):
            raise ConfigError(
                f"KerasTrainer `build_model` ({build_model!r}) must be a function that "
                "returns a compiled tf.keras.Model (pass the function, do not call it)")
        if not isinstance(model_dir, (str, os.PathLike)) or not os.fspath(model_dir):
            raise ConfigError(
                f"KerasTrainer `model_dir` ({model_dir!r}) must be a non-empty path, the "
                "directory every task of the job shares for checkpoints")
        _positive_int("save_checkpoints_steps", save_checkpoints_steps, "100")
        _positive_int("keep_checkpoint_max", keep_checkpoint_max, "5", allow_none=True)
        _positive_int("log_step_count_steps", log_step_count_steps, "100", allow_none=True)
        if not isinstance(summaries, bool):
            raise ConfigError(f"KerasTrainer `summaries` ({summaries!r}) must be True (write "
                              "TensorBoard summaries under model_dir) or False")
        if verbose not in (0, 1, 2, "auto"):
            raise ConfigError(f"KerasTrainer `verbose` ({verbose!r}) must be 0 (silent), "
                              "1 (progress bar), 2 (one line per epoch) or 'auto'")
        self.build_model = build_model
        self.model_dir = os.fspath(model_dir)
        self.save_checkpoints_steps = save_checkpoints_steps
        self.callbacks = _check_callbacks(callbacks)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.verbose = verbose
        self.log_step_count_steps = log_step_count_steps
        self.summaries = summaries
        self._plans: dict[ClusterConfig, StrategyPlan] = {}

    def __repr__(self) -> str:
        return (f"KerasTrainer({getattr(self.build_model, '__name__', self.build_model)}, "
                f"model_dir={self.model_dir!r}, "
                f"save_checkpoints_steps={self.save_checkpoints_steps})")

    # -- the Trainer protocol (trainexec.trainer) ----------------------------------------
    def strategy_plan(self, cluster: ClusterConfig) -> StrategyPlan:
        """The strategy and action of the task `cluster` describes.

        Raises ConfigError, before anything starts, for a cluster Keras cannot
        train. Decided once per cluster:
        the executor plans the role, then runs it.
        """
        if cluster not in self._plans:
            self._plans[cluster] = plan_for(cluster, keras_3=is_keras_3(), gpus=visible_gpus())
        return self._plans[cluster]

    def plan_role(self, cluster: ClusterConfig) -> RolePlan:
        """What the task does: see the module doc."""
        return role_plan(self.strategy_plan(cluster))

    def run_role(self, plan: RolePlan, settings: JobSettings) -> tuple:
        """Carries out `plan` (from `plan_role`): `(metrics, export_results)`
        locally and on the evaluator, `(None, [])` in the other roles."""
        if settings.train_hooks:
            raise ConfigError(
                "train_hooks are Estimator SessionRunHooks, which KerasTrainer does not "
                "run: pass Keras callbacks as KerasTrainer(callbacks=[...]) instead")
        return _carry_out(self, plan, settings.cluster, settings.train_spec,
                          settings.eval_spec, poll_secs=settings.poll_secs,
                          idle_timeout_secs=settings.idle_timeout_secs,
                          listener=ListenerList([settings.listener]), clock=settings.clock)


# How long a MultiWorkerMirroredStrategy task that finished training waits for its
# peers to finish too before it leaves (an exited peer stalls the others' last steps).
PEER_EXIT_WAIT_SECS = 60.0

_STRATEGY_NAMES = {DEFAULT: "default strategy", MIRRORED: "MirroredStrategy",
                   MULTI_WORKER_MIRRORED: "MultiWorkerMirroredStrategy",
                   PARAMETER_SERVER: "ParameterServerStrategy"}


def role_plan(plan: StrategyPlan) -> RolePlan:
    """The executor's `RolePlan` for a Keras task's `StrategyPlan` (pure).

    No task waits out a start delay or for the chief (the strategy brings its
    tasks together); only ParameterServerStrategy workers and ps start a
    standard server: the other strategies own theirs.
    """
    task = "local" if plan.is_local else plan.cluster.task_name
    if plan.action == strategies.EVALUATE:
        return RolePlan(task, EVALUATE)
    strategy = _STRATEGY_NAMES[plan.kind]
    if plan.action == strategies.SERVE:
        return RolePlan(task, SERVE, starts_server=True, strategy=strategy)
    return RolePlan(task, TRAIN_AND_EVALUATE if plan.is_local else TRAIN,
                    writes_checkpoints=plan.is_chief, is_local=plan.is_local,
                    strategy=strategy)


def _check_keras_can(plan: RolePlan) -> None:
    """ConfigError for a plan no Keras task carries out: the strategy brings
    the tasks together (no start delay, no wait for the chief), and only a
    serving task starts a standard server (the strategies own theirs)."""
    if plan.start_delay or plan.waits_for_chief or plan.starts_server != (plan.action == SERVE):
        raise ConfigError(f"KerasTrainer cannot carry out this role: {plan.describe()}")


def _check_callbacks(callbacks: Sequence[Any] | None) -> tuple:
    if callbacks is None:
        return ()
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Iterable):
        raise ConfigError(f"KerasTrainer `callbacks` ({callbacks!r}) must be a list of "
                          "tf.keras.callbacks.Callback instances")
    import tensorflow as tf

    callbacks = tuple(callbacks)
    for callback in callbacks:
        if not isinstance(callback, tf.keras.callbacks.Callback):
            raise ConfigError(
                f"KerasTrainer `callbacks` holds {type(callback).__name__}, which is not a "
                "tf.keras.callbacks.Callback (for checkpoints use save_checkpoints_steps; "
                "trainexec writes them)")
    return callbacks


def _check_specs(train_spec: Any, eval_spec: Any, plan: RolePlan
                 ) -> tuple[TrainSpec, EvalSpec | None]:
    train_spec = as_train_spec(train_spec)
    if train_spec.max_steps is None:
        raise ConfigError(
            "TrainSpec max_steps is None: KerasTrainer trains a fixed number of steps; "
            "set TrainSpec(input_fn, max_steps=...) and repeat the training dataset")
    if train_spec.hooks or train_spec.saving_listeners:
        raise ConfigError(
            "TrainSpec hooks and saving_listeners are Estimator SessionRunHooks and "
            "CheckpointSaverListeners, which KerasTrainer does not run: pass Keras "
            "callbacks as KerasTrainer(callbacks=[...]) instead")
    evaluates = plan.action in (EVALUATE, TRAIN_AND_EVALUATE)
    if eval_spec is None:
        if evaluates:
            raise ConfigError(f"{plan.task} evaluates, so it needs an EvalSpec; got None")
        return train_spec, None
    eval_spec = as_eval_spec(eval_spec)
    if eval_spec.hooks:
        raise ConfigError("EvalSpec hooks are Estimator SessionRunHooks, which KerasTrainer "
                          "does not run; leave them out (Keras callbacks for evaluation "
                          "are not supported yet)")
    return train_spec, eval_spec


def run_keras_job(trainer: KerasTrainer, train_spec: Any, eval_spec: Any,
                  cluster: ClusterConfig | None = None, *, poll_secs: float = 1.0,
                  evaluator_idle_timeout_secs: float | None = None,
                  listeners: Iterable[ContinuousEvalListener] = (),
                  clock: Clock | None = None) -> tuple:
    """Plays this process's role of the job (see the module doc).

    Returns `(metrics, export_results)` locally and on the evaluator, and
    `(None, [])` for the other roles (no evaluation there), so that one line,
    `metrics, exports = trainexec.train_and_evaluate(...)`, runs in every
    role. Raises ConfigError, before anything starts, for a cluster
    Keras cannot train.
    """
    if not isinstance(trainer, KerasTrainer):
        raise TypeError(f"`trainer` must be a trainexec.KerasTrainer, got "
                        f"{type(trainer).__name__}")
    if poll_secs is None or poll_secs <= 0:
        raise ConfigError(f"`poll_secs` ({poll_secs}) must be > 0 seconds, e.g. 1.0")
    cluster = cluster if cluster is not None else ClusterConfig.from_env()
    return _carry_out(trainer, trainer.plan_role(cluster), cluster, train_spec, eval_spec,
                      poll_secs=poll_secs, idle_timeout_secs=evaluator_idle_timeout_secs,
                      listener=ListenerList(listeners), clock=clock or SystemClock())


def _carry_out(trainer: KerasTrainer, plan: RolePlan, cluster: ClusterConfig,
               train_spec: Any, eval_spec: Any, *, poll_secs: float,
               idle_timeout_secs: float | None, listener: ContinuousEvalListener,
               clock: Clock) -> tuple:
    """Carries out `plan`, by its action and flags, on the strategy `cluster` has."""
    strategy = trainer.strategy_plan(cluster)
    _check_keras_can(plan)
    train_spec, eval_spec = _check_specs(train_spec, eval_spec, plan)
    configure_task_logging(cluster.task_name)
    logger.debug("KerasTrainer job: %s", strategy.describe())
    announce(rule_for_plan(strategy))  # to `trainexec launch`, when it started this task
    if plan.action == SERVE:
        serve_until_training_over(strategy, trainer.model_dir, train_spec.max_steps,
                                  poll_secs, clock)
        return None, []  # no evaluation in this role
    if plan.action == EVALUATE:
        return _evaluate_continuously(trainer, train_spec, eval_spec, poll_secs,
                                      idle_timeout_secs, listener, clock, cluster.task_name)
    return _train(trainer, plan, strategy, train_spec, eval_spec, listener, clock)


# The lines a KerasTrainer logs as it evaluates its own saves.
_WORDING = OnSaveWording(
    stopped_before_eval="Stopping training: ContinuousEvalListener.before_eval asked to",
    stopped_after_eval="Stopping training: ContinuousEvalListener.after_eval asked to",
    throttled="Not evaluating step %s: less than throttle_secs (%ss) since the last "
              "evaluation",
    not_evaluated="Evaluating {path} found {status}",
    evaluated="Evaluated %s (step %s): %s")


def _train(trainer: KerasTrainer, plan: RolePlan, strategy: StrategyPlan,
           train_spec: TrainSpec, eval_spec: EvalSpec | None,
           listener: ContinuousEvalListener, clock: Clock) -> tuple:
    """A TRAIN or TRAIN_AND_EVALUATE plan: trains to max_steps, evaluating its
    own saves for TRAIN_AND_EVALUATE (on a model of its own, off the training
    thread); the job's listener and the results are a local run's."""
    on_save, eval_summaries = None, None
    if plan.action == TRAIN_AND_EVALUATE:
        eval_summaries = _eval_summaries(trainer, eval_spec)
        on_save = EvaluateOnSave(
            _eval_target(trainer, eval_spec, clock), eval_spec, train_spec.max_steps,
            ListenerList([listener if plan.is_local else None, eval_summaries]), clock,
            _WORDING, run_evaluation=_off_the_training_thread)
    try:
        trained = _train_watched(trainer, plan, strategy, train_spec, on_save, clock)
        if on_save is not None and trained.checkpoint is not None:
            on_save.finish(trained.step, trained.checkpoint)
    finally:
        if eval_summaries is not None:
            eval_summaries.close()
    if on_save is None or not plan.is_local:
        return None, []  # no evaluation in this role
    result = on_save.eval_result
    return (dict(result.metrics) if result else None), list(on_save.export_results or [])


def _train_watched(trainer: KerasTrainer, plan: RolePlan, strategy: StrategyPlan,
                   train_spec: TrainSpec, on_save: EvaluateOnSave | None,
                   clock: Clock) -> Any:
    """`_train_and_record`, a MultiWorkerMirroredStrategy peer watching the chief."""
    if plan.writes_checkpoints:
        clear_training_complete(trainer.model_dir)
    # MultiWorkerMirroredStrategy tasks leave together (see `_train_and_record`).
    peers_watch = (FinishedTasks.starting_now(trainer.model_dir, strategy.cluster.task_name)
                   if strategy.kind == MULTI_WORKER_MIRRORED else None)
    # A peer also leaves by itself if, the chief done, it is still in this role (inside
    # TensorFlow, or waiting): the watchdog ends when the role returns or raises.
    watchdog = (PeerWatchdog(FinishedTasks(trainer.model_dir, peers_watch.since_nsec),
                             strategy.cluster.chief_task,
                             strategy.cluster.task_name, trainer.model_dir).start()
                if peers_watch is not None and not plan.writes_checkpoints else None)
    try:
        return _train_and_record(trainer, plan, strategy, train_spec, on_save,
                                 peers_watch, clock)
    finally:
        if watchdog is not None:
            watchdog.stop()


def _train_and_record(trainer: KerasTrainer, plan: RolePlan, strategy: StrategyPlan,
                      train_spec: TrainSpec, on_save: EvaluateOnSave | None,
                      peers_watch: FinishedTasks | None, clock: Clock) -> Any:
    """Trains to max_steps, records completion (the chief) and finishing; under
    MultiWorkerMirroredStrategy then waits for every peer (`peers_watch`)."""
    summaries = None
    if plan.writes_checkpoints and trainer.summaries:
        from trainexec.keras.summaries import TrainingSummaries

        summaries = TrainingSummaries(trainer.model_dir)
    try:
        trained = train_to_max_steps(
            strategy, trainer.build_model, trainer.model_dir, train_spec.input_fn,
            train_spec.max_steps, trainer.save_checkpoints_steps, trainer.keep_checkpoint_max,
            (*trainer.callbacks, *_reporting_callbacks(trainer, plan, strategy, train_spec,
                                                       summaries, clock)),
            trainer.verbose,
            after_save=(lambda path, step: on_save.after_save(step, path))
            if on_save is not None else None)
    finally:
        if summaries is not None:
            summaries.close()
    if trained.stopped_early:
        logger.warning("Training %s", trained.reason)
    logger.info("Training finished at step %s", trained.step)
    if plan.writes_checkpoints:
        record_training_complete(trainer.model_dir, trained.checkpoint, trained.step,
                                 train_spec.max_steps)
    if not plan.is_local:
        record_task_finished(trainer.model_dir, strategy.cluster.task_name)
    if peers_watch is not None and not trained.stopped_early and not trained.skipped:
        # A peer's last `fit` steps still need this task's server: leave together.
        peers = frozenset(strategy.cluster.training_tasks) - {strategy.cluster.task_name}
        logger.info("Waiting for %s to finish training before leaving",
                    ", ".join(sorted(peers)))
        wait_for_tasks_to_finish(peers_watch, peers, PEER_EXIT_WAIT_SECS, clock=clock)
    return trained


def _reporting_callbacks(trainer: KerasTrainer, plan: RolePlan, strategy: StrategyPlan,
                         train_spec: TrainSpec, summaries: Any, clock: Clock) -> list:
    """The chief's (or a local run's) progress reports: log lines (unless
    `log_step_count_steps` is None), TensorBoard `summaries` (when given) and,
    whatever those two settings, the status record `trainexec launch` shows
    when it started this task (`trainexec.keras.progress`)."""
    if not plan.writes_checkpoints:
        return []
    from trainexec.keras.progress import ProgressTracker, log_progress, progress_callback

    logs = trainer.log_step_count_steps is not None
    sinks = [sink for sink in (log_progress if logs else None,
                               _status_sink(strategy, trainer.model_dir, clock), summaries)
             if sink is not None]
    if not sinks:
        return []
    tracker = ProgressTracker(train_spec.max_steps, trainer.log_step_count_steps or 100,
                              sinks, clock)
    return [progress_callback(tracker)]


def _status_sink(strategy: StrategyPlan, model_dir: str,
                 clock: Clock) -> Callable[[Any], None] | None:
    from trainexec.contract.task_status import TRAINING, StatusReporter

    reporter = StatusReporter.from_env("local" if strategy.is_local
                                       else strategy.cluster.task_name, clock=clock)
    if reporter is None:
        return None
    return lambda progress: reporter.report(TRAINING, {**progress.to_json(),
                                                       "model_dir": model_dir})


def _eval_target(trainer: KerasTrainer, eval_spec: EvalSpec, clock: Clock) -> Any:
    """A `KerasTarget` on a model of its own, built without a strategy."""
    from trainexec.keras.target import KerasTarget  # loads TensorFlow

    model = trainer.build_model()
    check_compiled(model)
    return KerasTarget(model, call_input_fn(eval_spec.input_fn), trainer.model_dir,
                       steps=eval_spec.steps, verbose=trainer.verbose, clock=clock)


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


def _evaluate_continuously(trainer: KerasTrainer, train_spec: TrainSpec,
                           eval_spec: EvalSpec, poll_secs: float,
                           idle_timeout_secs: float | None,
                           listener: ContinuousEvalListener, clock: Clock,
                           task_name: str) -> tuple:
    """The evaluator task: the same engine as the Estimator's evaluator (one
    evaluator per evaluation, the final export once per run)."""
    from trainexec.evaluation.evaluator_role import evaluate_until_done

    summaries = _eval_summaries(trainer, eval_spec)
    try:
        return evaluate_until_done(
            _eval_target(trainer, eval_spec, clock), eval_spec, train_spec.max_steps,
            task_name=task_name, clock=clock, poll_secs=poll_secs,
            idle_timeout_secs=idle_timeout_secs, listener=ListenerList([listener, summaries]))
    finally:
        if summaries is not None:
            summaries.close()


def _eval_summaries(trainer: KerasTrainer, eval_spec: EvalSpec) -> Any:
    """The evaluation summaries under `model_dir/eval` (`eval_<name>`), or None."""
    if not trainer.summaries:
        return None
    from trainexec.evaluation.summaries import EvalSummaries, eval_summary_dir

    return EvalSummaries(eval_summary_dir(trainer.model_dir, eval_spec.name))
