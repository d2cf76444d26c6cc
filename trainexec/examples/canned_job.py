"""A small real job on a canned estimator (`trainexec.estimator`), on embedded data.

The blobs of the Estimator job (three Gaussian classes in 4 dimensions, fixed seed),
classified by tf.estimator's canned estimators on trainexec's engine, every TensorFlow
line: `--model wide_deep` (the default) a `DNNLinearCombinedClassifier` with the
numeric features in its DNN and their buckets in its linear part, `--model dnn` a
`DNNClassifier`, `--model linear` a `LinearClassifier`. It runs as any cluster role
through `trainexec.train_and_evaluate`, exporting the final model once.

    python -m trainexec.examples.canned_job --model-dir /tmp/canned --max-steps 300
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

import tensorflow as tf

from trainexec.examples.arguments import job_parser
from trainexec.examples.blobs import CLASSES, FEATURES
from trainexec.examples.estimator_job import StepCounter, build_specs, engine_module
from trainexec.examples.report import report_result

__all__ = ["MODELS", "main", "make_canned_estimator"]

MODELS = ("wide_deep", "dnn", "linear")
HIDDEN_UNITS = [16]


def make_canned_estimator(model_dir: str, save_checkpoints_steps: int = 50,
                          model: str = "wide_deep", engine: str = "native",
                          dnn_optimizer: Any = None, linear_optimizer: Any = None,
                          **run_config: Any):
    """The blobs classifier as the canned estimator `model` (one of `MODELS`), on
    trainexec's engine (`engine="native"`) or on tf.estimator's (`"tf"`, TensorFlow
    2.15: the same estimator, for comparisons). Its optimizers: v1 Adam (0.05) for the
    DNN, v1 Ftrl (0.3) for the linear part, unless given (tf.estimator 2.15's canned
    estimators take Keras optimizers or their names, e.g. "Adam", "Ftrl")."""
    estimator = engine_module(engine)
    config = estimator.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps,
        save_summary_steps=50, log_step_count_steps=50, keep_checkpoint_max=20,
        **run_config)
    x = tf.feature_column.numeric_column("x", shape=(FEATURES,))
    buckets = tf.feature_column.bucketized_column(x, boundaries=[-1.0, 0.0, 1.0])
    if dnn_optimizer is None:
        dnn_optimizer = lambda: tf.compat.v1.train.AdamOptimizer(0.05)  # noqa: E731
    if linear_optimizer is None:
        linear_optimizer = lambda: tf.compat.v1.train.FtrlOptimizer(0.3)  # noqa: E731
    if model == "dnn":
        return estimator.DNNClassifier(HIDDEN_UNITS, [x], n_classes=CLASSES,
                                       optimizer=dnn_optimizer, config=config)
    if model == "linear":
        return estimator.LinearClassifier([x, buckets], n_classes=CLASSES,
                                          optimizer=linear_optimizer, config=config)
    return estimator.DNNLinearCombinedClassifier(
        config=config, n_classes=CLASSES, linear_feature_columns=[buckets],
        linear_optimizer=linear_optimizer, dnn_feature_columns=[x],
        dnn_hidden_units=HIDDEN_UNITS, dnn_optimizer=dnn_optimizer)


def main(argv: list[str] | None = None) -> int:
    parser = job_parser(__doc__, throttle_secs=5)
    parser.add_argument("--model", choices=MODELS, default="wide_deep")
    parser.add_argument("--worker-delay-secs", type=float, default=None,
                        help="seconds per worker index (default 5)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    tf.get_logger().setLevel(logging.ERROR)
    import trainexec

    estimator = make_canned_estimator(args.model_dir, args.save_checkpoints_steps,
                                      args.model)
    counter = StepCounter()
    train_spec, eval_spec = build_specs(
        None if args.max_steps <= 0 else args.max_steps, 0, args.throttle_secs,
        train_hooks=[counter], engine="native")
    role = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {}).get("type", "local")
    worker_delay = (None if args.worker_delay_secs is None
                    else trainexec.WorkerDelay(args.worker_delay_secs))
    started = time.monotonic()
    result = trainexec.train_and_evaluate(estimator, train_spec, eval_spec,
                                          worker_delay=worker_delay)
    elapsed = time.monotonic() - started
    report_result(result, args.result_file, elapsed)
    print(f"role {role} done in {elapsed:.1f}s after {counter.steps} local training steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
