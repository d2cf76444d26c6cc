"""A piece of the child programs of ParameterServerStrategy process tests
(tests/cluster/): `counting(strategy)` gives a variable on the ps and a way to schedule
steps that each add 1 to it through a `ClusterCoordinator`."""

import textwrap

__all__ = ["COUNTING"]

COUNTING = textwrap.dedent("""
    def counting(strategy):
        import tensorflow as tf

        with strategy.scope():
            total = tf.Variable(0.0)
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

        @tf.function
        def step():
            total.assign_add(1.0)

        def run(steps):
            for _ in range(steps):
                coordinator.schedule(step)
            coordinator.join()
        return total, run
""")
