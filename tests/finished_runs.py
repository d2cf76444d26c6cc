"""Training runs already on disk, for the export and ps fault tests
(tests/test_fault_matrix_exports.py, tests/cluster/test_export_faults.py): Keras
checkpoints of known quality (`keras_trainer`, `loss_at`), a finished run of tiny
checkpoints (`finished_run`), and the `input_fn` of the specs around a StubEstimator.
"""

import os
import types

from fakes import point_state_file_at, write_checkpoint
from trainexec.records.completion import record_training_complete

__all__ = ["STEPS_PER_EPOCH", "finished_keras_run", "finished_run", "input_fn",
           "keras_trainer", "loss_at"]

STEPS_PER_EPOCH = 8


def keras_trainer(directory):
    """`(save, finished)`: `save(quality)` writes the next `ckpt-N.weights.h5` of the toy
    model at step N * STEPS_PER_EPOCH; `finished()` records training complete at the last."""
    from sidecar_programs import toy

    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    model = toy.build_model()
    model.evaluate(toy.dataset(), verbose=0)  # build the metrics, as a trained model has
    state = types.SimpleNamespace(number=0)

    def save(quality):
        state.number += 1
        toy.set_quality(model, quality)
        model.optimizer.iterations.assign(state.number * STEPS_PER_EPOCH)
        path = os.path.join(directory, f"ckpt-{state.number}.weights.h5")
        model.save_weights(path)
        return path

    def finished():
        record_training_complete(directory, os.path.join(
            directory, f"ckpt-{state.number}.weights.h5"), state.number * STEPS_PER_EPOCH,
            None)
    return save, finished


def finished_keras_run(directory, *qualities):
    """A finished Keras run in `directory`: one checkpoint per quality, then the record."""
    save, finished = keras_trainer(directory)
    for quality in qualities:
        save(quality)
    finished()


def loss_at(quality, data_seed=0):
    """The loss a checkpoint of `quality` has on the evaluation data."""
    from sidecar_programs import toy

    model = toy.build_model()
    toy.set_quality(model, quality)
    return model.evaluate(toy.dataset(seed=data_seed), verbose=0, return_dict=True)["loss"]


def input_fn():
    """The input_fn of the specs around a StubEstimator, which reads no data."""
    return None


def finished_run(model_dir, step=20, max_steps=20):
    """A tiny real checkpoint `model.ckpt-<step>`, the directory's latest, recorded as the
    end of training."""
    os.makedirs(model_dir, exist_ok=True)
    prefix = write_checkpoint(str(model_dir), step)
    point_state_file_at(str(model_dir), prefix)
    record_training_complete(str(model_dir), prefix, step, max_steps)
    return prefix
