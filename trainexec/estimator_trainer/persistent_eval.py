"""A persistent evaluation graph for Estimators: built once, then one session.

`estimator.evaluate(checkpoint_path=...)` builds a new graph and a new session
for every checkpoint (docs/benchmarks.md, "Evaluation speed", has the figures).
`PersistentEvaluation` builds the Estimator's own evaluation graph once (its
`model_fn` in EVAL mode on the `EvalSpec`'s `input_fn`, the loss metric added,
the global step fetched), finalizes it and keeps one session. Per checkpoint it
only restores the variables, re-runs the local init op (metric variables, eval
step), rewinds the input and runs the metric updates, then writes the same
summaries `estimator.evaluate` writes under `estimator.eval_dir(name)`.

What it cannot serve exactly it refuses with `NotServable`, whose message says
why; the caller (`trainexec.estimator_trainer.target.EstimatorTarget`) then falls back to
`estimator.evaluate`. `unservable_reason` is the check made before building;
more reasons show up while building (an `input_fn` that does not return a
`tf.data.Dataset`, `evaluation_hooks` from the `model_fn`) or later (the
Estimator's `model_fn` or params replaced, a hook adding ops to the finalized
graph). `TRAINEXEC_PERSISTENT_EVAL=0` turns the persistent path off.

Example:
    ```python
    if unservable_reason(estimator, eval_spec) is None:
        evaluation = PersistentEvaluation(estimator, eval_spec)  # or NotServable
        metrics = evaluation.evaluate("/model/model.ckpt-100")
        evaluation.close()
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Any

from trainexec.errors import ConfigError
from trainexec.estimator_trainer.compat import estimator_internals as internals

__all__ = ["ENV_VAR", "NotServable", "PersistentEvaluation", "persistent_enabled",
           "unservable_reason"]

logger = logging.getLogger(__name__)

ENV_VAR = "TRAINEXEC_PERSISTENT_EVAL"

# Estimator methods the persistent path stands in for: a subclass overriding
# one of them evaluates differently, so it keeps `estimator.evaluate`.
_STOOD_IN_FOR = internals.STOOD_IN_FOR
_GLOBAL_STEP = "global_step"
_LOSS = "loss"


class NotServable(Exception):
    """The persistent path cannot give `estimator.evaluate`'s result exactly;
    the message says why."""


def persistent_enabled(environ: Any = None) -> bool:
    """Whether `TRAINEXEC_PERSISTENT_EVAL` (unset, 1: yes; 0: no) allows the
    persistent path; ConfigError naming the value and the fix otherwise."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if value in ("", "1"):
        return True
    if value == "0":
        return False
    raise ConfigError(f"{ENV_VAR}={value!r} is not understood: set it to 1 (persistent "
                      "Estimator evaluation graph, the default) or 0 (estimator.evaluate "
                      "per checkpoint), or unset it")


def _overrides(obj: Any, base: type, name: str) -> bool:
    return getattr(type(obj), name, None) is not getattr(base, name, None)


def unservable_reason(estimator: Any, eval_spec: Any) -> str | None:
    """Why the persistent path cannot serve `estimator` and `eval_spec` (known
    before building), or None when it can try."""
    import tensorflow as tf

    from trainexec.estimator_trainer.availability import estimator_problem
    problem = estimator_problem()
    if problem is not None:
        return problem
    base = tf.estimator.Estimator
    if not isinstance(estimator, base):
        return f"{type(estimator).__name__} is not a tf.estimator.Estimator"
    for name in _STOOD_IN_FOR:
        if _overrides(estimator, base, name):
            return f"{type(estimator).__name__} overrides Estimator.{name}"
    if internals.eval_distribution(estimator) is not None:
        return "RunConfig.eval_distribute is set: evaluation runs under a distribution strategy"
    hook_base = tf.compat.v1.train.SessionRunHook
    for hook in eval_spec.hooks or ():
        if _overrides(hook, hook_base, "begin"):
            # begin() runs while a graph is built: once per evaluation with
            # estimator.evaluate, once per process with a persistent graph.
            return (f"eval hook {type(hook).__name__} defines begin(), which "
                    "estimator.evaluate calls on a new graph for every checkpoint")
    return None


