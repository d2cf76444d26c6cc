"""trainexec/testing/chaos/schedule.py on its own: a fault's timing and text, a schedule's
job shape, label and validation, what `generate` draws for a job shape or kinds it is
given, and seed lists (tests/test_testing_chaos.py covers the seeds' spread, round trips
and the kept regressions)."""

import pytest

from trainexec.testing.chaos.schedule import Fault, Schedule, parse_seeds

pytestmark = pytest.mark.any_line


def test_a_lasting_fault_is_in_force_from_its_start_until_just_before_its_end():
    cut = Fault("cut", "worker", 1, 4.0, 2.5)
    assert cut.lasting and not cut.on_storage and cut.task == "worker:1"
    assert cut.ends_secs == pytest.approx(6.5)
    assert [cut.active_at(t) for t in (3.9, 4.0, 6.4, 6.5)] == [False, True, True, False]
    kill = Fault("kill", "chief", 0, 4.0)
    assert not kill.lasting and kill.ends_secs == 4.0 and not kill.active_at(4.0)
    outage = Fault("storage-outage", "storage", 0, 2.0, 3.0)
    assert outage.lasting and outage.on_storage and outage.active_at(4.9)


def test_fault_text_reads_with_or_without_units_and_carries_a_storage_detail():
    assert Fault.parse("  kill worker:1 at 3 ") == Fault("kill", "worker", 1, 3.0)
    assert Fault.parse("freeze ps:0 at 5s for 3") == Fault("freeze", "ps", 0, 5.0, 3.0)
    errors = Fault("storage-errors", "storage", 0, 2.5, 4.0, "ESTALE")
    assert errors.describe() == "storage-errors storage:0 at 2.5s for 4s with ESTALE"
    assert Fault.parse(errors.describe()) == errors
    assert errors.to_dict() == {"kind": "storage-errors", "task_type": "storage",
                                "index": 0, "at_secs": 2.5, "duration_secs": 4.0,
                                "detail": "ESTALE"}


@pytest.mark.parametrize("make, words", [
    (lambda: Fault("kill", "master", 0, 1.0), "fault task type 'master': use one of chief, "
     "worker, ps, evaluator"),
    (lambda: Fault("kill", "worker", -1, 1.0), "fault index -1: use an integer >= 0"),
    (lambda: Fault("kill", "worker", True, 1.0), "fault index True: use an integer >= 0"),
    (lambda: Fault.parse("freeze worker:0 at 3s for 0s"), "a freeze lasts a while"),
    (lambda: Fault.parse("kill worker:0 at -3s"), "write it as KIND TYPE:INDEX at SECS"),
])
def test_a_fault_that_cannot_be_played_is_refused_naming_the_value(make, words):
    with pytest.raises(ValueError) as refused:
        make()
    assert words in str(refused.value)


def test_a_schedule_tells_its_tasks_and_shape_in_words():
    one = Schedule.explicit("pss", [], workers=1, evaluator=False, seed=4)
    assert one.ps == 1  # a ps mode gets its ps unless told
    assert one.tasks() == [("chief", 0), ("worker", 0), ("ps", 0)]
    assert one.shape() == "pss (chief, 1 worker, 1 ps)"
    alone = Schedule.explicit("mwms", [], workers=0)
    assert alone.ps == 0 and alone.tasks() == [("chief", 0), ("evaluator", 0)]
    assert alone.shape() == "mwms (chief, evaluator)"


def test_faults_given_out_of_order_are_kept_in_time_order():
    schedule = Schedule.explicit("mwms", ["kill worker:1 at 9s", "freeze chief:0 at 2s for 3s",
                                          "sigterm worker:0 at 4.5s"], seed=8)
    assert [f.task for f in schedule.faults] == ["chief:0", "worker:0", "worker:1"]
    assert schedule.last_start_secs == 9.0
    assert schedule.last_fault_end_secs == 9.0  # the kill at 9 s ends after the freeze's 5 s
    assert schedule.describe() == ("seed 8: mwms (chief, 2 workers, evaluator) on local: "
                                   "freeze chief:0 at 2s for 3s; sigterm worker:0 at 4.5s; "
                                   "kill worker:1 at 9s (1 overlapping)")


