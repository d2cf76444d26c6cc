"""Reading TensorBoard event files back with TensorBoard's own reader (tests only)."""

from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS, TENSORS, EventAccumulator)
from tensorboard.util import tensor_util


def scalars(directory):
    """{tag: {step: value}} of the scalars written directly in `directory`, as TensorBoard
    loads them: tf.summary v2 scalars (stored as tensors) and v1 ones (`simple_value`,
    as a tf.compat.v1 Estimator's `loss`), every step kept, from every file there."""
    accumulator = EventAccumulator(str(directory), size_guidance={TENSORS: 0, SCALARS: 0},
                                   purge_orphaned_data=False)  # a later step's value wins
    accumulator.Reload()
    found = {tag: {event.step: float(tensor_util.make_ndarray(event.tensor_proto))
                   for event in accumulator.Tensors(tag)}
             for tag in accumulator.Tags()[TENSORS]
             if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"}
    for tag in accumulator.Tags()[SCALARS]:
        found.setdefault(tag, {}).update(
            {event.step: float(event.value) for event in accumulator.Scalars(tag)})
    return found
