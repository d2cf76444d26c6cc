"""Reading TensorBoard event files back with TensorBoard's own reader (tests only)."""

from tensorboard.backend.event_processing.event_accumulator import (
    TENSORS, EventAccumulator)
from tensorboard.util import tensor_util


def scalars(directory):
    """{tag: {step: value}} of the scalars written directly in `directory` (tf.summary
    v2 scalars are stored as tensors), as TensorBoard loads them."""
    accumulator = EventAccumulator(str(directory), size_guidance={TENSORS: 0})
    accumulator.Reload()
    return {tag: {event.step: float(tensor_util.make_ndarray(event.tensor_proto))
                  for event in accumulator.Tensors(tag)}
            for tag in accumulator.Tags()[TENSORS]
            if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"}
