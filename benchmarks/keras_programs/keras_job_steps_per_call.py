"""The demo's Keras job (trainexec.examples.keras_job) with its model compiled with
`steps_per_execution` = $STEPS_PER_CALL, for benchmarks/keras3_loop.py: tf_keras' `fit`
then runs that many steps per call, as trainexec's Keras 3 loop does (it takes the
compiled value when it is above 1, else 10)."""

import functools
import os
import sys

from trainexec.examples import keras_job

if __name__ == "__main__":
    keras_job.build_model = functools.partial(
        keras_job.build_model, steps_per_execution=int(os.environ["STEPS_PER_CALL"]))
    sys.exit(keras_job.main())