def test_labels_and_the_baseline_run_without_faults():
    seeded = Schedule.explicit("mwms", ["kill chief:0 at 3s"], seed=12, storage="nfs")
    assert seeded.label() == "seed 12"
    assert Schedule.explicit("mwms", []).label() == "explicit"
    assert Schedule.explicit("mwms", [], name="issue-46").label() == "issue-46"
    baseline = seeded.without_faults()
    assert baseline.faults == () and baseline.label() == "seed 12 baseline"
    assert baseline.shape_key() == seeded.shape_key() == ("mwms", 2, 0, True, "nfs")
    assert baseline.describe() == ("seed 12 baseline: mwms (chief, 2 workers, evaluator) "
                                   "on nfs: no fault")
    assert baseline.last_fault_end_secs == 0.0 and baseline.last_start_secs == 0.0


def test_a_kept_schedule_from_before_name_and_max_steps_still_loads():
    schedule = Schedule.from_dict({"seed": 3, "mode": "mwms", "faults": [
        {"kind": "sigterm", "task_type": "worker", "index": 0, "at_secs": 7.7}]})
    assert (schedule.name, schedule.max_steps, schedule.storage) == ("", None, "local")
    assert schedule.faults == (Fault("sigterm", "worker", 0, 7.7),)
    assert Schedule.explicit("mwms", [], max_steps=2400).describe().startswith(
        "explicit: mwms (chief, 2 workers, evaluator) on local, 2400 steps: no fault")


@pytest.mark.parametrize("make, words", [
    (lambda: Schedule.explicit("mwms", ["cut evaluator:0 at 3s for 2s"], evaluator=False),
     "fault 'cut evaluator:0 at 3s for 2s': this job has no evaluator:0 "
     "(mwms (chief, 2 workers))"),
    (lambda: Schedule(1, "mwms", workers=-1), "workers -1, ps 0: use counts >= 0"),
    (lambda: Schedule(1, "mwms", max_steps=0), "max_steps 0: use a number of steps >= 1"),
    (lambda: Schedule(1, "tpu"), "mode 'tpu': use one of mwms, pss"),
])
def test_a_schedule_the_runner_could_not_play_is_refused_saying_why(make, words):
    with pytest.raises(ValueError) as refused:
        make()
    assert words in str(refused.value)


def test_generated_faults_only_reach_the_tasks_the_shape_has():
    for seed in range(1, 25):
        schedule = Schedule.generate(seed, modes=("mwms",), workers=0, evaluator=False,
                                     faults=(3, 3))
        assert schedule.tasks() == [("chief", 0)]
        assert len(schedule.faults) == 3
        assert {f.task for f in schedule.faults} == {"chief:0"}


def test_storage_kinds_asked_for_alone_draw_only_storage_faults_with_the_storages_detail():
    for seed in range(1, 15):
        schedule = Schedule.generate(seed, storages=("nfs",),
                                     kinds=("storage-errors", "storage-slow"))
        assert schedule.faults and all(f.task == "storage:0" for f in schedule.faults)
        for fault in schedule.faults:
            expected = {"EIO", "ESTALE"} if fault.kind == "storage-errors" else {"0.05s"}
            assert fault.detail in expected and fault.duration_secs > 0


@pytest.mark.parametrize("kwargs, words", [
    ({"kinds": ("kill", "zap")}, "kinds ['kill', 'zap']: use some of kill, sigterm"),
    ({"storages": ("local",), "kinds": ("disk-full",)},
     "(local storage has [])"),
    ({"modes": ()}, "give at least one mode and one storage"),
    ({"faults": (0, 2)}, "faults=(0, 2): give 1 <= low <= high"),
    ({"training_secs": -5.0}, "training_secs=-5.0"),
])
def test_generate_refuses_what_it_cannot_draw_from(kwargs, words):
    with pytest.raises(ValueError) as refused:
        Schedule.generate(1, **kwargs)
    assert words in str(refused.value)


@pytest.mark.parametrize("text, seeds", [(" 1-3 , ,5", [1, 2, 3, 5]), ("7-7", [7]),
                                         ("4,2-4", [4, 2, 3])])
def test_seed_lists_keep_the_order_given_and_skip_blanks_and_repeats(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text, words", [(",", "seeds ',': no seed given"),
                                         ("1-3,9-4", "seeds '9-4': the range runs backwards"),
                                         ("1;2", "write them as 1-20 or 3,14,28")])
def test_a_bad_seed_list_is_refused_naming_it(text, words):
    with pytest.raises(ValueError) as refused:
        parse_seeds(text)
    assert words in str(refused.value)
