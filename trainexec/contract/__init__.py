"""What a task tells whoever runs it: a launcher, Kubernetes, Slurm, a person.

* `exit_codes`: the exit-code contract (0, 1, 2, 74, 137, 143, 170, 171, 172) and the hook
  that ends an uncaught error with its code;
* `storage_faults`: an error of `model_dir`'s storage told from the rest, transient or
  permanent, with its path and what to do; `storage_watch`: the bound on how long
  `model_dir` may not answer (a stalled file server, a silent bucket);
* `tensorflow_calls`: a task's background calls into TensorFlow, waited for when the
  program ends (one returning during finalization aborts the process);
* `termination`: whether this process got SIGTERM (an error after it is a preemption);
* `exit_deadline`: the bound on a cluster task's ending once its role is over;
  `exit_watchdog`: its last resort, a process outside the interpreter that ends a task
  whose shutdown holds the interpreter;
* `restart_announcements`: the restart group a task announces to `trainexec launch`;
* `task_status`: the progress records `trainexec launch` shows;
* `task_logging`: the task-name prefix of every log line;
* `slurm_outcome`: a Slurm task's recorded verdict and the job's decision from them;
* `slurm_env`: the variables a Slurm batch script exports to its step's tasks.
"""
