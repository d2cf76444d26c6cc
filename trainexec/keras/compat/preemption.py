"""`PreemptionCheckpointHandler` with a clean-up that never blocks.

| attribute or patch | seen on | when it is missing |
| --- | --- | --- |
| `tensorflow.python.distribute.failure_handling.failure_handling.PreemptionCheckpointHandler.__del__` overridden (subclass `NonBlockingPreemptionCheckpointHandler`) | 2.15, 2.21 Keras 3, 2.21 tf_keras | (the override still applies to the subclass) |
| `PreemptionCheckpointHandler._poll_termination_signal_thread_should_stop` (an event set to stop the own-signal poller) | 2.15, 2.21 Keras 3, 2.21 tf_keras | `stop_watching` does nothing: the poller (a daemon thread) runs until the process exits |

TensorFlow's own clean-up (`__del__`, also run when the handler is garbage collected)
posts a value for its watcher thread through the coordination service and joins it.
Once a peer has ended (a worker that finished first and exited) those calls can block
until the service gives up on the peer (at the end of a MultiWorkerMirroredStrategy
job whose tasks had been restarted once, with the chief the last pod running; the time
is in docs/benchmarks.md, "Figures the code quotes"). Both watcher threads are daemons, so the process exits without
joining them: this handler only tells its own-signal poller to stop.

Example:
    ```python
    handler = non_blocking_handler_class()(resolver, checkpoint, checkpoint_dir=...,
                                           termination_config=config)
    ...
    handler.stop_watching()
    ```
"""

from __future__ import annotations

from trainexec.internals import ASSIGNED, LINES, Internal

__all__ = ["INTERNALS", "non_blocking_handler_class"]

_HANDLER = ("tensorflow.python.distribute.failure_handling.failure_handling."
            "PreemptionCheckpointHandler")

INTERNALS = (
    Internal(owner=_HANDLER, attribute="__del__", lines=LINES,
             when_missing="nothing: the subclass's __del__ replaces none"),
    Internal(owner=_HANDLER, attribute="_poll_termination_signal_thread_should_stop",
             lines=LINES, when_missing="stop_watching does nothing: the poller (a daemon) "
                                       "runs until the process exits", kind=ASSIGNED),
)


def non_blocking_handler_class() -> type:
    """TensorFlow's PreemptionCheckpointHandler with a clean-up that never blocks
    (see the module doc)."""
    import tensorflow as tf

    class NonBlockingPreemptionCheckpointHandler(
            tf.distribute.experimental.PreemptionCheckpointHandler):
        def stop_watching(self) -> None:
            stop = getattr(self, "_poll_termination_signal_thread_should_stop", None)
            if stop is not None:
                stop.set()

        def __del__(self) -> None:
            self.stop_watching()

    return NonBlockingPreemptionCheckpointHandler
