"""Every private Keras or TensorFlow attribute the Estimator engine uses (outside this
package, the engine's TensorFlow is public only).

One module per concern, each opening with a table (attribute | the lines it was seen
on | what trainexec does when it is missing) and holding the code that touches it;
callers use the small named functions there:

* `keras_names`: Keras 3's automatic layer names started afresh for each graph a
  `model_fn` builds;
* `feature_columns`: a TensorFlow v1 feature column told from a v2 one (by public
  facts of its class: no private attribute);
* `loss_scaling`: the loss scaling tf.estimator switched on for `tf.compat.v1`
  optimizers under a distribution strategy, and how it reduced the replicas' losses;
* `device_input`: the per-device datasets of a strategy's iterator made without
  tf.data's autotuning thread, which held a MultiWorkerMirroredStrategy chief's session
  close up to 60 s.

`INVENTORY` lists them all as `trainexec.internals.Internal` records;
tests/test_estimator_engine_compat.py checks, on each line, that those listed for it
are still there.
"""

from trainexec.estimator_engine.compat import (device_input, feature_columns, keras_names,
                                               loss_scaling)

__all__ = ["INVENTORY"]

INVENTORY = (device_input.INTERNALS + feature_columns.INTERNALS + keras_names.INTERNALS
             + loss_scaling.INTERNALS)
