"""A small real Estimator job on embedded data, written for train_and_evaluate.

The data is generated in-process (three Gaussian classes in 4 dimensions, fixed
seed), so nothing is downloaded. The same script runs as any cluster role: only
TF_CONFIG differs.

`--engine native` (the default where TensorFlow has no tf.estimator: 2.16 and later)
trains a custom `model_fn` (a 16-unit hidden layer, written with plain variables, so
it runs under Keras 3 too) on trainexec's own Estimator (`trainexec.estimator`);
`--engine tf` (the default on the 2.15 line) trains tf.estimator's DNNClassifier of
the same shape. `--api tf` calls `tf.estimator.train_and_evaluate` instead of
trainexec's drop-in, for side-by-side comparisons (2.15 line only). `--strategy` trains
with a RunConfig `train_distribute` strategy (`STRATEGIES`): `mwms`
(MultiWorkerMirroredStrategy: the chief and every worker train in step), `ps`
(tf.compat.v1's ParameterServerStrategy) or `mirrored` (one machine).

    python -m trainexec.examples.estimator_job --model-dir /tmp/blobs --max-steps 300
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time

import tensorflow as tf

from trainexec.errors import ConfigError
from trainexec.examples.arguments import job_parser
from trainexec.examples.blobs import CLASSES, FEATURES, make_data
from trainexec.examples.report import report_result
from trainexec.estimator_trainer.availability import estimator_problem, tf_estimator

__all__ = ["ENGINES", "STRATEGIES", "build_specs", "default_engine", "engine_module",
           "local_training_steps", "make_data", "make_estimator", "model_fn", "main"]

ENGINES = ("native", "tf")
STRATEGIES = ("mirrored", "mwms", "ps")
HIDDEN_UNITS = 16
LEARNING_RATE = 0.05


def default_engine() -> str:
    """`tf` where tf.estimator exists (the 2.15 line), else `native`."""
    return "tf" if estimator_problem() is None else "native"


def engine_module(engine: str | None = None):
    """`trainexec.estimator` (native) or `tf.estimator` (tf; ConfigError where there
    is none)."""
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise ConfigError(f"--engine {engine!r}: choose native (trainexec.estimator) or "
                          "tf (tf.estimator, TensorFlow 2.15)")
    if engine == "tf":
        return tf_estimator()
    import trainexec.estimator
    return trainexec.estimator


def make_strategy(name: str | None):
    """The `train_distribute` strategy named by `--strategy` (`STRATEGIES`), or None."""
    if name is None:
        return None
    if name not in STRATEGIES:
        raise ConfigError(f"--strategy {name!r}: choose one of {', '.join(STRATEGIES)}")
    v1 = tf.compat.v1.distribute
    if name == "mirrored":
        return v1.MirroredStrategy()
    if name == "mwms":  # as TensorFlow's multi-worker Estimator tutorial builds it
        return tf.distribute.experimental.MultiWorkerMirroredStrategy()
    return v1.experimental.ParameterServerStrategy()


def model_fn(features, labels, mode, params):
    """The blobs classifier as a custom model_fn (no layers: it runs under Keras 3)."""
    api = engine_module(params["engine"])
    glorot = tf.compat.v1.glorot_uniform_initializer
    x = features["x"]
    w1 = tf.compat.v1.get_variable("hidden/kernel", [FEATURES, HIDDEN_UNITS],
                                   initializer=glorot())
    b1 = tf.compat.v1.get_variable("hidden/bias", [HIDDEN_UNITS],
                                   initializer=tf.compat.v1.zeros_initializer())
    w2 = tf.compat.v1.get_variable("logits/kernel", [HIDDEN_UNITS, CLASSES],
                                   initializer=glorot())
    b2 = tf.compat.v1.get_variable("logits/bias", [CLASSES],
                                   initializer=tf.compat.v1.zeros_initializer())
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    classes = tf.argmax(logits, axis=1)
    predictions = {"class_ids": classes, "probabilities": tf.nn.softmax(logits),
                   "logits": logits}
    if mode == api.ModeKeys.PREDICT:
        return api.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == api.ModeKeys.EVAL:
        return api.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})
    train_op = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return api.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_estimator(model_dir: str, save_checkpoints_steps: int = 50, engine: str | None = None,
                   **run_config: object):
    """The blobs classifier: trainexec.estimator's Estimator of `model_fn` (native), or
    tf.estimator's DNNClassifier (tf; ConfigError where there is no tf.estimator)."""
    engine = engine or default_engine()
    api = engine_module(engine)
    config = api.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps,
        save_summary_steps=50, log_step_count_steps=50, keep_checkpoint_max=20,
        **run_config)
    if engine == "native":
        return api.Estimator(model_fn, config=config, params={"engine": engine})
    return api.DNNClassifier(
        hidden_units=[HIDDEN_UNITS], n_classes=CLASSES, config=config,
        feature_columns=[tf.feature_column.numeric_column("x", shape=(FEATURES,))],
        optimizer=lambda: tf.keras.optimizers.legacy.Adam(learning_rate=LEARNING_RATE))


