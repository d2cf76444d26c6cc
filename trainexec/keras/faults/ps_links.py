"""Before a ParameterServerStrategy chief trains, every worker reaches every ps.

A worker that stayed up while a ps was restarted keeps retrying its
connection to the ps address on gRPC's reconnect back-off (TensorFlow caps it
at 1 s). Until its next attempt, every call it makes to the new ps fails at
once as Unavailable, and TensorFlow's `ClusterCoordinator` forgives only two
such failures per ps, retried at once: the restarted chief's first steps
could land in that window and end the chief (exit 170), a second restart for
one fault. Seen once in CI, and with gRPC's connectivity traces on the test bed
(a ps killed, then restarted with its chief): docs/benchmarks.md, "Figures the
code quotes", says how often and how close.

`wait_for_ps_links` closes that window: it runs a small function on each
worker that reads one variable on each ps (the worker's own calls to the ps,
as a training step makes them) and, while that fails for want of a ps
connection, tries again every `poll_secs`, up to `timeout_secs`. A worker
that cannot be reached itself is left to the coordinator, which handles lost
workers; nothing here raises. It returns how long each worker took, or why it
gave up. The cost: little when every link is up, the rest of the back-off
when one is not, and at most `timeout_secs` when a worker does not answer at
all (frozen or cut off); docs/benchmarks.md, "Figures the code quotes", has
the figures.

Example:
    ```python
    waited = wait_for_ps_links(["/job:worker/replica:0/task:0"], touch_ps(model.variables))
    # {"/job:worker/replica:0/task:0": Link(reached=True, secs=0.9, ...)}
    ```
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from trainexec.clock import Clock, SystemClock
from trainexec.evaluation.target import describe_error
from trainexec.contract.exit_codes import is_tensorflow_error
from trainexec.contract.tensorflow_calls import tensorflow_call

__all__ = ["LINK_WAIT_SECS", "Link", "is_ps_link_error", "touch_ps", "wait_for_ps_links",
           "worker_devices"]

logger = logging.getLogger(__name__)

# Covers TensorFlow's 1 s reconnect back-off cap and its 20 % jitter, with room.
LINK_WAIT_SECS = 5.0

_PS_SOURCE = "/job:ps"  # how TensorFlow names a ps in the errors a worker forwards


@dataclasses.dataclass(frozen=True)
class Link:
    """How one worker's wait ended: `reached` every ps after `secs` and
    `attempts` reads, or gave up (`why`: the last error, or the time limit)."""

    reached: bool
    secs: float
    attempts: int
    why: str = ""


def is_ps_link_error(error: BaseException) -> bool:
    """A worker's call to a ps failed for want of a connection (try again):
    TensorFlow's UnavailableError, forwarded from a ps."""
    return (type(error).__name__ == "UnavailableError" and is_tensorflow_error(error)
            and _PS_SOURCE in str(error))


def worker_devices(cluster_spec: Mapping[str, Any]) -> list[str]:
    """The device name of each worker in a `ClusterSpec.as_dict()`."""
    workers = cluster_spec.get("worker", ())
    indices = sorted(workers) if isinstance(workers, dict) else range(len(workers))
    return [f"/job:worker/replica:0/task:{int(i)}" for i in indices]


def touch_ps(variables: Sequence[Any]) -> Callable[[str], None] | None:
    """A function running, on the worker named, one read of the smallest variable
    of each ps among `variables`; None when none of them is on a ps."""
    import tensorflow as tf

    smallest: dict[int, tuple[int, Any]] = {}  # ps task -> (elements, variable)
    for variable in _each_shard(variables):
        inner = getattr(variable, "value", None)  # a Keras 3 Variable wraps a tf.Variable;
        handle = variable if inner is None or callable(inner) else inner  # tf's is a method
        device = getattr(handle, "device", "") or ""
        if _PS_SOURCE not in device:
            continue
        task = tf.DeviceSpec.from_string(device).task
        size = handle.shape.num_elements()  # the static shape: nothing is read here
        size = 1 << 62 if size is None else size
        if task not in smallest or size < smallest[task][0]:
            smallest[task] = (size, handle)
    if not smallest:
        return None
    chosen = [handle for _, handle in smallest.values()]

    @tf.function
    def read_each_ps():
        return tf.add_n([tf.reduce_sum(tf.cast(v.read_value(), tf.float32)) for v in chosen])

    def touch(worker: str) -> None:
        with tf.device(worker):
            read_each_ps()

    return touch


def _each_shard(variables: Sequence[Any]) -> list[Any]:
    """`variables`, a sharded one (a variable partitioner's) as its shards."""
    shards: list[Any] = []
    for variable in variables:
        parts = getattr(variable, "variables", None)
        if getattr(variable, "device", None) is None and isinstance(parts, list):
            shards.extend(parts)  # sharded
        else:
            shards.append(variable)
    return shards


def wait_for_ps_links(workers: Sequence[str], touch: Callable[[str], None],
                      timeout_secs: float = LINK_WAIT_SECS, poll_secs: float = 0.1,
                      clock: Clock | None = None) -> dict[str, Link]:
    """Runs `touch(worker)` on a thread per worker until it succeeds, fails for
    another reason than a ps connection, or `timeout_secs` have passed (a call
    still in flight then is left behind: a frozen worker); never raises."""
    clock = clock or SystemClock()
    started = clock.now()
    results: dict[str, Link] = {}
    attempts = dict.fromkeys(workers, 0)
    lock = threading.Lock()
    closed = False  # after the time limit, a late answer is not recorded

    def record(worker: str, link: Link) -> None:
        with lock:
            if not closed:
                results[worker] = link

    def probe(worker: str) -> None:
        while True:
            attempts[worker] += 1
            try:
                with tensorflow_call():  # a frozen worker holds it inside TensorFlow
                    touch(worker)
            except Exception as error:  # noqa: BLE001: the coordinator decides what is fatal
                elapsed = clock.now() - started
                if is_ps_link_error(error) and elapsed + poll_secs < timeout_secs:
                    clock.sleep(poll_secs)
                    continue
                record(worker, Link(False, elapsed, attempts[worker], describe_error(error)))
                return
            record(worker, Link(True, clock.now() - started, attempts[worker]))
            return

    threads = [threading.Thread(target=probe, args=(worker,), daemon=True,
                                name=f"trainexec-ps-link-{worker.rsplit(':', 1)[-1]}")
               for worker in workers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_secs + poll_secs  # real time: a frozen worker
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        closed = True
        for worker in workers:
            results.setdefault(worker, Link(False, clock.now() - started, attempts[worker],
                                            f"no answer within {timeout_secs:g}s"))
        final = dict(results)
    _log(final, timeout_secs)
    return final


def _log(results: Mapping[str, Link], timeout_secs: float) -> None:
    for worker, link in results.items():
        if link.reached and link.attempts > 1:
            logger.info("%s reached every parameter server after %.1fs (%d attempts: its "
                        "connection to a restarted ps was still backing off)", worker,
                        link.secs, link.attempts)
        elif not link.reached:
            logger.warning("%s did not reach every parameter server within %gs (%s): "
                           "training starts anyway", worker, timeout_secs, link.why)
