"""`Estimator.evaluate` and the evaluator's persistent evaluation: one graph, one session.

`EvaluationGraph` builds the EVAL graph once (the input, the `model_fn` in EVAL mode,
the loss's mean added as the `loss` metric, the global step fetched) and finalizes it;
`evaluate(checkpoint_path)` restores the checkpoint's variables into its one session,
re-runs the local init (metric variables, the eval step), rewinds a dataset input, runs
the metric updates with the hooks until the input ends or `steps` ran, and writes the
metrics to `<model_dir>/eval[_<name>]`. `Estimator.evaluate` is one such evaluation on
a new graph; the evaluator task keeps one graph for every checkpoint
(`Estimator.persistent_evaluation`), the cost tf.estimator paid per checkpoint saved.

With a RunConfig `eval_distribute` strategy the `model_fn` runs once per replica, each on
its own batch (`trainexec.estimator_engine.replicated_graph`): the metrics, the loss's
mean among them, count every replica's examples.

A model_fn's `evaluation_hooks` are begun once, when the graph is built. Evaluating
without a checkpoint (`warm_start=True`) takes the initial values from the
Estimator's `warm_start_from`, if it has one.

Example:
    ```python
    evaluation = EvaluationGraph(estimator, input_fn, steps=None, hooks=[], name=None)
    metrics = evaluation.evaluate("/m/model.ckpt-100")   # {"loss": ..., "global_step": 100}
    evaluation.close()
    ```
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Sequence

import tensorflow as tf

from trainexec.estimator_engine.eval_summaries import GLOBAL_STEP, write_eval_summaries
from trainexec.estimator_engine.graph import (build_graph, saver_for,
                                              with_local_variables_init)
from trainexec.estimator_engine.hook_runner import run_with_hooks
from trainexec.estimator_engine.model_spec import ModeKeys
from trainexec.estimator_engine.replicated_graph import build_replicated, replicated_metrics
from trainexec.estimator_engine.strategy_setup import for_task, session_config_for
from trainexec.estimator_engine.training import check_hooks, check_steps

__all__ = ["EvaluationGraph", "LOSS", "eval_dir"]

logger = logging.getLogger(__name__)

LOSS = "loss"


def eval_dir(model_dir: str, name: str | None) -> str:
    """`<model_dir>/eval`, or `<model_dir>/eval_<name>`."""
    return f"{model_dir.rstrip('/')}/{'eval' if not name else 'eval_' + name}"


class EvaluationGraph:
    """The EVAL graph of an Estimator and an input, built once (module doc)."""

    def __init__(self, estimator: Any, input_fn: Callable, steps: int | None = None,
                 hooks: Sequence[Any] | None = None, name: str | None = None,
                 warm_start: bool = False) -> None:
        check_steps("steps", steps, "evaluate")
        hooks = check_hooks(hooks, "evaluate")
        self._steps = steps
        self.output_dir = eval_dir(estimator.model_dir, name)
        config = estimator.config
        strategy = (for_task(config.eval_distribute, config, training=False)
                    if config.eval_distribute is not None else None)
        self.graph = tf.Graph()
        with self.graph.as_default(), (
                strategy.scope() if strategy is not None else contextlib.nullcontext()):
            if strategy is None:
                built = build_graph(estimator.model_fn, estimator.params, config,
                                    ModeKeys.EVAL, input_fn=input_fn, on_devices=False)
            else:
                built = build_replicated(estimator.model_fn, estimator.params, config,
                                         ModeKeys.EVAL, input_fn, strategy)
            spec = built.spec
            if warm_start:  # no checkpoint: the initial values come from warm_start_from
                estimator.warm_start_if_asked()
            metric_ops = dict(spec.eval_metric_ops)
            for reserved in (LOSS, GLOBAL_STEP):
                if reserved in metric_ops:
                    raise ValueError(f"Metric with name `{reserved}` is not allowed, because "
                                     "the Estimator already reports a metric of that name: "
                                     "rename it in the model_fn's eval_metric_ops")
            if strategy is None:
                metric_ops[LOSS] = tf.compat.v1.metrics.mean(spec.loss)
            else:  # each replica's loss, its updates grouped across the replicas
                metric_ops = replicated_metrics(spec, strategy, LOSS)
            self._values = {key: pair[0] for key, pair in metric_ops.items()}
            self._values[GLOBAL_STEP] = built.global_step
            eval_step = tf.compat.v1.get_variable(
                tf.compat.v1.GraphKeys.EVAL_STEP, shape=[], dtype=tf.int64,
                initializer=tf.compat.v1.zeros_initializer(), trainable=False,
                collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                             tf.compat.v1.GraphKeys.EVAL_STEP])
            self._update = [tf.group(*[pair[1] for pair in metric_ops.values()]),
                            tf.compat.v1.assign_add(eval_step, 1, use_locking=True)]
            self._input_hooks = list(built.input_hooks)
            self._hooks = [*(hooks or ()), *spec.evaluation_hooks]
            for hook in (*self._input_hooks, *self._hooks):  # before the Scaffold's ops,
                hook.begin()  # as a MonitoredSession begins them
            scaffold = with_local_variables_init(saver_for(spec.scaffold, config))
            scaffold.finalize()
            self._saver = scaffold.saver
            self._init = scaffold.init_op
            self._local_init = scaffold.local_init_op
            self._input_release = built.input_release
            self._queue_runners = bool(tf.compat.v1.get_collection(
                tf.compat.v1.GraphKeys.QUEUE_RUNNERS))
            # A dataset is rewound by its initializer (a strategy's iterator too); tensors
            # or queues cannot be.
            self.rewindable = (built.input_release is not None or strategy is not None) \
                and not self._queue_runners
            self.graph.finalize()
        session_config = (config.session_config if strategy is None
                          else session_config_for(strategy, config.session_config))
        self._session = tf.compat.v1.Session(target=config.evaluation_master,
                                             graph=self.graph, config=session_config)

    def evaluate(self, checkpoint_path: str | None) -> dict:
        """The metrics of `checkpoint_path` (None: the initial values, as tf.estimator
        evaluates a model_dir without a checkpoint), written as summaries."""
        with self.graph.as_default():  # a Saver restores eagerly outside its graph
            results = self._evaluate(checkpoint_path)
        write_eval_summaries(self.output_dir, results, checkpoint_path or "", self.graph)
        return results

    def _evaluate(self, checkpoint_path: str | None) -> dict:
        session = self._session
        if checkpoint_path is None:
            session.run(self._init)
        else:
            self._saver.restore(session, checkpoint_path)
        session.run(self._local_init)
        coordinator = tf.compat.v1.train.Coordinator()
        for hook in (*self._input_hooks, *self._hooks):
            hook.after_create_session(session, coordinator)
        threads = (tf.compat.v1.train.start_queue_runners(session, coord=coordinator)
                   if self._queue_runners else [])
        done = 0
        try:
            while self._steps is None or done < self._steps:
                done += 1
                if run_with_hooks(session, self._update, self._hooks) or \
                        coordinator.should_stop():
                    break
        except tf.errors.OutOfRangeError:
            pass  # the input is exhausted: the evaluation is complete
        finally:
            if threads:
                coordinator.request_stop()
                coordinator.join(threads, stop_grace_period_secs=10)
        for hook in self._hooks:
            hook.end(session)
        results = session.run(self._values)
        if self._input_release is not None:
            session.run(self._input_release)
        logger.info("Evaluated %s: %d batches", checkpoint_path, done)
        return results

    def close(self) -> None:
        self._session.close()
