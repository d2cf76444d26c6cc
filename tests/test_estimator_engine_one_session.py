"""trainexec/estimator_engine/one_session.py with TensorFlow's own `MonitoredSession`: the
session of a MultiWorkerMirroredStrategy group's task is created once; the refusal of a
second one carries the error that made the first go, so the exit-code contract names a
storage fault as the storage's (`storage_unavailable`) and anything else as a lost peer."""

import logging

import pytest
import tensorflow as tf

from trainexec.contract.exit_codes import PEER_LOST, STORAGE_UNAVAILABLE, classify
from trainexec.errors import PeerLostError
from trainexec.estimator_engine.one_session import OneSession

pytestmark = pytest.mark.tf_line

GCS_GAVE_UP = ("Error executing an HTTP request: HTTP response code 503 with body "
               "'Service Unavailable' when initiating an upload to "
               "gs://bucket/model/model.ckpt-200_temp/part-00000-of-00001.data-00000-of-00001")
PEER_RESET = "Collective ops is aborted by: Connection reset by peer"


class Creator:
    """A session creator of a graph with a global step, counting its sessions; its
    first `fail_first` creations raise `error`."""

    resumed_from_cluster_step = 7

    def __init__(self, graph, fail_first=0, error=None):
        self.graph, self.fail_first, self.error, self.sessions = graph, fail_first, error, 0

    def create_session(self):
        self.sessions += 1
        if self.sessions <= self.fail_first:
            raise self.error
        session = tf.compat.v1.Session(graph=self.graph)
        with self.graph.as_default():
            session.run(tf.compat.v1.global_variables_initializer())
        return session


class FailsOnce(tf.compat.v1.train.SessionRunHook):
    """Raises `error` after the second step, once: as a save failing in a hook would."""

    def __init__(self, error):
        self.error, self.steps = error, 0

    def after_run(self, run_context, run_values):
        self.steps += 1
        if self.steps == 2:
            raise self.error


def _train(creator, hooks):
    with creator.recording(), tf.compat.v1.train.MonitoredSession(
            session_creator=creator, hooks=hooks) as session:
        for _ in range(5):
            session.run(creator.train_op)


def _graph():
    graph = tf.Graph()
    with graph.as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.assign_add(step, 1)
    return graph, train_op


def _one(graph, train_op, **failing):
    one = OneSession(Creator(graph, **failing), "worker:1")
    one.train_op = train_op  # what _train runs
    return one


def test_the_session_is_created_once_and_the_creators_own_attributes_pass_through():
    graph, train_op = _graph()
    one = _one(graph, train_op)
    one.create_session().close()
    assert one.resumed_from_cluster_step == 7
    with pytest.raises(PeerLostError, match="worker:1: a step of the "
                       "MultiWorkerMirroredStrategy group failed") as raised:
        one.create_session()
    assert one._creator.sessions == 1 and raised.value.__cause__ is None
    assert classify(raised.value, in_cluster=True, terminating=False) == PEER_LOST


@pytest.mark.parametrize("error, cause", [
    (tf.errors.UnavailableError(None, None, GCS_GAVE_UP), STORAGE_UNAVAILABLE),
    (tf.errors.AbortedError(None, None, PEER_RESET), PEER_LOST)])
def test_a_step_that_failed_ends_the_task_with_what_failed_it(error, cause):
    graph, train_op = _graph()
    with graph.as_default():
        one = _one(graph, train_op)
        with pytest.raises(PeerLostError) as raised:
            _train(one, [FailsOnce(error)])
    assert one._creator.sessions == 1  # not created again: the group restarts
    assert raised.value.__cause__ is error
    assert type(error).__name__ in str(raised.value)
    assert classify(raised.value, in_cluster=True, terminating=False) == cause


def test_a_first_session_that_could_not_restore_from_storage_says_so():
    graph, train_op = _graph()
    error = tf.errors.UnavailableError(None, None, GCS_GAVE_UP)
    with graph.as_default():
        one = _one(graph, train_op, fail_first=1, error=error)
        with pytest.raises(PeerLostError) as raised:
            _train(one, [])
    assert raised.value.__cause__ is error
    assert classify(raised.value, in_cluster=True, terminating=False) == STORAGE_UNAVAILABLE


def test_recording_listens_only_while_it_lasts_and_shows_no_more_than_before(caplog):
    graph, train_op = _graph()
    one = _one(graph, train_op)
    tensorflow_logger = logging.getLogger("tensorflow")
    filters, level = list(tensorflow_logger.filters), tensorflow_logger.level
    tensorflow_logger.setLevel(logging.WARNING)  # TensorFlow's own default
    try:
        with caplog.at_level(logging.DEBUG), one.recording():
            tf.compat.v1.logging.info("an INFO line: %s", ValueError("kept"))
            tf.compat.v1.logging.warning("a WARNING line")
        assert [r.getMessage() for r in caplog.records
                if r.name == "tensorflow"] == ["a WARNING line"]
        assert str(one.last_error) == "kept"
        assert tensorflow_logger.filters == filters
        assert tensorflow_logger.level == logging.WARNING
    finally:
        tensorflow_logger.setLevel(level)
