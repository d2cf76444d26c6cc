"""trainexec/testing/chaos/own_job.py: your program as a chaos job (the schedule's shape,
the storage's model_dir and environment), and a schedule refused when its faults would
come after the job has finished training. The worked example on the README's train.py
runs on the bed: tests/cluster/test_readme_chaos.py."""

from __future__ import annotations

import pytest

from trainexec.testing.chaos import JobPaths, JobTooShort, Schedule, program_job
from trainexec.testing.chaos.own_job import check_training_span

pytestmark = pytest.mark.any_line


def test_the_factory_runs_the_command_in_the_schedules_shape_on_its_storage():
    job = program_job(["python", "train.py", "--model-dir", "{model_dir}", "--out",
                       "{result_file}"], env={"A": "1"})
    schedule = Schedule.explicit("pss", [], workers=3)
    spec = job(schedule, JobPaths("gs://b/model", "/w/final.json", {"CA": "/ca.pem"}))
    assert spec.command == ["python", "train.py", "--model-dir", "gs://b/model", "--out",
                            "/w/final.json"]
    assert dict(spec.env) == {"A": "1", "CA": "/ca.pem"}
    assert sorted(spec.pods()) == sorted(schedule.tasks())


def test_a_command_without_its_model_dir_is_refused():
    with pytest.raises(ValueError, match="put {model_dir} where the program takes"):
        program_job(["python", "train.py"])


def test_a_job_too_short_for_the_schedule_is_refused_saying_what_to_do():
    schedule = Schedule.explicit("mwms", ["kill worker:0 at 1s", "sigterm chief:0 at 7.5s"],
                                 seed=7)
    check_training_span(schedule, 8.0)  # every fault meets training
    check_training_span(schedule, None)  # unknown: nothing to check
    with pytest.raises(JobTooShort) as refused:
        check_training_span(schedule, 2.4)
    said = str(refused.value)
    assert "the job trains 2.4s after its first checkpoint, and 1 of this schedule's 2 " \
           "faults start later (sigterm chief:0 at 7.5s)" in said
    assert "Schedule.generate(seed, ..., training_secs=2.4)" in said
    # A schedule drawn for that length passes.
    check_training_span(Schedule.generate(7, training_secs=2.4), 2.4)


def test_run_schedule_refuses_before_it_starts_anything(tmp_path):
    from trainexec.testing.chaos import run_schedule

    schedule = Schedule.explicit("mwms", ["kill worker:0 at 5s"], workers=1)
    job = program_job(["python", "train.py", "--model-dir", "{model_dir}"])
    with pytest.raises(JobTooShort, match="the job trains 2.0s"):
        run_schedule(schedule, str(tmp_path / "run"), job=job, max_steps=300,
                     training_secs=2.0)
    assert not (tmp_path / "run").exists()
