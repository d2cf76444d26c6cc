"""Input functions over in-memory data: what `tf.estimator.inputs` held, on public
TensorFlow (users import them from `trainexec.estimator.inputs`).

* `feeding`: columns of arrays as batches over epochs, shuffled or in order, ending
  with `OutOfRangeError` (tf.estimator's queues, on `tf.data`), and the dataset the
  Estimator engine reads behind an input_fn's tensors;
* `numpy_io`: `numpy_input_fn` (an array or a dict of arrays);
* `pandas_io`: `pandas_input_fn` (a DataFrame; pandas imported on first use).
"""

__all__: list[str] = []
