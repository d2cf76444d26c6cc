"""What a run leaves under `model_dir`, and how to read it from any task or host.

* `layout`: the files under `<model_dir>/trainexec/`, written whole (a reader never sees
  half a record);
* `completion`: the chief's "training is complete" record;
* `finished_tasks`: each training task's "my training finished" record, and start marks;
* `run_state`: "is the run over?" for a serving task or a restarted one;
* `checkpoints`: the checkpoints on disk, the newest, and when one is whole;
* `checkpoint_state`: the `checkpoint` state file TensorFlow's savers keep, read whole;
* `liveness`: whether the owner of a record (a process on some host) is still alive;
* `storage`: what kind of storage `model_dir` is (local, network, object) and how long
  another host's write may take to show.
"""
