"""`trainexec.estimator.inputs`: what tf.estimator's `inputs` module held.

`numpy_input_fn` (NumPy arrays) and `pandas_input_fn` (a pandas DataFrame; pandas
imported on first use) with tf.estimator's arguments and behaviour, on public
TensorFlow (`trainexec.estimator_engine.inputs`).

Example:
    ```python
    from trainexec.estimator import inputs

    train_input_fn = inputs.numpy_input_fn({"x": x}, y, batch_size=32,
                                           num_epochs=None, shuffle=True)
    ```
"""

from trainexec.estimator_engine.inputs.numpy_io import numpy_input_fn
from trainexec.estimator_engine.inputs.pandas_io import pandas_input_fn

__all__ = ["numpy_input_fn", "pandas_input_fn"]
