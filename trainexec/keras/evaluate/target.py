"""Restoring Keras and custom-loop checkpoints into a model, and evaluating them.

`KerasTarget` is the evaluation engine's `EvaluationTarget` for Keras (Keras 3
and Keras 2 alike). It finds the newest checkpoint (see
`trainexec.records.checkpoints.latest_keras_checkpoint`), loads it into the model,
restores the optimizer `iterations` (the training step callbacks see), and
runs `model.evaluate`. It loads:

* `.weights.h5` and `.keras` files (`ModelCheckpoint`) with `model.load_weights`;
* TensorFlow checkpoints whose object graph has a `model` child
  (`tf.train.Checkpoint(model=model, optimizer=optimizer)` in a custom loop)
  with `tf.train.Checkpoint(model=model)`;
* other TensorFlow checkpoints (TF-format weights of a Keras 2 model) with
  `model.load_weights`.

Its errors are those of `tf.keras.utils.SidecarEvaluator.start()`, in the same
order, with the fix added: a checkpoint with none of the model's variables is
`NothingToLoadError` (an `AssertionError`), one without the optimizer's
`iterations` `MissingIterationsError` and an uncompiled model
`ModelNotCompiledError` (both `RuntimeError`s); all three are also
`trainexec.ConfigError`s.

Example:
    ```python
    target = KerasTarget(model, dataset, "/ckpts")
    metrics = target.evaluate(target.latest_checkpoint())   # includes global_step
    ```
"""

from __future__ import annotations

import logging
import zipfile
from typing import Any, Sequence

import tensorflow as tf

from trainexec.records import checkpoints
from trainexec.clock import Clock, SystemClock
from trainexec.errors import ConfigError
from trainexec.evaluation.target import GLOBAL_STEP, load_or_classify

__all__ = ["KerasTarget", "MissingIterationsError", "ModelNotCompiledError",
           "NothingToLoadError", "flatten_metrics"]

logger = logging.getLogger(__name__)

# What optimizers call their step counter: Keras 3 and Keras 2.11+ `_iterations`,
# legacy Keras 2 optimizers `iter`.
_ITERATIONS_NAMES = ("_iterations", "iterations", "iter")
_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


class MissingIterationsError(ConfigError, RuntimeError):
    """The checkpoint holds no optimizer `iterations` (Keras raises RuntimeError)."""


class NothingToLoadError(ConfigError, AssertionError):
    """Nothing in the checkpoint is a variable of the model (Keras's AssertionError
    "Nothing to load")."""


class ModelNotCompiledError(ConfigError, RuntimeError):
    """The model has no optimizer: `model.evaluate` needs a compiled model (Keras
    raises RuntimeError there)."""


def _missing_iterations(path: str, fix: str) -> MissingIterationsError:
    return MissingIterationsError(
        f"Variable `iterations` cannot be loaded from the checkpoint file {path}: it "
        "holds no optimizer step counter, which the evaluator restores so callbacks "
        f"(TensorBoard) see the training step. {fix}")


def _nothing_to_load(path: str) -> NothingToLoadError:
    return NothingToLoadError(
        f"Nothing to load. {path} holds no variables of `model`: was it saved from a "
        "model that was not built yet? Save checkpoints once the model has variables "
        "(after a training step, or model.build(input_shape)), and give the evaluator "
        "the same architecture as training.")


def _model_elsewhere(path: str, children: list[str]) -> NothingToLoadError:
    return NothingToLoadError(
        f"Nothing to load into `model` from {path}: the model's variables are not where "
        f"model.save_weights or tf.train.Checkpoint(model=model, ...) puts them (the "
        f"checkpoint's top-level objects: {', '.join(children) or 'none'}), so the "
        "evaluation would be of weights never trained. Save with "
        "tf.train.Checkpoint(model=model, optimizer=optimizer), or ModelCheckpoint("
        "save_weights_only=True) on a compiled model.")


def _not_built(path: str) -> NothingToLoadError:
    return NothingToLoadError(
        f"Nothing to load into `model`: it has no variables yet (it is not built), so "
        f"{path} cannot be loaded into it. Build it before start(): begin it with "
        "tf.keras.Input(shape), call model.build(input_shape), or call it on a batch.")


def _has_variables(model: Any) -> bool:
    try:
        return bool(model.weights)
    except ValueError:  # Keras 2: a Sequential model without an input shape
        return False