def _train_input_fn() -> tf.data.Dataset:
    x, y = make_data(2000, seed=1)
    return (tf.data.Dataset.from_tensor_slices(({"x": x}, y))
            .shuffle(2000, seed=0).repeat().batch(32))


def _eval_input_fn() -> tf.data.Dataset:
    x, y = make_data(500, seed=2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(100)


def serving_input_receiver_fn(engine: str | None = None):
    inputs = {"x": tf.compat.v1.placeholder(tf.float32, [None, FEATURES], name="x")}
    return engine_module(engine).export.ServingInputReceiver(inputs, inputs)


# tf.estimator.SessionRunHook is this class, which every TensorFlow line keeps.
class StepCounter(tf.compat.v1.train.SessionRunHook):
    """Counts the training steps this process ran (its share of the cluster's)."""

    def __init__(self) -> None:
        self.steps = 0

    def after_run(self, run_context, run_values) -> None:
        self.steps += 1


def local_training_steps(lines: list[str], task: str) -> int | None:
    """The steps `task` ran, from its closing line in launcher output
    ("[worker:1] role worker done in 8.1s after 120 local training steps")."""
    pattern = re.compile(rf"\[{re.escape(task)}\] role \w+ done in .* after (\d+) local "
                         "training steps")
    for line in lines:
        found = pattern.match(line)
        if found:
            return int(found.group(1))
    return None


def build_specs(max_steps: int | None, start_delay_secs: float = 0,
                throttle_secs: float = 5, spec_module=None, train_hooks=(),
                engine: str | None = None):
    """(train_spec, eval_spec) with the engine's final exporter, from `spec_module`
    (default: the engine's module; ConfigError for tf where there is no tf.estimator)."""
    engine = engine or default_engine()
    api = engine_module(engine)
    spec_module = api if spec_module is None else spec_module
    exporter = api.FinalExporter("final", lambda: serving_input_receiver_fn(engine))
    train_spec = spec_module.TrainSpec(_train_input_fn, max_steps=max_steps,
                                       hooks=list(train_hooks))
    eval_spec = spec_module.EvalSpec(
        _eval_input_fn, steps=None, exporters=[exporter],
        start_delay_secs=start_delay_secs, throttle_secs=throttle_secs)
    return train_spec, eval_spec


def main(argv: list[str] | None = None) -> int:
    parser = job_parser(__doc__, throttle_secs=5)
    parser.add_argument("--start-delay-secs", type=float, default=0)
    parser.add_argument("--worker-delay-secs", type=float, default=None,
                        help="trainexec only: seconds per worker index (default 5)")
    parser.add_argument("--late-chief-secs", type=float, default=0,
                        help="the chief sleeps this long first, like a chief pod "
                        "scheduled after its workers (for tests and benchmarks)")
    parser.add_argument("--api", choices=("trainexec", "tf"), default="trainexec")
    parser.add_argument("--strategy", choices=STRATEGIES, default=None,
                        help="the RunConfig's train_distribute (default: none, "
                        "between-graph training)")
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="native: trainexec.estimator (the default on TensorFlow 2.16+); "
                        "tf: tf.estimator (the default on 2.15, its only line)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ConfigError as err:  # no tf.estimator, a malformed TF_CONFIG, ...
        print(f"{parser.prog}: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    engine = "tf" if args.api == "tf" else args.engine or default_engine()
    if engine == "tf":
        tf_estimator()  # fails first, before any logging or work, where it is missing
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    tf.get_logger().setLevel(logging.ERROR)

    role = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {}).get("type", "local")
    # The evaluator does not train: TensorFlow builds no MultiWorkerMirroredStrategy
    # there (TF_CONFIG's cluster leaves the evaluator out). It evaluates with this
    # machine's devices (which also lets it stand beside a cluster of workers alone).
    distribute = {} if args.strategy is None else (
        {"eval_distribute": make_strategy("mirrored")} if role == "evaluator"
        else {"train_distribute": make_strategy(args.strategy)})
    estimator = make_estimator(args.model_dir, args.save_checkpoints_steps, engine=engine,
                               **distribute)
    counter = StepCounter()
    train_spec, eval_spec = build_specs(
        None if args.max_steps <= 0 else args.max_steps, args.start_delay_secs,
        args.throttle_secs, train_hooks=[counter], engine=engine)
    if role == "chief" and args.late_chief_secs > 0:
        time.sleep(args.late_chief_secs)
    started = time.monotonic()
    if args.api == "tf":
        result = tf_estimator().train_and_evaluate(estimator, train_spec, eval_spec)
    else:
        import trainexec
        worker_delay = (None if args.worker_delay_secs is None  # None: the default
                        else trainexec.WorkerDelay(args.worker_delay_secs))
        result = trainexec.train_and_evaluate(estimator, train_spec, eval_spec,
                                              worker_delay=worker_delay)
    elapsed = time.monotonic() - started
    report_result(result, args.result_file, elapsed)
    print(f"role {role} done in {elapsed:.1f}s after {counter.steps} local training steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
