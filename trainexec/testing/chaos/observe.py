"""What a chaos run leaves, read from outside the bed: the checkpoints in model_dir
(which are complete, the newest, when each first showed), the exports, and the
evaluator's lines in the pods' log.

Everything here reads a storage's snapshot (`ChaosStorage.files()`: relative names
and sizes, from the backing directory or the bucket, behind none of the pods'
caches) or the log file `TFJobRun` wrote; nothing imports TensorFlow.

Example:
    ```python
    with CheckpointWatcher(storage, max_steps=1200) as watcher:
        ...                                        # the job runs
    exports = export_dirs(storage.files(), "export/final")
    lines, evaluated = collect_log("pods.log", started)
    ```
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Callable, Mapping

from trainexec.testing.chaos.invariants import Evaluated, ExportDir, LogLine
from trainexec.testing.chaos.storages import ChaosStorage

__all__ = ["CheckpointWatcher", "collect_log", "complete", "export_dirs",
           "newest_checkpoint", "step_of"]


_STATE_LINE = re.compile(rb'^model_checkpoint_path:\s*"([^"]+)"', re.M)
_STEP = re.compile(r"-(\d+)$")
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


def newest_checkpoint(state: bytes | None) -> str | None:
    """The basename a checkpoint state file's text names (no TensorFlow)."""
    match = _STATE_LINE.search(state or b"")
    return os.path.basename(match.group(1).decode()) if match else None


def step_of(name: str | None) -> int:
    match = _STEP.search(name or "")
    return int(match.group(1)) if match else 0


def complete(files: Mapping[str, int], prefix: str) -> bool:
    """Whether `prefix.index` (not empty) and every data shard are among `files`
    (relative names and sizes, as `ChaosStorage.files()` gives them)."""
    if not files.get(prefix + ".index"):
        return False
    shards = [m for m in (_SHARD.search(name) for name in files
                          if name.startswith(prefix + ".data-")) if m]
    totals = {int(m.group(2)) for m in shards}
    if len(totals) != 1:
        return False
    total = totals.pop()
    return {int(m.group(1)) for m in shards} == set(range(total))


class CheckpointWatcher:
    """Polls the storage's model_dir from outside the bed: when each checkpoint was
    first complete, the newest one, and when one at `max_steps` first showed."""

    def __init__(self, storage: ChaosStorage, max_steps: int, poll_secs: float = 0.2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.storage = storage
        self.max_steps = max_steps
        self.poll_secs = poll_secs
        self.clock = clock
        self.complete_at: dict[str, float] = {}
        self.final_step_at: float | None = None
        self.first_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "CheckpointWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.look()

    def newest(self) -> str | None:
        return newest_checkpoint(self.storage.read("checkpoint"))

    def look(self) -> None:
        now = self.clock()
        files = self.storage.files()
        for name in files:
            if "/" not in name and name.endswith(".index"):
                prefix = name[:-len(".index")]
                if prefix not in self.complete_at and complete(files, prefix):
                    self.complete_at[prefix] = now
        newest = self.newest()
        if newest is not None and self.first_at is None:
            self.first_at = now
        if self.final_step_at is None and step_of(newest) >= self.max_steps:
            self.final_step_at = now

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_secs):
            try:
                self.look()
            except (OSError, RuntimeError):  # a file rotated away mid-look
                continue


_LOG_LINE = re.compile(r"^\s*(-?[\d.]+) \[(\w+):(\d+)\] (.*)$")
_EVALUATED = re.compile(r"trainexec\.evaluation\.loop: Evaluated (\S+) \(step (\d+)\)")


def collect_log(path: str, started: float) -> tuple[list[LogLine], list[Evaluated]]:
    """Every pod's line from a `TFJobRun` output file (times made monotonic again
    from `started`), and the evaluator's "Evaluated <checkpoint> (step N)" lines."""
    lines: list[LogLine] = []
    evaluated: list[Evaluated] = []
    try:
        with open(path, errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        return lines, evaluated
    for raw in text:
        match = _LOG_LINE.match(raw)
        if not match:
            continue
        line = LogLine(started + float(match.group(1)),
                       f"{match.group(2)}:{match.group(3)}", match.group(4))
        lines.append(line)
        found = _EVALUATED.search(line.text)
        if found and line.task.startswith("evaluator"):
            evaluated.append(Evaluated(found.group(1), int(found.group(2)), line))
    return lines, evaluated


def export_dirs(files: Mapping[str, int], export_base: str) -> list[ExportDir]:
    """The published exports under `export_base` (e.g. "export/final") among `files`
    (relative names under model_dir): whole when they hold saved_model.pb and
    variables/ with its index and data; temporary directories (`.tmp-*`, `temp-*`)
    are not exports."""
    base = export_base.rstrip("/") + "/"
    held: dict[str, set[str]] = {}
    for name in files:
        if name.startswith(base) and "/" in name[len(base):]:
            export, _, inside = name[len(base):].partition("/")
            held.setdefault(export, set()).add(inside)
    found = []
    for export in sorted(held):
        if export.startswith((".", "temp-")):
            continue
        parts = held[export]
        missing = [part for part in ("saved_model.pb", "variables/variables.index")
                   if part not in parts]
        if not any(p.startswith("variables/variables.data-") for p in parts):
            missing.append("variables/variables.data-*")
        found.append(ExportDir(base + export, not missing, tuple(missing)))
    return found
