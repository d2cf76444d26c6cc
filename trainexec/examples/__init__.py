"""Small, real example jobs used by the demo, the tests and the benchmarks.

* `keras_job`: the Keras job (`python -m trainexec.examples.keras_job --model-dir DIR`);
* `estimator_job`: the Estimator job (TensorFlow 2.15 line);
* `canned_job`: the canned-estimator job (`trainexec.estimator`'s wide and deep, DNN
  or linear classifier; every line);
* `blobs`: their embedded data, three Gaussian classes;
* `arguments`: the command-line options both jobs take;
* `report`: the final result a job prints and writes.
"""