class _ObjectGraph:
    """The object graph of a TensorFlow checkpoint: which objects it holds."""

    def __init__(self, reader: Any) -> None:
        from tensorflow.core.protobuf import trackable_object_graph_pb2

        self._reader = reader
        self._graph = trackable_object_graph_pb2.TrackableObjectGraph()
        self._graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH_KEY))

    def child(self, node_id: int, name: str) -> int | None:
        for ref in self._graph.nodes[node_id].children:
            if ref.local_name == name:
                return ref.node_id
        return None

    def root_children(self) -> list[str]:
        """The names of the checkpoint's top-level objects."""
        return sorted(ref.local_name for ref in self._graph.nodes[0].children)

    def has_model_child(self) -> bool:
        """Written by `tf.train.Checkpoint(model=...)` (not by `save_weights`)."""
        return self.child(0, "model") is not None

    def has_model_variables(self) -> bool:
        """Whether any object under the `model` child has a saved value. (Not read
        from the keys: a variable is keyed by its first path in the graph, which
        may be the optimizer's, `optimizer/_trainable_variables/0/...`.)"""
        model = self.child(0, "model")
        return self._holds_variables([] if model is None else [model])

    def holds_variables_under(self, names: set[str]) -> bool:
        """Whether any object under the root's children called `names` has a saved
        value (a model's layers, as `model.save_weights` writes them)."""
        return self._holds_variables([ref.node_id for ref in self._graph.nodes[0].children
                                      if ref.local_name in names])

    def _holds_variables(self, todo: list[int]) -> bool:
        seen: set[int] = set()
        while todo:
            node_id = todo.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            node = self._graph.nodes[node_id]
            if node.attributes:
                return True
            todo.extend(ref.node_id for ref in node.children)
        return False

    def iterations(self) -> int | None:
        model = self.child(0, "model")
        for owner in (0, model):
            optimizer = None if owner is None else self.child(owner, "optimizer")
            if optimizer is None:
                continue
            for name in _ITERATIONS_NAMES:
                node = self.child(optimizer, name)
                keys = [] if node is None else [
                    a.checkpoint_key for a in self._graph.nodes[node].attributes
                    if a.name == "VARIABLE_VALUE"]
                if keys:
                    return int(self._reader.get_tensor(keys[0]))
        return None


def _file_iterations(path: str) -> int | None:
    """`iterations` from a `.weights.h5` / `.keras` file: the first optimizer
    variable, a scalar integer, in Keras 3 and Keras 2 files alike."""
    import h5py

    if not path.endswith(".keras"):
        with checkpoints.open_hdf5(path) as h5:
            return _iterations_in_h5(h5)
    with tf.io.gfile.GFile(path, "rb") as raw, zipfile.ZipFile(raw) as archive:
        members = [n for n in archive.namelist() if n.endswith(".h5")]
        if not members:
            return None
        with archive.open(members[0]) as member, h5py.File(member, "r") as h5:
            return _iterations_in_h5(h5)


def _iterations_in_h5(h5: Any) -> int | None:
    variables = h5.get("optimizer/vars")
    first = None if variables is None else variables.get("0")
    if first is None or first.shape != () or first.dtype.kind not in "iu":
        return None
    return int(first[()])


def flatten_metrics(logs: dict[str, Any]) -> dict[str, Any]:
    """Plain-Python metrics: dict-valued metrics merged in, numbers as floats."""
    import numpy as np

    flat: dict[str, Any] = {}
    for name, value in logs.items():
        items = value.items() if isinstance(value, dict) else [(name, value)]
        for key, item in items:
            array = np.asarray(item)
            flat[key] = float(array) if array.ndim == 0 else array.tolist()
    return flat


