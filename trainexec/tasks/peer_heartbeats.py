"""A task of a group that trains in step leaves once a peer has been silent too long.

The chief and workers of a MultiWorkerMirroredStrategy group (an Estimator's
`train_distribute`) run every step together. When one of them dies, the others
normally learn it from TensorFlow within seconds (a collective fails, the task exits
170 as a lost peer, `trainexec.estimator_engine.one_session`) and every task restarts.
Not always: in chaos row `estimator-mwms-local-kill-chief0`, once in about 40 runs,
worker:1's step never returned after the chief was killed. TensorFlow's coordination
service saw the chief gone ("Failed to send RPC to coordination service ... Heartbeat
... Connection refused") and aborted its collectives, but the session's step went on
waiting. The restarted chief and worker:0 waited in turn for worker:1 to join their new
group, and the job stood still until its 300 s were up. Under TFJob each pod restarts
alone, so nothing outside the group ends such a task.

`PeerHeartbeats` bounds that with records in `model_dir`, which every task reaches:

* each task of the group writes `<model_dir>/trainexec/heartbeats/<type>-<index>.json`
  (its task, a token drawn when it started, a count) once before it trains and then
  every `beat_secs` (5 s), from a daemon thread, whatever its training thread waits for;
* once the group's first step has run (`group_formed()`: every peer wrote its first
  beat before it could take part in that step), it also reads its peers' records every
  `beat_secs`. A peer whose record has not changed for `silent_secs` (60 s) of this
  task's own clock, read after read, and that has not recorded finishing, is lost: the
  task logs which peer and since when, writes where its threads are to stderr, and ends
  with the exit-code contract's `peer_lost` code (170 unless `TRAINEXEC_EXIT_CODES`
  says otherwise), which TFJob's ExitCode policy restarts; the group re-forms with the
  restarted tasks and resumes from the last checkpoint.

`TRAINEXEC_PEER_SILENT_SECS` changes `silent_secs` (0 turns the watch off; the beats
then go every `BEAT_SECS`, or a quarter of `silent_secs` when that is shorter).

What it does not judge: a read that fails (a storage outage) starts every peer's
silence again, so storage that cannot be read never looks like a silent peer; a record
this host's cache serves late (NFS attribute caching, TensorFlow's GCS caches) is late
by seconds, far below `silent_secs`. A peer frozen for longer than `silent_secs` is
lost too: the group would otherwise hold until it thaws, and then restart anyway.
`silent_secs` is far longer than any pause of a live peer's beats seen (a 15 s storage
fault delays a write; an evaluation runs on the training thread, not this one).

Example:
    ```python
    heartbeats = PeerHeartbeats(model_dir, "worker:1", ("chief:0", "worker:0", "worker:1"),
                                finished=lambda: watch.finished()).start()
    try:
        train(hooks=[...])           # a hook calls heartbeats.group_formed() after step 1
    finally:
        heartbeats.stop()
    ```
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
import uuid
from typing import Any, Callable, Mapping, Sequence

from trainexec.clock import Clock, SystemClock
from trainexec.contract.exit_codes import PEER_LOST, ExitCodes, flush_logs
from trainexec.contract.tensorflow_calls import tensorflow_call
from trainexec.env_settings import seconds_setting
from trainexec.records.layout import (RECORDS_DIR, make_watched_dir, read_json_file,
                                      record_path, task_file_name, write_json)

__all__ = ["BEAT_SECS", "HEARTBEATS_DIR", "SILENT_SECS", "SILENT_SECS_VAR", "PeerHeartbeats",
           "silent_secs_setting"]

logger = logging.getLogger(__name__)

HEARTBEATS_DIR = f"{RECORDS_DIR}/heartbeats"
BEAT_SECS = 5.0
# How long a peer's record may stay unchanged before the peer counts as lost: twelve
# beats, four times the longest storage fault the chaos matrix applies (15 s).
SILENT_SECS = 60.0
SILENT_SECS_VAR = "TRAINEXEC_PEER_SILENT_SECS"


def silent_secs_setting(environ: Mapping[str, str] | None = None) -> float:
    """`TRAINEXEC_PEER_SILENT_SECS` (default `SILENT_SECS`; 0: peers are not watched);
    ConfigError if it is not a number of seconds >= 0."""
    return seconds_setting(SILENT_SECS_VAR, SILENT_SECS, "how long a silent peer of a "
                           "MultiWorkerMirroredStrategy group is waited for; 0 waits for "
                           "ever", environ)


class PeerHeartbeats:
    """Beats for this task and watches its peers' beats (module doc)."""

    def __init__(self, model_dir: str, task: str, group: Sequence[str],
                 finished: Callable[[], set[str]] = set,
                 silent_secs: float | None = None, beat_secs: float | None = None,
                 clock: Clock | None = None,
                 exit_fn: Callable[[int], Any] | None = None) -> None:
        self.model_dir = model_dir
        self.task = task
        self.peers = tuple(peer for peer in group if peer != task)
        self.silent_secs = silent_secs_setting() if silent_secs is None else silent_secs
        self.beat_secs = beat_secs if beat_secs is not None else (
            min(BEAT_SECS, self.silent_secs / 4) if self.silent_secs else BEAT_SECS)
        self._finished = finished
        self._clock = clock or SystemClock()
        self._exit = os._exit if exit_fn is None else exit_fn
        self._token = uuid.uuid4().hex[:12]
        self._count = 0
        self._write_failing = False
        self._formed = threading.Event()
        self._stopped = threading.Event()
        # peer -> (the record last read, the time it was first read so)
        self._seen: dict[str, tuple[Any, float]] = {}
        self.left = False

    def path(self, task: str) -> str:
        return record_path(self.model_dir, f"{HEARTBEATS_DIR}/{task_file_name(task)}")

    def start(self) -> "PeerHeartbeats":
        """Writes the first beat (before training: see `group_formed`), then beats and
        watches from a daemon thread until `stop()`."""
        make_watched_dir(record_path(self.model_dir, HEARTBEATS_DIR))
        self.beat()
        threading.Thread(target=self._run, name="trainexec-peer-heartbeats",
                         daemon=True).start()
        return self

    def group_formed(self) -> None:
        """The group's first step has run: from now on, peers are watched."""
        self._formed.set()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._clock.sleep(self.beat_secs)
            if self._stopped.is_set():
                return
            with tensorflow_call():  # on gs:// its reads and writes are TensorFlow's
                self.beat()
                if self.silent_secs and self._formed.is_set() and self.check():
                    return

    def beat(self) -> None:
        """Writes this task's record once more; a failed write is logged (once in a
        row) and left: the next beat tries again."""
        self._count += 1
        try:
            write_json(self.path(self.task),
                       {"task": self.task, "token": self._token, "beat": self._count})
            self._write_failing = False
        except Exception as err:  # OSError, or TensorFlow's file system error
            if not self._write_failing:
                logger.warning("%s could not write its heartbeat (%s); trying again "
                               "every %gs", self.task, err, self.beat_secs)
            self._write_failing = True

    def check(self) -> bool:
        """One look at the peers' records; True once it made the task leave."""
        if self._stopped.is_set() or self.left:
            return self.left
        now = self._clock.now()
        records = {}
        try:
            for peer in self.peers:
                records[peer] = read_json_file(self.path(peer))
        except Exception as err:  # storage unreadable: no judgement, silences restart
            logger.info("%s could not read its peers' heartbeats (%s)", self.task, err)
            self._seen.clear()
            return False
        done = self._finished()
        for peer, record in records.items():
            last = self._seen.get(peer)
            if last is None or last[0] != record:
                self._seen[peer] = (record, now)
                continue
            if now - last[1] >= self.silent_secs and peer not in done \
                    and not self._stopped.is_set():
                self.left = True
                self._leave(peer, now - last[1], record is None)
                return True
        return False

    def _leave(self, peer: str, silent: float, missing: bool) -> None:
        code = ExitCodes.from_env().code_for(PEER_LOST)
        try:
            logger.error(
                "%s: %s of its MultiWorkerMirroredStrategy group has %s for %.0fs while "
                "%s is still inside a step (its threads' stacks follow on stderr): "
                "leaving with exit code %d, so that the group restarts together from the "
                "last checkpoint", self.task, peer,
                "written no heartbeat" if missing else "not written a heartbeat",
                silent, self.task, code)
            flush_logs()
            try:
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            except (OSError, ValueError, AttributeError):  # no usable stderr
                pass
            flush_logs()
        finally:
            self._exit(code)
