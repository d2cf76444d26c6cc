"""trainexec/keras/faults/coordinator_release.py with stand-ins for TensorFlow's coordinator
objects (a real one: tests/cluster/test_keras_faults_coordinator_release_processes.py)."""

import logging
import threading
import types

import pytest

from trainexec.keras.faults.coordinator_release import release_coordinator

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]


class Handler:
    """A failure handler whose thread sleeps until `due` is set, then leaves when the
    run flag is down; `reconnecting` keeps it in a 'reconnection' until released."""

    def __init__(self, reconnecting=None):
        self._should_preemption_thread_run = True
        self._cluster_due_for_update_or_finish = threading.Event()
        self.reconnecting = reconnecting
        self.inside = threading.Event()  # set once a reconnection is under way
        self._preemption_handler_thread = threading.Thread(
            target=self._loop, name="WorkerPreemptionHandler", daemon=True)
        self._preemption_handler_thread.start()

    def _loop(self):
        while True:
            self._cluster_due_for_update_or_finish.wait()
            if not self._should_preemption_thread_run:
                return
            if self.reconnecting is not None:
                self.inside.set()
                self.reconnecting.wait()
            # TensorFlow clears the signal after a reconnection if the flag was up
            # when it looked: the race release_coordinator must survive.
            self._cluster_due_for_update_or_finish.clear()


class Stoppable:
    def __init__(self):
        self.stopped = False

    def stop(self):
        self.stopped = True

    def start_cancel(self):
        self.stopped = True


def _strategy(handler):
    cluster = types.SimpleNamespace(failure_handler=handler, workers=[Stoppable()],
                                    closure_queue=Stoppable(),
                                    resource_cancellation_mgr=Stoppable())
    coordinator = types.SimpleNamespace(_cluster=cluster)
    return types.SimpleNamespace(_cluster_coordinator=coordinator), cluster


def test_an_idle_coordinator_is_stopped_at_once():
    handler = Handler()
    strategy, cluster = _strategy(handler)
    assert release_coordinator(strategy, timeout_secs=5) is True
    assert not handler._preemption_handler_thread.is_alive()
    assert all(part.stopped for part in (cluster.workers[0], cluster.closure_queue,
                                         cluster.resource_cancellation_mgr))


def test_a_reconnection_that_ends_during_the_wait_is_waited_for():
    reconnecting = threading.Event()
    handler = Handler(reconnecting)
    handler._cluster_due_for_update_or_finish.set()  # a worker was lost: reconnecting
    assert handler.inside.wait(5)
    strategy, _ = _strategy(handler)
    threading.Timer(0.3, reconnecting.set).start()  # the worker is back
    assert release_coordinator(strategy, timeout_secs=10) is True
    assert not handler._preemption_handler_thread.is_alive()


def test_a_reconnection_that_outlasts_the_bound_is_named(caplog):
    reconnecting = threading.Event()  # never set: the worker does not come back
    handler = Handler(reconnecting)
    handler._cluster_due_for_update_or_finish.set()
    assert handler.inside.wait(5)
    strategy, _ = _strategy(handler)
    with caplog.at_level(logging.WARNING, "trainexec.keras.faults.coordinator_release"):
        assert release_coordinator(strategy, timeout_secs=0.5) is False
    assert "WorkerPreemptionHandler still run" in caplog.text
    reconnecting.set()


def test_no_coordinator_nothing_to_do():
    assert release_coordinator(types.SimpleNamespace()) is True
