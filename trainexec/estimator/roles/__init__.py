"""The Estimator's parts of a role that `trainexec.estimator.hooks` hands to `trainexec.tasks`.

* `evaluate_on_save`: the saving listener that evaluates a local run's or the
  master's own checkpoint saves, and tf.estimator's log lines for it;
* `readiness`: how often a worker re-checks that the chief has initialized the model.
"""
