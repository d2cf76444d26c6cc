"""A checkpoint directory's `checkpoint` state file: read whole, parsed here.

TensorFlow's savers name the latest checkpoint, and the ones they keep, in a file
called `checkpoint` beside them: a `CheckpointState` in protobuf text form,
replaced whole at every save (a temporary file renamed, an object uploaded).
`read_checkpoint_state` reads it to its end (`trainexec.records.layout.read_whole`:
TensorFlow's own `get_checkpoint_state` reads it at the length its GCS client has
cached, so on `gs://` a longer new version reads cut short and is "ignored") and
parses it here, on public Python only; a file that does not parse raises
ValueError, never "no checkpoint". `trainexec.records.checkpoints.latest_checkpoint`
decides what to do then.

Example:
    ```python
    state = read_checkpoint_state("gs://bucket/model")   # None: no state file
    if state is not None:
        state.latest, state.kept    # 'gs://bucket/model/ckpt-300', (..., ...)
    ```
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re

__all__ = ["STATE_FILE", "CheckpointState", "parse_checkpoint_state", "read_checkpoint_state"]

STATE_FILE = "checkpoint"
_STRING_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_NUMBER_FIELDS = ("all_model_checkpoint_timestamps", "last_preserved_timestamp")
_FIELD = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.*?)\s*$")
_QUOTED = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')$""")
_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclasses.dataclass(frozen=True)
class CheckpointState:
    """What a directory's `checkpoint` state file names: the latest checkpoint
    prefix and every one kept, oldest first (paths resolved as TensorFlow
    resolves them: relative ones against the directory)."""

    latest: str
    kept: tuple[str, ...]


def parse_checkpoint_state(text: str, directory: str) -> CheckpointState:
    """The state file's text (TensorFlow's `CheckpointState` in protobuf text
    form) read; raises ValueError naming what does not parse, as a file cut
    short does (`all_mo`, an unclosed quote)."""
    latest, kept = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FIELD.match(line)
        name, value = (match.group(1), match.group(2)) if match else (None, "")
        quoted = _QUOTED.match(value) if name in _STRING_FIELDS else None
        if quoted is not None:
            raw = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
            path = codecs.escape_decode(raw.encode("utf-8"))[0].decode("utf-8")
            path = _resolve(path, directory)
            if name == "model_checkpoint_path":
                latest = path
            else:
                kept.append(path)
        elif not (name in _NUMBER_FIELDS and _FLOAT.match(value)):
            raise ValueError(f"line {number} of the checkpoint state does not parse: "
                             f"{line[:80]!r}")
    if not latest:
        raise ValueError("the checkpoint state names no model_checkpoint_path")
    return CheckpointState(latest=latest, kept=tuple(kept))


def _resolve(path: str, directory: str) -> str:
    if "://" in path or os.path.isabs(path):
        return path
    return f"{str(directory).rstrip('/')}/{path}"


def read_checkpoint_state(directory: str) -> CheckpointState | None:
    """`directory`'s checkpoint state, read whole (`trainexec.records.layout.read_whole`:
    never cut short by a cached size, as `tf.train.get_checkpoint_state` is on
    gs://); None when there is no state file. Raises ValueError when it does
    not parse."""
    import tensorflow as tf

    from trainexec.records.layout import read_whole

    path = f"{str(directory).rstrip('/')}/{STATE_FILE}"
    try:
        text = read_whole(path)
    except (FileNotFoundError, NotADirectoryError, tf.errors.NotFoundError):
        return None
    try:
        return parse_checkpoint_state(text.decode("utf-8"), directory)
    except UnicodeDecodeError as err:
        raise ValueError(f"the checkpoint state is not text ({err})") from err
