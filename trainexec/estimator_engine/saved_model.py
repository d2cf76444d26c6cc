"""`Estimator.export_saved_model`: a servable SavedModel of a checkpoint.

In a new graph: the `serving_input_receiver_fn`'s receiver, the `model_fn` in PREDICT
mode on its features, one signature per export output (`serving_default` being the
model_fn's only one, or `PredictOutput(predictions)` when it names none; receiver
alternatives add `<alternative>:<output>` signatures), the checkpoint's variables,
tables and assets, tagged `serve`: what TF Serving and `tf.saved_model.load` read.

The export is written aside and published whole as `<export_dir_base>/<timestamp>`
(`trainexec.evaluation.export_files.ExportFileManager`): a reader never sees half of
one, and an existing export is never overwritten (the next second is taken).

Only PREDICT-mode (serving) exports exist: TRAIN and EVAL SavedModels stood on
tf.estimator's private graph rewriting. As in tf.estimator, the model_fn's Scaffold is
used: its saver restores the checkpoint (a Saver, anything with
`restore(session, path)`, or a `tf.train.Checkpoint` for object-based checkpoints) and,
when it is a Saver, writes the SavedModel's variables (else they are written under
their variable names); its `local_init_op`, if any, is the SavedModel's main op.

Example:
    ```python
    path = write_saved_model(estimator, "/m/export/final", serving_input_receiver_fn,
                             checkpoint_path="/m/model.ckpt-100")
    tf.saved_model.load(path).signatures["serving_default"](x=...)
    ```
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Mapping

import tensorflow as tf

from trainexec.estimator_engine.export_outputs import ExportOutput, PredictOutput
from trainexec.estimator_engine.graph import build_graph
from trainexec.estimator_engine.model_spec import ModeKeys
from trainexec.estimator_engine.serving_input import (ServingInputReceiver,
                                                      TensorServingInputReceiver)
from trainexec.evaluation.export_files import ExportFileManager

__all__ = ["DEFAULT_SIGNATURE", "signature_outputs", "write_saved_model"]

logger = logging.getLogger(__name__)

DEFAULT_SIGNATURE = "serving_default"


def signature_outputs(export_outputs: Mapping[str, ExportOutput] | None,
                      predictions: Any) -> dict[str, ExportOutput]:
    """The export outputs by signature key, `serving_default` among them."""
    if not export_outputs:
        return {DEFAULT_SIGNATURE: PredictOutput(predictions)}
    outputs = dict(export_outputs)
    if DEFAULT_SIGNATURE not in outputs:
        if len(outputs) != 1:
            raise ValueError(
                f"EstimatorSpec `export_outputs` has {len(outputs)} outputs "
                f"({', '.join(sorted(outputs))}) and none is {DEFAULT_SIGNATURE!r}: name "
                "the one TF Serving serves by default 'serving_default'")
        (only,) = outputs.values()
        outputs[DEFAULT_SIGNATURE] = only
    return outputs


def _signature_defs(outputs: Mapping[str, ExportOutput], receiver: Any) -> dict:
    """One SignatureDef per output and receiver; an output that cannot take a
    receiver's inputs is left out with a warning, as tf.estimator did (the default one
    too: a canned classifier over raw float inputs keeps `predict`, as there), but an
    export with no signature at all is refused."""
    receivers = {None: receiver.receiver_tensors, **receiver.receiver_tensors_alternatives}
    defs = {}
    default_problem: ValueError | None = None
    for alternative, tensors in receivers.items():
        for key, output in outputs.items():
            name = key if alternative is None else f"{alternative}:{key}"
            try:
                defs[name] = output.as_signature_def(tensors)
            except ValueError as why:  # e.g. a Classify output over raw float inputs
                if name == DEFAULT_SIGNATURE:
                    default_problem = why
                logger.warning("Export: no signature %s: %s", name, why)
    if default_problem is not None:
        if not defs:
            raise default_problem
        logger.warning("Export includes no default signature (%s): serving it needs a "
                       "signature named; %s", DEFAULT_SIGNATURE, ", ".join(sorted(defs)))
    return defs


def _restorer(saver: Any, checkpoint_path: str) -> Callable[[Any], None]:
    """How to put the checkpoint's values into a session of the graph being built:
    the Scaffold's saver (a `tf.train.Checkpoint` restores object by object; anything
    else with `restore(session, path)`, e.g. a Saver), or a Saver of every variable."""
    if isinstance(saver, tf.train.Checkpoint):
        status = saver.restore(checkpoint_path)
        # What the checkpoint does not hold (the Checkpoint's own save counter) starts
        # at its initial value.
        initialize = tf.compat.v1.global_variables_initializer()

        def restore(session: Any) -> None:
            session.run(initialize)
            status.run_restore_ops(session)

        return restore
    saver = saver or tf.compat.v1.train.Saver(sharded=True)
    return lambda session: saver.restore(session, checkpoint_path)


def _saved_model_saver(saver: Any) -> Any:
    """The saver writing the SavedModel's variables: the Scaffold's, when it can write a
    SavedModel (a Saver, or one like it: `save` and `export_meta_graph`), so a custom
    Saver's names travel with it; else (a tf.train.Checkpoint, a saver of restores
    only, none) the builder's own, by variable name."""
    if isinstance(saver, tf.train.Checkpoint) or not callable(
            getattr(saver, "export_meta_graph", None)):
        return None
    return saver


