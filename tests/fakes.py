"""Hand-written fakes for timing and small branches (no mocks)."""

from __future__ import annotations

import logging
import os
import types

import tensorflow as tf

from trainexec.records.checkpoints import checkpoint_step
from trainexec.errors import ConfigError
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.tasks.hooks import TrainerHooks
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, RolePlan,
                               TrainerBase)


class FakeClock:
    """A clock whose time moves only when someone sleeps."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start
        self.sleeps: list[float] = []
        self.on_sleep = None  # callable(clock) run after each sleep

    def now(self) -> float:
        return self.time

    def sleep(self, secs: float) -> None:
        assert secs >= 0, secs
        self.sleeps.append(secs)
        self.time += secs
        if self.on_sleep is not None:
            self.on_sleep(self)


def write_checkpoint(directory: str, step: int, value: float = 0.0,
                     name: str = "model.ckpt") -> str:
    """Writes a tiny real checkpoint `directory/name-step` with a global_step."""
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, f"{name}-{step}")
    ckpt = tf.train.Checkpoint(v=tf.Variable(value),
                               global_step=tf.Variable(step, dtype=tf.int64))
    return ckpt.write(prefix)


def point_state_file_at(directory: str, prefix: str) -> None:
    """Makes `prefix` the directory's latest checkpoint (the `checkpoint` file)."""
    tf.compat.v1.train.update_checkpoint_state(directory, prefix)


class DirectoryTarget:
    """An EvaluationTarget over a real checkpoint directory, with fake metrics."""

    def __init__(self, model_dir: str, clock: FakeClock | None = None,
                 eval_secs: float = 0.0) -> None:
        self.model_dir = model_dir
        self.export_subject = self
        self.evaluated: list[str] = []
        self._clock = clock
        self._eval_secs = eval_secs

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.model_dir)

    def evaluate(self, checkpoint_path: str) -> dict:
        self.evaluated.append(checkpoint_path)
        if self._clock is not None:
            self._clock.time += self._eval_secs
        step = checkpoint_step(checkpoint_path)
        return {"global_step": step, "loss": 1.0 / (step + 1)}


class RecordingExporter:
    """An exporter that records its calls and writes a marker directory."""

    def __init__(self, name: str = "recorder") -> None:
        self.name = name
        self.calls: list[dict] = []

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        self.calls.append(dict(export_path=export_path, checkpoint_path=checkpoint_path,
                               step=eval_result["global_step"],
                               final=is_the_final_export, estimator=estimator))
        return export_path


class FinalOnlyExporter(RecordingExporter):
    """Exports only the final model (returns None otherwise), like FinalExporter."""

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        super().export(estimator, export_path, checkpoint_path, eval_result,
                       is_the_final_export)
        return export_path if is_the_final_export else None


class AttemptGuard(ContinuousEvalListener):
    """Counts evaluation attempts and stops the loop after `limit` of them: a loop
    that would spin forever ends, and its test fails instead of hanging."""

    def __init__(self, limit: int) -> None:
        self.limit, self.attempts = limit, 0

    def before_eval(self) -> bool:
        self.attempts += 1
        return self.attempts <= self.limit


class ClockedLog:
    """Collects (fake time, level, message) of the log records of `logger_name`
    (and its children) at INFO and above, while used as a context manager."""

    def __init__(self, clock: FakeClock, logger_name: str = "trainexec") -> None:
        self.clock, self.lines = clock, []
        self._logger = logging.getLogger(logger_name)
        lines = self.lines

        class _Handler(logging.Handler):
            def emit(self, record):
                lines.append((clock.now(), record.levelno, record.getMessage()))
        self._handler = _Handler(logging.INFO)

    def __enter__(self) -> "ClockedLog":
        self._level = self._logger.level
        self._logger.addHandler(self._handler)
        self._logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc) -> None:
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._level)

    def messages(self, prefix: str = "") -> list[tuple[float, str]]:
        return [(t, m) for t, _, m in self.lines if m.startswith(prefix)]


class FakeServer:
    """`tf.distribute.Server` as `trainexec.cluster.server.start_standard_server` makes it
    (`server_factory=FakeServer`): it keeps its arguments (`args`, the cluster spec as a
    dict), the environment it was made in (`environ`: what TensorFlow's gRPC would have
    read), and whether it was started and joined. `made` lists every one made (clear it
    first), `last` is the last one joined (reset it to None first)."""

    made: list["FakeServer"] = []
    last: "FakeServer | None" = None

    def __init__(self, cluster_spec, job_name, task_index, protocol, config, start):
        self.args = dict(cluster_spec=cluster_spec.as_dict(), job_name=job_name,
                         task_index=task_index, protocol=protocol, start=start)
        self.job_name, self.task_index = job_name, task_index
        self.environ = dict(os.environ)
        self.started = self.joined = False
        FakeServer.made.append(self)

    def start(self):
        self.started = True

    def join(self):
        self.joined = True
        FakeServer.last = self


class StubEstimator:
    """What the executor uses of an Estimator; 'evaluation' reads the step."""

    def __init__(self, model_dir, task_type=None, task_id=0):
        self.model_dir = str(model_dir)
        self.config = types.SimpleNamespace(task_type=task_type, task_id=task_id,
                                            session_config=None)
        self.evaluated = []

    def train(self, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        raise AssertionError("not a training task")

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        self.evaluated.append(checkpoint_path)
        step = int(checkpoint_path.rsplit("-", 1)[1])
        return {"global_step": step, "loss": 1.0 / (step + 1)}

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.model_dir)