class KerasTarget:
    """An `EvaluationTarget` restoring Keras / custom-loop checkpoints into `model`.

    A checkpoint with a `model` attribute (CheckpointManager style) is read with
    `tf.train.Checkpoint(model=model)`; weights saved by `ModelCheckpoint` are
    loaded with `model.load_weights`. The optimizer `iterations` is restored so
    callbacks (TensorBoard) see the training step. A checkpoint with none of the
    model's variables is a `NothingToLoadError`, one without `iterations` a
    `MissingIterationsError`, and an uncompiled model (checked after the restore,
    as `model.evaluate` would) a `ModelNotCompiledError`. A restore that fails on a complete-looking checkpoint is
    retried once after `retry_secs`, then reported as `CorruptCheckpointError`;
    one that fails because the checkpoint's files are gone (the trainer rotated
    it out) as `CheckpointDisappearedError`, whatever the error.

    Example:
        ```python
        target = KerasTarget(model, dataset, "/ckpts")
        metrics = target.evaluate(target.latest_checkpoint())
        ```
    """

    def __init__(self, model: Any, data: Any, checkpoint_dir: str, steps: int | None = None,
                 callbacks: Sequence[Any] = (), verbose: int | str = 2,
                 clock: Clock | None = None, retry_secs: float = 1.0) -> None:
        self.model = model
        self.data = data
        self.checkpoint_dir = checkpoint_dir
        self.steps = steps
        self.callbacks = list(callbacks)
        self.verbose = verbose
        self.last_duration_secs = 0.0
        self._clock = clock or SystemClock()
        self._retry_secs = retry_secs
        self._loaded: str | None = None

    @property
    def model_dir(self) -> str:
        return self.checkpoint_dir

    @property
    def export_subject(self) -> "KerasTarget":
        return self

    def latest_checkpoint(self) -> str | None:
        latest = checkpoints.latest_keras_checkpoint(self.checkpoint_dir)
        return latest.path if latest else None

    def close(self) -> None:
        """Nothing to release: the model is the caller's."""

    def model_at(self, checkpoint_path: str) -> Any:
        """The model with `checkpoint_path`'s weights (restored if needed)."""
        if self._loaded != checkpoint_path:
            self._restore(checkpoint_path)
        return self.model

    def evaluate(self, checkpoint_path: str) -> dict[str, Any]:
        step = self._restore_or_skip(checkpoint_path)
        if getattr(self.model, "optimizer", None) is None:
            raise ModelNotCompiledError(
                "You must compile your model before evaluating it: `model` has no "
                "optimizer. Call model.compile(optimizer=..., loss=..., metrics=[...]) "
                "as in training before start(); the optimizer carries the restored "
                "`iterations`, the training step callbacks see.")
        logger.info("Evaluation starts: restored %s (training step %s)",
                    checkpoint_path, step)
        started = self._clock.now()
        logs = self.model.evaluate(self.data, steps=self.steps, callbacks=self.callbacks,
                                   return_dict=True, verbose=self.verbose)
        self.last_duration_secs = self._clock.now() - started
        metrics = flatten_metrics(logs)
        metrics[GLOBAL_STEP] = step
        return metrics

    def _restore_or_skip(self, path: str) -> int:
        return load_or_classify(lambda: self._restore(path), path, _unreadable,
                                clock=self._clock, retry_secs=self._retry_secs,
                                verb="restore")

    def _restore(self, path: str) -> int:
        self._loaded = None
        if checkpoints.is_keras_file(path):
            step = self._restore_file(path)
        else:
            step = self._restore_tf_checkpoint(path)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            optimizer.iterations.assign(step)
        self._loaded = path
        return step

    def _restore_file(self, path: str) -> int:
        if not tf.io.gfile.exists(path):
            raise tf.errors.NotFoundError(None, None, f"{path} no longer exists")
        try:
            self.model.load_weights(path)
        except ValueError as err:
            # Keras 3 reports a damaged file and a model that does not match it
            # alike (ValueError); only the first is the checkpoint's fault.
            damage = checkpoints.data_damage(path)
            if damage is not None:
                raise OSError(f"damaged file: {damage}") from err
            if not _has_variables(self.model):
                raise _not_built(path) from err
            raise
        step = _file_iterations(path)
        if step is None:
            raise _missing_iterations(
                path, "Save it from a compiled model that has trained (ModelCheckpoint "
                "in model.fit does).")
        return step

    def _restore_tf_checkpoint(self, path: str) -> int:
        graph = _ObjectGraph(tf.train.load_checkpoint(path))
        if graph.has_model_child():
            if not graph.has_model_variables():
                raise _nothing_to_load(path)
            tf.train.Checkpoint(model=self.model).read(path).expect_partial()
        elif not isinstance(self.model, tf.Module):
            raise ValueError(
                f"Checkpoint {path} has no `model` object (its top-level objects: "
                f"{', '.join(graph.root_children()) or 'none'}): Keras 3 cannot load "
                "a TensorFlow checkpoint but as tf.train.Checkpoint(model=model, ...) "
                "writes it (not Keras 2's model.save_weights in the TensorFlow format, "
                "nor a model under another name). Write checkpoints as "
                "ModelCheckpoint('.../ckpt-{epoch}.weights.h5', save_weights_only=True) "
                "or tf.train.Checkpoint(model=model, optimizer=optimizer).")
        else:
            # load_weights binds the checkpoint's root to the model: a checkpoint whose
            # model is a child of the root (`net=model`) binds the optimizer alone and
            # leaves the layers untrained, silently. The model's own children (its
            # layers, not its optimizer, which may differ from training's) must hold
            # the variables.
            own = set(tf.train.TrackableView(self.model).children(self.model))
            own.discard("optimizer")
            if own and _has_variables(self.model) and not graph.holds_variables_under(own):
                raise _model_elsewhere(path, graph.root_children())
            try:
                status = self.model.load_weights(path)
            except AssertionError as err:  # Keras 2: nothing in it matched the model
                raise _nothing_to_load(path) from err
            if hasattr(status, "expect_partial"):
                status.expect_partial()
        step = graph.iterations()
        if step is None:
            raise _missing_iterations(
                path, "Save the optimizer with the model: tf.train.Checkpoint(model="
                "model, optimizer=optimizer) in a custom loop, or ModelCheckpoint("
                "save_weights_only=True) on a compiled model.")
        return step


# What a complete-looking but damaged checkpoint raises on restore: a data file
# shorter than its index says (IndexError), a checksum mismatch (OpError), a
# damaged HDF5 file or zip (OSError, KeyError, BadZipFile, EOFError).
# Whatever the error, a checkpoint whose files are gone has disappeared (the
# trainer rotated it away). Otherwise NotFoundError is left to the loop, and
# ValueError (shapes that do not match the model) is a configuration error.
_UNREADABLE = (tf.errors.OpError, IndexError, OSError, KeyError, zipfile.BadZipFile,
               EOFError)


def _unreadable(error: BaseException) -> str | None:
    """Why a restore that raised `error` blames the checkpoint, or None."""
    if isinstance(error, tf.errors.NotFoundError) or not isinstance(error, _UNREADABLE):
        return None
    return f"{type(error).__name__} reading it"