def _split_input(result: Any) -> tuple[Any, Any]:
    """(features, labels) from what the input's iterator yields."""
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise NotServable("the input yields a tuple of length %d, not "
                              "(features, labels)" % len(result))
        return result[0], result[1]
    return result, None


class PersistentEvaluation:
    """The Estimator's evaluation graph, built once, and a session to run it.

    Raises NotServable (its message says why) when the graph it would build
    could not give `estimator.evaluate`'s results exactly. `evaluate` raises
    the same TensorFlow errors as `estimator.evaluate` for a checkpoint that is
    gone ("not a valid checkpoint" ValueError) or damaged (OutOfRangeError,
    DataLossError), and NotServable when the Estimator changed since (its
    `model_fn`, params or config replaced) or a hook tried to add ops.
    """

    def __init__(self, estimator: Any, eval_spec: Any) -> None:
        import tensorflow as tf

        reason = unservable_reason(estimator, eval_spec)
        if reason is not None:
            raise NotServable(reason)
        self._estimator = estimator
        self._built_from = (*internals.model_fn_and_config(estimator), estimator.params)
        self._steps = eval_spec.steps
        self.output_dir = estimator.eval_dir(eval_spec.name)  # where the eval summaries go
        self._hooks = list(eval_spec.hooks or ())
        # Its summary FileWriter (TensorFlow's, untyped), made on first use.
        self._writer: Any = None
        self.graph = tf.Graph()  # the evaluation graph, finalized below
        with self.graph.as_default():
            self._build(estimator, eval_spec)
            for hook in self._hooks:
                hook.begin()
            self.graph.finalize()  # nothing may add ops now: the graph cannot grow
        self._session = tf.compat.v1.Session(
            target=estimator.config.evaluation_master, graph=self.graph,
            config=internals.session_config(estimator))

    def _build(self, estimator: Any, eval_spec: Any) -> None:
        import tensorflow as tf

        mode = tf.estimator.ModeKeys.EVAL
        config = estimator.config
        tf.compat.v1.random.set_random_seed(config.tf_random_seed)
        global_step = internals.create_and_assert_global_step(estimator, self.graph)
        data = internals.call_input_fn(estimator, eval_spec.input_fn, mode)
        if not isinstance(data, tf.data.Dataset):
            raise NotServable(f"input_fn returned a {type(data).__name__}, not a "
                              "tf.data.Dataset, so its input cannot be rewound for the "
                              "next checkpoint")
        # One iterator slot, pointed at the eval data for an evaluation and at an empty
        # dataset in between (see `_release_input`).
        compat = tf.compat.v1.data
        iterator = compat.Iterator.from_structure(
            compat.get_output_types(data), compat.get_output_shapes(data),
            output_classes=compat.get_output_classes(data))
        self._input_init = iterator.make_initializer(data)
        self._input_release = iterator.make_initializer(data.take(0))
        features, labels = _split_input(iterator.get_next())
        spec = internals.call_model_fn(estimator, features, labels, mode, config)
        if spec.evaluation_hooks:
            hooks = ", ".join(type(hook).__name__ for hook in spec.evaluation_hooks)
            raise NotServable(f"the model_fn returns evaluation_hooks ({hooks}), new ones "
                              "for every estimator.evaluate")
        metric_ops = dict(spec.eval_metric_ops or {})
        for reserved in (_LOSS, _GLOBAL_STEP):
            if reserved in metric_ops:  # estimator.evaluate raises the ValueError
                raise NotServable(f"the model_fn defines a metric named {reserved!r}")
        metric_ops[_LOSS] = tf.compat.v1.metrics.mean(spec.loss)
        names = sorted(metric_ops)  # the order of the metrics dict and summaries
        self._values = {name: metric_ops[name][0] for name in names}
        self._values[_GLOBAL_STEP] = global_step
        eval_step = internals.get_or_create_eval_step()
        self._update = [tf.group(*[metric_ops[name][1] for name in names]),
                        tf.compat.v1.assign_add(eval_step, 1, use_locking=True)]
        from trainexec.estimator_engine.graph import with_local_variables_init

        scaffold = with_local_variables_init(spec.scaffold or tf.compat.v1.train.Scaffold())
        scaffold.finalize()
        self._saver = scaffold.saver
        self._local_init = scaffold.local_init_op

    def changed(self) -> str | None:
        """What about the Estimator changed since the graph was built, or None."""
        model_fn, config, params = self._built_from
        estimator = self._estimator
        now_model_fn, now_config = internals.model_fn_and_config(estimator)
        if now_model_fn is not model_fn:
            return "the Estimator's model_fn was replaced"
        if now_config is not config:
            return "the Estimator's config was replaced"
        if estimator.params != params:
            return "the Estimator's params changed"
        return None

    def evaluate(self, checkpoint_path: str) -> dict:
        """The metrics of one checkpoint, as `estimator.evaluate` returns them,
        with the same summaries written."""
        changed = self.changed()
        if changed is not None:
            raise NotServable(changed + " since the evaluation graph was built")
        with self.graph.as_default():
            try:
                results = self._run(checkpoint_path)
            except RuntimeError as err:
                if "finalized" not in str(err):
                    raise
                raise NotServable(f"something tried to add ops to the evaluation graph "
                                  f"({err})") from err
            self._write_summaries(results, checkpoint_path)
        return results

    def _run(self, checkpoint_path: str) -> dict:
        import tensorflow as tf

        session = self._session
        self._saver.restore(session, checkpoint_path)
        session.run(self._local_init)
        session.run(self._input_init)
        try:
            coordinator = tf.compat.v1.train.Coordinator()
            for hook in self._hooks:
                hook.after_create_session(session, coordinator)
            done = 0
            try:
                while self._steps is None or done < self._steps:
                    done += 1
                    if self._run_step() or coordinator.should_stop():
                        break
            except tf.errors.OutOfRangeError:
                pass  # the input is exhausted: the evaluation is complete
            for hook in self._hooks:
                hook.end(session)
            return session.run(self._values)
        finally:
            self._release_input()

    def _release_input(self) -> None:
        """Drops the eval data's iterator as soon as its evaluation ends, as closing
        `estimator.evaluate`'s session does.

        Kept until the next checkpoint instead, its destruction can stall that
        evaluation: tf.data's autotuning thread (TF 2.15) sleeps for a period that
        doubles with the iterator's age, up to 60 s, and sometimes misses the wake-up
        its cancellation sends, so destroying an iterator idle for 26 s once took
        14.5 s. Dropped here, that wait is bounded by the evaluation's own length.
        A failure here is logged, never raised: it would hide the evaluation's own
        error, and the next evaluation's initializer drops the iterator anyway.
        """
        import tensorflow as tf

        try:
            self._session.run(self._input_release)
        except (tf.errors.OpError, RuntimeError) as err:  # RuntimeError: session closed
            logger.warning("Could not release the evaluation input's iterator: %s", err)

    def _run_step(self) -> bool:
        """Runs the metric updates once, with the hooks; True when one asks to stop."""
        from trainexec.estimator_engine.hook_runner import run_with_hooks

        return run_with_hooks(self._session, self._update, self._hooks)

    def _write_summaries(self, results: dict, checkpoint_path: str) -> None:
        import tensorflow as tf

        step = results[_GLOBAL_STEP]
        from trainexec.estimator_engine.eval_summaries import describe_metrics, metrics_summary

        logger.info("Saving dict for global step %d: %s", step, describe_metrics(results))
        if self._writer is None:  # first use: it writes the (finalized) graph too
            self._writer = tf.compat.v1.summary.FileWriterCache.get(self.output_dir)
        self._writer.add_summary(metrics_summary(results), step)
        self._writer.flush()
        path_summary = tf.compat.v1.Summary()
        path_summary.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(
            checkpoint_path, dtype=tf.string))
        self._writer.add_summary(path_summary, step)
        self._writer.flush()

    def close(self) -> None:
        """Closes the session (the summary writer stays in FileWriterCache)."""
        self._session.close()