class FakeEstimator(StubEstimator):
    """What the executor uses of an Estimator; 'training' writes real checkpoints."""

    def __init__(self, model_dir, task_type=None, task_id=0, max_delay=None):
        super().__init__(model_dir, task_type, task_id)
        self.config = types.SimpleNamespace(
            task_type=task_type, task_id=task_id, session_config=None,
            experimental_max_worker_delay_secs=max_delay, save_checkpoints_steps=10,
            save_checkpoints_secs=None)
        self.train_calls = []

    def train(self, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        self.train_calls.append(dict(max_steps=max_steps, hooks=hooks,
                                     saving_listeners=saving_listeners))
        for step in (0, 10, 20):
            prefix = write_checkpoint(self.model_dir, step)
            point_state_file_at(self.model_dir, prefix)
            for listener in saving_listeners or ():
                if step == 0:
                    listener.begin()
                listener.after_save(None, step)
        for listener in saving_listeners or ():
            listener.end(None, 20)
        return self


class FakeHooks(TrainerHooks):
    """A `FakeTrainer`'s hooks for one plan: no step of them runs. Tests that run a
    FakeTrainer's role replace the sequence (`trainexec.executor.run_role`) with
    `run_fake_role`, which hands back `result`."""

    def __init__(self, plan: RolePlan, model_dir: str) -> None:
        self.plan, self.model_dir = plan, model_dir
        self.result = FakeTrainer.result_for(plan)


def run_fake_role(plan: RolePlan, hooks: FakeHooks, settings) -> tuple | None:
    """`trainexec.tasks.roles.run_role` for a FakeTrainer: its hooks' `result`."""
    assert isinstance(hooks, FakeHooks) and hooks.plan == plan
    return hooks.result


class FakeTrainer(TrainerBase):
    """A `trainexec.trainer.Trainer` without a model: it plans a role for each
    task type (the Estimator's shapes, without its checks), or refuses the
    cluster with `refuse` (a ConfigError message), and records what the
    executor asks of it. Its hooks (`task_hooks`) run nothing: with `run_fake_role`
    as the sequence, a role returns `(metrics, exports)` naming the task for the roles
    that evaluate, else None; `plan_task` (the executor's `run_chief()`...) records
    the task type it is given."""

    def __init__(self, model_dir: str = "/tmp/fake-trainer", refuse: str | None = None):
        self.model_dir = model_dir
        self.refuse = refuse
        self.planned: list = []   # the clusters plan_role was given
        self.plans: list = []     # the plans it returned
        self.ran: list = []       # (plan, settings) task_hooks was given
        self.tasks: list = []     # (task type, cluster) plan_task was given

    def plan_role(self, cluster) -> RolePlan:
        self.planned.append(cluster)
        if self.refuse:
            raise ConfigError(self.refuse)
        plan = self._plan(cluster.task_name, cluster.role)
        self.plans.append(plan)
        return plan

    def plan_task(self, task_type, cluster) -> RolePlan:
        self.tasks.append((task_type, cluster))
        if task_type is None:
            return self._plan("local", "local")
        return self._plan(f"{task_type}:{cluster.task_index or 0}", task_type)

    @staticmethod
    def _plan(task: str, role: str) -> RolePlan:
        if role == "local":
            return RolePlan(task, TRAIN_AND_EVALUATE, writes_checkpoints=True, is_local=True)
        if role == "evaluator":
            return RolePlan(task, EVALUATE)
        if role == "ps":
            return RolePlan(task, SERVE, starts_server=True, strategy="fake")
        return RolePlan(task, TRAIN_AND_EVALUATE if role == "master" else TRAIN,
                        starts_server=True, start_delay=role == "worker",
                        waits_for_chief=role == "worker",
                        writes_checkpoints=role in ("chief", "master"), strategy="fake")

    def task_hooks(self, plan: RolePlan, settings) -> FakeHooks:
        self.ran.append((plan, settings))
        return FakeHooks(plan, self.model_dir)

    @staticmethod
    def result_for(plan: RolePlan) -> tuple | None:
        if plan.action == EVALUATE or plan.is_local:
            return {"global_step": 20, "task": plan.task}, [f"export of {plan.task}"]
        return None


def serve_as_keras_task(plan, model_dir, max_steps, poll_secs=1.0, clock=None,
                        server_factory=None):
    """A Keras ParameterServerStrategy worker's or ps's serving role, as the executor runs
    it (`KerasTrainer.task_hooks`, then `trainexec.tasks`); returns the server it started."""
    from trainexec.tasks.roles import run_role
    from trainexec.clock import SystemClock
    from trainexec.evaluation.listeners import ContinuousEvalListener
    from trainexec.keras.trainer import KerasTrainer, role_plan
    from trainexec.specs import TrainSpec
    from trainexec.trainer import JobSettings

    started = []

    def factory(*args, **kwargs):
        server = (server_factory or _default_server_factory())(*args, **kwargs)
        started.append(server)
        return server

    trainer = KerasTrainer(lambda: None, model_dir)
    settings = JobSettings(
        train_spec=TrainSpec(lambda: None, max_steps=max_steps), eval_spec=None,
        cluster=plan.cluster, clock=clock or SystemClock(), poll_secs=poll_secs,
        idle_timeout_secs=None, listener=ContinuousEvalListener(), server_factory=factory)
    trainer._plans[plan.cluster] = plan  # the plan given, not one made for this machine
    role = role_plan(plan)
    assert run_role(role, trainer.task_hooks(role, settings), settings) is None  # serves
    return started[-1]


def _default_server_factory():
    import tensorflow as tf

    return tf.distribute.Server
