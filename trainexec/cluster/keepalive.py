"""gRPC keepalive for parameter-server jobs: a silent peer is noticed in bounded time.

Under ParameterServerStrategy the chief sends each step to a worker as one
gRPC call and waits for its answer; every epoch end waits for every call
(`ClusterCoordinator.join`). A worker cut off the network (a partition, a
frozen host) sends neither an answer nor an error, and TCP alone notices
nothing for minutes: the whole job stalled, most of the time in TCP's
retransmission back-off after the link was back (docs/benchmarks.md, "Figures the
code quotes", has the measurements).

TensorFlow creates its gRPC channels with the options of the environment
variable `TF_GRPC_DEFAULT_OPTIONS` (read once, when the process makes its
first channel; TensorFlow 2.15 to 2.21 at least). `apply_keepalive()` adds,
each set to `TRAINEXEC_GRPC_KEEPALIVE_SECS` (default 5 s; 0 adds nothing):

* `grpc.keepalive_time_ms` and `grpc.keepalive_timeout_ms`: a channel with a
  call in flight pings its peer that often and closes the connection when a
  ping is not answered in time (gRPC then also sets `TCP_USER_TIMEOUT`, so
  unacknowledged data ends the connection as fast: a partition);
* `grpc.http2.ping_timeout_ms` (known to TensorFlow 2.21's gRPC; 2.15's
  ignores it, so there the bound below does not hold: a frozen worker stalled
  the job for minutes once): the same timeout for gRPC's other pings; otherwise a
  flow-control ping in flight when the peer froze holds the keepalive ping back;
* `grpc.min_reconnect_backoff_ms`: a connection attempt to a peer whose host
  accepts TCP but whose server does not answer (a frozen process) gives up
  after that long instead of 20 s; TensorFlow makes some calls to every task
  at once (registering a function), which wait for such an attempt.

An option the user already set in `TF_GRPC_DEFAULT_OPTIONS` is kept as it is.
The call in flight then fails as Unavailable, which the coordinator handles as
a lost worker: it runs the step again on another worker, training goes on with
the others, and the worker rejoins when it answers again. Every
ParameterServerStrategy task calls `apply_keepalive()` before its strategy or
server exists: the chief (its calls to workers and ps), the workers (their
calls to the ps, so a ps cut off fails their steps, and the chief ends
retryably) and the ps.

An Estimator job with parameter servers (between-graph replication: each
training task's session reads and updates the variables on the ps) does the same
in every task that starts its server (`trainexec.estimator_trainer.hooks`): a
session's call to a ps cut off fails as Unavailable instead of waiting on TCP,
and `MonitoredSession` recovers as from a ps restart (a new session, restored from
the last checkpoint, once the ps answers). Without it, chaos row
`canned-local-cut-ps0` (a ps cut off for 15 s) once left the chief waiting
inside one session call for the full 300 s of its job while the workers
finished.

The bound: a worker cut off or frozen stalls the job for at most about
`3 * secs` (the ping goes out up to `secs` after the last answer and is given
up `secs` later; one call to every task may then wait `secs` for a connection
attempt); training then goes on with the remaining workers at their full rate,
and a ps cut off ends the chief retryably (it then waits, restarted, until the ps
answers again): docs/benchmarks.md ("Figures the code quotes") has what this was
measured to be. Pings only go out while a call is in flight (gRPC's default), so an
idle connection is never pinged.

Example:
    ```python
    apply_keepalive()          # before tf.distribute.ParameterServerStrategy(...)
    keepalive_options("grpc.keepalive_time_ms=60000", 5.0)
    # 'grpc.keepalive_time_ms=60000,grpc.keepalive_timeout_ms=5000,
    #  grpc.http2.ping_timeout_ms=5000,grpc.min_reconnect_backoff_ms=5000'
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Mapping, MutableMapping

from trainexec.env_settings import seconds_setting

__all__ = ["DEFAULT_KEEPALIVE_SECS", "OPTIONS", "OPTIONS_VAR", "SETTING_VAR", "apply_keepalive",
           "keepalive_options", "keepalive_secs"]

logger = logging.getLogger(__name__)

OPTIONS_VAR = "TF_GRPC_DEFAULT_OPTIONS"  # TensorFlow's gRPC channel options
SETTING_VAR = "TRAINEXEC_GRPC_KEEPALIVE_SECS"
DEFAULT_KEEPALIVE_SECS = 5.0

# The gRPC channel arguments set, in this order, each to the keepalive seconds.
OPTIONS = ("grpc.keepalive_time_ms", "grpc.keepalive_timeout_ms",
           "grpc.http2.ping_timeout_ms", "grpc.min_reconnect_backoff_ms")


def keepalive_secs(environ: Mapping[str, str] | None = None) -> float:
    """The keepalive interval and timeout `TRAINEXEC_GRPC_KEEPALIVE_SECS` asks for
    (default 5 s; 0 turns trainexec's keepalive off); ConfigError if it is not a
    number of seconds >= 0."""
    return seconds_setting(SETTING_VAR, DEFAULT_KEEPALIVE_SECS,
                           "0 leaves gRPC's keepalive defaults", environ)


def keepalive_options(existing: str, secs: float) -> str:
    """`existing` (a `TF_GRPC_DEFAULT_OPTIONS` value) with each of `OPTIONS` it
    does not set added as `secs` in milliseconds (pure). Unchanged when `secs`
    is 0."""
    entries = [entry.strip() for entry in existing.split(",") if entry.strip()]
    names = {entry.partition("=")[0].strip() for entry in entries}
    missing = [name for name in OPTIONS if name not in names]
    if not secs or not missing:
        return existing
    millis = max(1, int(round(secs * 1000)))
    return ",".join([*entries, *(f"{name}={millis}" for name in missing)])


def apply_keepalive(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Sets `TF_GRPC_DEFAULT_OPTIONS` for this process (see the module doc);
    returns its value (None when unset). Call it before TensorFlow makes its
    first gRPC channel: later, TensorFlow has read the variable already."""
    environ = os.environ if environ is None else environ
    existing = environ.get(OPTIONS_VAR, "")
    options = keepalive_options(existing, keepalive_secs(environ))
    if options != existing:
        environ[OPTIONS_VAR] = options
        logger.info("gRPC keepalive: a peer that does not answer within %gs is treated "
                    "as lost (%s=%s)", keepalive_secs(environ), OPTIONS_VAR, options)
    return options or None
