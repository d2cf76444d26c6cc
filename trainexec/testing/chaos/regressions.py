"""Schedules that once found a violation, kept as fixed regressions (issue 36).

Each is written out (`Schedule.explicit`) with the faults and times the issue
reports, counted from the moment training began, so it replays the same
faults whatever the generator draws for that seed number today. Those whose
faults come after the packaged jobs' 1200 steps would have ended on an idle
machine (seed 1's last kill at 11.2 s, seed 3's at 7.7 s, seed 28's from 7.6 s,
native-estimator seed 14's faults from 9.7 s, estimator seed 48's last preemption at
17.9 s) train 2400 steps (`max_steps`), so that every fault meets a job still at work. (Seed 3 at
1200 steps once trained to the end 7 s after its first checkpoint: its faults met a
job already over, and the bed, unlike Kubeflow's operator, restarted the preempted
worker after the job had succeeded; both are mended.) Seeds 1-31 ran
the Keras MultiWorkerMirrored job (chief, 2 workers, evaluator); the last two,
drawn by the first generator (faults 3-20 s after training began), a ps job.

* seed 1: two SIGKILLs of the evaluator, one before and one during a short cut of
  worker:0; worker:0 ended 13 s after the chief (the bound was 10 s then; it is 20 s
  now, see invariants).
* seed 3: the chief cut off and worker:0 preempted at the same moment; worker:0's
  preemption handler met the unreachable coordination service and exited 1
  (permanent), failing the job.
* seed 14: two workers frozen, overlapping, then the evaluator cut; worker:1
  ended 17.4 s after the chief.
* seed 28: worker:0 and the chief preempted 0.3 s apart, then worker:0 frozen
  and cut; the chief exited 20 s late and worker:1 never exited by itself.
* seed 31 (NFS-like storage): worker:0 cut off, and SIGTERM to it 9.5 s into
  the cut; it exited 1 as in seed 3. The issue gives only "9.5 s into the cut":
  the cut's start (6 s) and length (14 s) here are this module's choice.
* native-estimator seed 14 (trainexec.estimator, chief, 2 workers, ps,
  evaluator): the ps frozen, then worker:1 killed and frozen as it restarted;
  the restarted worker, started after the run had ended, waited out its
  staggered start and ended 15.1 s late.
* mwms worker that stayed (storage issue's run, MultiWorkerMirrored, 5000 steps, a
  checkpoint every 100): worker:1 frozen 15.2 s and worker:0 frozen 16.5 s half a
  second later, then the evaluator cut off 16 s; every training task restarted once
  and finished, but worker:1, its role over, stayed in TensorFlow's shutdown (its
  coordination service's heartbeat failing towards the departed chief) 25 s and
  more after the chief, past its exit deadline (the issue gives times from the job's
  start; here they are from training's, about 5 s later).
* estimator seed 48 (tf.estimator on TensorFlow 2.15, same shape): the
  evaluator frozen while the ps is killed and then preempted, then worker:0
  preempted; a worker whose session never went on after the ps restart was
  left running.
"""

from __future__ import annotations

from trainexec.testing.chaos.schedule import Schedule

__all__ = ["REGRESSIONS"]

REGRESSIONS: dict[str, Schedule] = {
    "seed-1": Schedule.explicit(
        "mwms", ["kill evaluator:0 at 7.7s", "cut worker:0 at 9.0s for 3.7s",
                 "kill evaluator:0 at 11.2s"], seed=1, name="regression seed 1",
        max_steps=2400),
    "seed-3": Schedule.explicit(
        "mwms", ["cut chief:0 at 7.7s for 12.9s", "sigterm worker:0 at 7.7s"],
        seed=3, name="regression seed 3", max_steps=2400),
    "seed-14": Schedule.explicit(
        "mwms", ["freeze worker:1 at 5.0s for 15.2s", "freeze worker:0 at 5.5s for 16.5s",
                 "cut evaluator:0 at 18.1s for 16s"], seed=14, name="regression seed 14"),
    "seed-28": Schedule.explicit(
        "mwms", ["sigterm worker:0 at 7.6s", "sigterm chief:0 at 7.9s",
                 "freeze worker:0 at 8.5s for 5.2s", "cut worker:0 at 9.4s for 5.8s"],
        seed=28, name="regression seed 28", max_steps=2400),
    "seed-31": Schedule.explicit(
        "mwms", ["cut worker:0 at 6.0s for 14s", "sigterm worker:0 at 15.5s"],
        seed=31, storage="nfs", name="regression seed 31"),
    "native-estimator-14": Schedule.explicit(
        "native-estimator", ["freeze ps:0 at 9.7s for 13.7s", "kill worker:1 at 14.1s",
                             "freeze worker:1 at 15.5s for 11.9s"],
        seed=14, name="regression native-estimator seed 14", max_steps=2400),
    "mwms-worker-stayed": Schedule.explicit(
        "mwms", ["freeze worker:1 at 13.7s for 15.2s", "freeze worker:0 at 14.2s for 16.5s",
                 "cut evaluator:0 at 26.9s for 16s"],
        name="regression mwms worker that stayed", max_steps=5000),
    "estimator-48": Schedule.explicit(
        "estimator", ["freeze evaluator:0 at 6.3s for 13.4s", "kill ps:0 at 6.7s",
                      "sigterm ps:0 at 11.4s", "sigterm worker:0 at 17.9s"],
        seed=48, name="regression estimator seed 48", max_steps=2400),
}