def _copy_assets_extra(assets_extra: Mapping[str, str] | None, directory: str) -> None:
    for destination, source in (assets_extra or {}).items():
        target = os.path.join(directory, "assets.extra", destination)
        tf.io.gfile.makedirs(os.path.dirname(target))
        tf.io.gfile.copy(source, target, overwrite=True)


def _free_path(files: ExportFileManager) -> str:
    stamp = int(time.time())
    while tf.io.gfile.exists(files.path_for(stamp)):
        stamp += 1  # never overwrite: an export of this second exists
    return files.path_for(stamp)


def write_saved_model(estimator: Any, export_dir_base: str,
                      serving_input_receiver_fn: Callable[[], Any],
                      assets_extra: Mapping[str, str] | None = None, as_text: bool = False,
                      checkpoint_path: str | None = None) -> str:
    """Writes the SavedModel (module doc) and returns its directory,
    `<export_dir_base>/<timestamp>`."""
    if not callable(serving_input_receiver_fn):
        raise TypeError("export_saved_model: `serving_input_receiver_fn` must be callable, "
                        f"given: {serving_input_receiver_fn!r}")
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    if checkpoint_path is None:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir} (no "
                         "checkpoint to export): train first, pass checkpoint_path, or give "
                         "the Estimator warm_start_from")
    files = ExportFileManager(export_dir_base)
    with tf.Graph().as_default() as graph:
        receiver = serving_input_receiver_fn()
        if not isinstance(receiver, (ServingInputReceiver, TensorServingInputReceiver)):
            raise TypeError("export_saved_model: serving_input_receiver_fn must return a "
                            "trainexec.estimator.export.ServingInputReceiver or "
                            f"TensorServingInputReceiver, returned: {receiver!r}")
        built = build_graph(estimator.model_fn, estimator.params, estimator.config,
                            ModeKeys.PREDICT, features=receiver.features, on_devices=False)
        spec = built.spec
        defs = _signature_defs(signature_outputs(spec.export_outputs, spec.predictions),
                               receiver)
        saver = spec.scaffold.saver
        restore = _restorer(saver, checkpoint_path)
        # The model_fn's own local init op replaces the default one, as in tf.estimator.
        local_init = spec.scaffold.local_init_op
        if local_init is None:
            local_init = tf.compat.v1.train.Scaffold.default_local_init_op()
        assets = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS)

        def write(directory: str) -> None:
            with tf.compat.v1.Session(graph=graph,
                                      config=estimator.config.session_config) as session:
                restore(session)
                builder = tf.compat.v1.saved_model.Builder(directory)
                builder.add_meta_graph_and_variables(
                    session, [tf.saved_model.SERVING], signature_def_map=defs,
                    assets_collection=assets or None, main_op=local_init,
                    strip_default_attrs=True, saver=_saved_model_saver(saver))
                builder.save(as_text)
            _copy_assets_extra(assets_extra, directory)

        target = _free_path(files)
        if not files.write(target, write):
            raise FileExistsError(f"export_saved_model: {target} exists already; it is "
                                  "never overwritten")
    logger.info("SavedModel written to %s (from %s)", target, checkpoint_path)
    return target
