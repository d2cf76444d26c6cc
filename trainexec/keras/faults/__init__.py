"""Faults and peers: what a Keras training task does when it, or a peer, is stopped.

* `preemption`: SIGTERM saves a checkpoint, then the task exits for a restart;
* `restart_rule`: the restart group a task announces to `trainexec launch`;
* `ps_links`: a ParameterServerStrategy chief waits until every worker reaches every ps;
* `coordinator_release`: the PSS chief stops its coordinator's threads once training is over;
* `scratch`: the temporary directories a task makes, removed if it leaves early.
"""
