"""Random mixes of faults on the multi-host bed: seeded, replayable chaos runs.

One fault at a time is what the fault matrix tests; real clusters overlap them
(a node drain preempts one pod while a network blip cuts another). A chaos run
takes a `Schedule` (a job's shape, its storage, and 2-N faults among SIGKILL,
SIGTERM, freeze and cut of any role, ps and evaluator included, and the storage's own:
errors, an outage, slowness, a full disk; some starting while another is in force),
runs the job as a TFJob on
`trainexec.testing.netns.TestBed` (`trainexec.testing.kubelet.TFJobRun`: every
pod its own host, Kubeflow's TF_CONFIG, the ExitCode restart policy), applies
the faults at their times, and checks what must hold afterwards
(`invariants`): the job succeeds (every one of these faults is recoverable),
the final checkpoint is at `max_steps` and evaluated, exactly one whole final
export, no half-written checkpoint evaluated, no process left (safety); every
pod ends within the bound after the chief or the last fault (liveness). Each
`Violation` carries the seed and its evidence (log lines, files).

Modules, one concept each: `schedule` (`Schedule`, `Fault`, the seeded
generator), `own_job` (`program_job`: your program as the job; `JobTooShort`), `regressions` (`REGRESSIONS`: schedules that once failed, kept),
`evidence` (`Evidence`: what a run leaves to judge it by, and its bounds),
`invariants` (`check`, `Violation`, `not_judged`), `storages` (where model_dir lives:
local, NFS-like views, a gs:// bucket of the GCS emulator; each one's staleness), `observe`
(what a run leaves, read from outside the bed: checkpoints, exports, the log), `runner`
(`run_schedule`, `demo_job`), `report` (`ChaosReport`: what a run found), `suite` (what CI runs: the default set chosen
by coverage, the full one-fault matrix), `cli` (the command line), `__main__`
(`python -m trainexec.testing.chaos`).
Root only, as the bed is; "nfs" storage also needs bindfs, "gs" the emulator's packages.

Example:
    ```python
    from trainexec.testing.chaos import Schedule, run_schedule

    schedule = Schedule.generate(3, modes=("mwms", "pss"), storages=("local",))
    print(schedule.describe())
    report = run_schedule(schedule, "/tmp/chaos-3")        # the packaged demo job
    for violation in report.violations:
        print(violation.describe())
    assert not report.safety
    ```

From a shell, K seeds and a table (non-zero exit on a safety violation):

    python -m trainexec.testing.chaos --seeds 1-20 --modes mwms,pss --storage local,nfs
    python -m trainexec.testing.chaos --seed 7 --modes mwms,pss --storage local,nfs

Your own job: `run_schedule(schedule, workdir, job=factory)`, where
`factory(schedule, paths)` returns its `TFJobSpec` (`program_job(command)` writes one
for a program taking `--model-dir {model_dir}`). A run without faults first
(`report.training_secs`) says how long it trains; `Schedule.generate(seed,
training_secs=...)` draws faults within that span, and a schedule whose faults would
come after it is refused (`JobTooShort`). Its exports are judged when `export_name`
names its exporter; `report.summary()` says which invariants were judged:

    job = program_job([sys.executable, "train.py", "--model-dir", "{model_dir}"])
    report = run_schedule(Schedule.generate(7, modes=("mwms",), training_secs=3),
                          "/tmp/chaos-7", job=job, max_steps=300)
    print(report.summary())
"""

from trainexec.testing.chaos.invariants import (BOUND_SECS, Evidence, Violation, check,
                                                not_judged)
from trainexec.testing.chaos.own_job import JobTooShort, program_job
from trainexec.testing.chaos.regressions import REGRESSIONS
from trainexec.testing.chaos.runner import (MAX_STEPS, ChaosReport, JobFactory, JobPaths,
                                            demo_job, mode_unavailable, run_schedule)
from trainexec.testing.chaos.schedule import (KINDS, MODES, STORAGES, Fault, Schedule,
                                              parse_seeds)

__all__ = ["BOUND_SECS", "KINDS", "MAX_STEPS", "MODES", "REGRESSIONS", "STORAGES",
           "ChaosReport", "Evidence", "Fault", "JobFactory", "JobPaths", "JobTooShort",
           "Schedule", "Violation", "check", "demo_job", "mode_unavailable", "not_judged",
           "parse_seeds", "program_job", "run_schedule"]
