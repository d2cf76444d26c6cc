"""The session configs an Estimator's sessions get when the RunConfig gives none: soft
placement and one meta-optimizer pass everywhere, and in a cluster the device filters that
keep each task talking only to the tasks it needs."""

import pytest
import tensorflow as tf

from trainexec.estimator_engine.session_configs import (cluster_session_config,
                                                        default_session_config)

pytestmark = pytest.mark.tf_line


def expected(device_filters=()):
    graph_options = tf.compat.v1.GraphOptions()
    graph_options.rewrite_options.meta_optimizer_iterations = 1  # RewriterConfig.ONE
    return tf.compat.v1.ConfigProto(allow_soft_placement=True, graph_options=graph_options,
                                    device_filters=list(device_filters))


def test_the_default_places_softly_and_optimizes_once():
    config = default_session_config()
    assert config == expected()
    assert config.allow_soft_placement and list(config.device_filters) == []


@pytest.mark.parametrize("task_type, task_id, filters", [
    ("chief", 0, ["/job:ps", "/job:chief"]),
    ("master", 0, ["/job:ps", "/job:master"]),
    ("worker", 3, ["/job:ps", "/job:worker/task:3"]),   # not the other workers
    ("ps", 1, ["/job:ps", "/job:worker", "/job:chief", "/job:master"]),
])
def test_a_training_task_sees_the_ps_and_itself_a_ps_every_trainer(task_type, task_id,
                                                                     filters):
    assert cluster_session_config(task_type, task_id) == expected(filters)


@pytest.mark.parametrize("task_type", ["evaluator", "other_type"])
def test_other_tasks_get_none(task_type):
    assert cluster_session_config(task_type, 0) is None
