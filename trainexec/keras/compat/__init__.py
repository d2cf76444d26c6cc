"""Every private TensorFlow / Keras attribute or patch the Keras trainer uses.

One module per concern, each opening with a table (attribute or patch | the TensorFlow
lines it was seen on | what trainexec does when it is missing) and holding the code that
touches it; callers use the small named functions there:

* `variables`: Keras 3 variables' `assign_add` / `assign_sub` made atomic (PSS);
* `coordinator`: the ClusterCoordinator's threads stopped, a worker's iterator spec;
* `preemption`: `PreemptionCheckpointHandler` with a clean-up that never blocks;
* `optimizers`: an optimizer's learning-rate schedule and whether it is built;
* `fit_loop`: what `DistributedFit` borrows from Keras's `fit` (`_symbolic_build`,
  `_supports_tf_logs`).

`INVENTORY` lists them all as `trainexec.internals.Internal` records;
tests/test_keras_compat.py checks, on each TensorFlow line, that those listed for it are
still there.
"""

from trainexec.keras.compat import coordinator, fit_loop, optimizers, preemption, variables

__all__ = ["INVENTORY"]

INVENTORY = (variables.INTERNALS + coordinator.INTERNALS + preemption.INTERNALS
             + optimizers.INTERNALS + fit_loop.INTERNALS)
