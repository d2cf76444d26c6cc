"""What each task of a job does, in order, for every trainer: the one home of the roles.

The executor reads TF_CONFIG, the trainer plans the task's role (`RolePlan`), and
`roles.run_role` carries it out here, with the trainer's hooks
(`hooks.TrainerHooks`: `trainexec.estimator_trainer.hooks` and `trainexec.keras.hooks`).

| role | what it does, in order | where |
| --- | --- | --- |
| chief (Estimator, Keras) | clear the completion record; start its server (Estimator); train, saving checkpoints; record that training is complete; record that it finished | `training` |
| worker (Estimator) | start its server; staggered start delay; wait for the chief's model; train; record that it finished | `training` |
| worker (Keras MultiWorkerMirroredStrategy) | train with its peers; record that it finished; wait for its peers to finish too | `training` |
| worker (Keras ParameterServerStrategy) | start its server; serve steps until the chief finished; record that it finished | `roles.run_serving`, `serving` |
| master (Estimator) | as the chief, and evaluate after its checkpoint saves (its own exporters, its log) | `training` |
| ps | start its server; serve variables until every training task finished (Estimator) or the chief did (Keras), or training is over; exit 0 | `roles.run_serving`, `serving` |
| evaluator | evaluate each new checkpoint (throttled), one evaluator per run (a lease), until the run's last checkpoint; export the final model once | `roles.run_evaluating` (`trainexec.evaluation.evaluator_role`) |
| local (no TF_CONFIG) | clear the completion record; train, evaluating after saves (throttled) with the job's listener; the final evaluation and export; record that training is complete; return a `TrainResult` (every other role: None) | `training` |

Its modules:

* `plan`: `RolePlan`, what a task does (the trainer's plan), and `JobSettings`, the job's
  settings (both re-exported by `trainexec.trainer`, the trainers' protocol);
* `roles`: `run_role`, a plan carried out by its action; the serving and evaluating roles;
* `training`: the training sequence (chief, worker, master, local) and the order of its
  records;
* `serving`: the loop that serves until training is over;
* `hooks`: `TrainerHooks`, what a trainer supplies to the sequences, and `Trained`;
* `result`: `TrainResult`, what a role returns (the same for every trainer);
* `peer_watchdog`: a worker still in its role after the chief finished leaves by itself.
* `peer_heartbeats`: a task of a group that trains in step leaves once a peer has been
  silent too long (a peer lost without TensorFlow noticing).

Nothing else in trainexec clears the completion record or records that a task finished
(the public `trainexec.keras.fit.callbacks.TrainingCompleteCallback` excepted: it serves
programs the executor does not run).
"""
