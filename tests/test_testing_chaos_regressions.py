"""trainexec/testing/chaos/regressions.py: the kept schedules say what their issue says
(each one's seed, job and the order of its faults as the module doc tells it), every
fault meets a job still training, and the chaos command selects them by name. Nothing is
run: a schedule's replay on the multi-host bed is tests/cluster/test_chaos.py; their
exact fault lists, tests/test_testing_chaos.py::
test_the_issues_regressions_are_kept_with_their_faults."""

import pytest

from trainexec.testing.chaos import cli
from trainexec.testing.chaos.regressions import REGRESSIONS
from trainexec.testing.chaos.runner import MAX_STEPS
from trainexec.testing.chaos.schedule import TRAINING_SECS

pytestmark = pytest.mark.any_line

TRAINING_TASKS = ("chief", "worker", "ps")
SEEDED = {name: int(name.rsplit("-", 1)[1]) for name in REGRESSIONS
          if name.rsplit("-", 1)[-1].isdigit()}


def faults(name, text):
    """The faults of REGRESSIONS[name] whose describe() starts with `text`."""
    return [f for f in REGRESSIONS[name].faults if f.describe().startswith(text)]


def test_each_is_labelled_as_a_regression_and_keeps_the_seed_its_name_gives():
    labels = [schedule.label() for schedule in REGRESSIONS.values()]
    assert all(label.startswith("regression ") for label in labels)
    assert len(set(labels)) == len(labels)  # the chaos report tells them apart
    assert SEEDED.keys() == REGRESSIONS.keys() - {"mwms-worker-stayed"}
    for name, seed in SEEDED.items():
        schedule = REGRESSIONS[name]
        assert schedule.seed == seed and schedule.label().endswith(f"seed {seed}")
    assert REGRESSIONS["mwms-worker-stayed"].seed is None  # not drawn: a storage issue's


def test_the_seeds_up_to_31_ran_the_keras_mwms_job_and_the_last_two_a_ps_job():
    for name in ("seed-1", "seed-3", "seed-14", "seed-28", "seed-31", "mwms-worker-stayed"):
        assert REGRESSIONS[name].shape() == "mwms (chief, 2 workers, evaluator)"
    assert REGRESSIONS["native-estimator-14"].shape() == (
        "native-estimator (chief, 2 workers, 1 ps, evaluator)")
    assert REGRESSIONS["estimator-48"].shape() == (
        "estimator (chief, 2 workers, 1 ps, evaluator)")
    on_other_storage = {n: s.storage for n, s in REGRESSIONS.items() if s.storage != "local"}
    assert on_other_storage == {"seed-31": "nfs"}


def _seed_1():  # two SIGKILLs of the evaluator around a short cut of worker:0
    (cut,), kills = faults("seed-1", "cut worker:0"), faults("seed-1", "kill evaluator:0")
    # One before the cut, one once it has begun (the issue's 11.2 s falls inside it).
    return len(kills) == 2 and kills[0].at_secs < cut.at_secs < kills[1].at_secs


def _seed_3():  # the chief cut off and worker:0 preempted at the same moment
    (cut,), (term,) = faults("seed-3", "cut chief:0"), faults("seed-3", "sigterm worker:0")
    return cut.at_secs == term.at_secs


def _seed_14():  # two workers frozen, overlapping, then the evaluator cut
    frozen = faults("seed-14", "freeze worker")
    (cut,) = faults("seed-14", "cut evaluator:0")
    return (len(frozen) == 2 and frozen[0].active_at(frozen[1].at_secs)
            and all(f.at_secs < cut.at_secs for f in frozen))


def _seed_28():  # worker:0 and the chief preempted 0.3 s apart, then worker:0 frozen and cut
    terms = faults("seed-28", "sigterm")
    later = faults("seed-28", "freeze worker:0") + faults("seed-28", "cut worker:0")
    return ([f.task for f in terms] == ["worker:0", "chief:0"] and len(later) == 2
            and terms[1].at_secs - terms[0].at_secs == pytest.approx(0.3)
            and all(terms[1].at_secs < f.at_secs for f in later))


def _seed_31():  # worker:0 cut off, and SIGTERM to it 9.5 s into the cut
    (cut,), (term,) = faults("seed-31", "cut worker:0"), faults("seed-31", "sigterm worker:0")
    return term.at_secs - cut.at_secs == pytest.approx(9.5) and cut.active_at(term.at_secs)


def _native_estimator_14():  # the ps frozen, then worker:1 killed and frozen as it restarted
    (ps,), (kill,) = (faults("native-estimator-14", "freeze ps:0"),
                      faults("native-estimator-14", "kill worker:1"))
    (freeze,) = faults("native-estimator-14", "freeze worker:1")
    return ps.active_at(kill.at_secs) and kill.at_secs < freeze.at_secs


def _worker_stayed():  # worker:1 frozen, worker:0 half a second later, then the evaluator cut
    (one,), (zero,) = (faults("mwms-worker-stayed", "freeze worker:1"),
                       faults("mwms-worker-stayed", "freeze worker:0"))
    (cut,) = faults("mwms-worker-stayed", "cut evaluator:0")
    return zero.at_secs - one.at_secs == pytest.approx(0.5) and zero.at_secs < cut.at_secs


def _estimator_48():  # the evaluator frozen while the ps is killed, then preempted; then
    (frozen,) = faults("estimator-48", "freeze evaluator:0")  # worker:0 preempted
    ps = faults("estimator-48", "kill ps:0") + faults("estimator-48", "sigterm ps:0")
    (worker,) = faults("estimator-48", "sigterm worker:0")
    return (all(frozen.active_at(f.at_secs) for f in ps) and ps[0].at_secs < ps[1].at_secs
            < worker.at_secs)


STORIES = {"seed-1": _seed_1, "seed-3": _seed_3, "seed-14": _seed_14, "seed-28": _seed_28,
           "seed-31": _seed_31,
           "native-estimator-14": _native_estimator_14,
           "mwms-worker-stayed": _worker_stayed, "estimator-48": _estimator_48}


@pytest.mark.parametrize("name", STORIES)
def test_the_faults_come_in_the_order_the_issue_tells(name):
    assert STORIES[name](), REGRESSIONS[name].describe()


@pytest.mark.parametrize("name", REGRESSIONS)
def test_every_fault_meets_a_job_still_training(name):
    """Before the job's training ends (about TRAINING_SECS per MAX_STEPS steps), or while
    an earlier freeze or cut of a training task holds it back."""
    schedule = REGRESSIONS[name]
    ends = TRAINING_SECS * (schedule.max_steps or MAX_STEPS) / MAX_STEPS
    for i, fault in enumerate(schedule.faults):
        held = [f for f in schedule.faults[:i]
                if f.task_type in TRAINING_TASKS and f.active_at(fault.at_secs)]
        assert fault.at_secs < ends or held, (
            f"{fault.describe()} comes after {name}'s {ends:g} s of training: raise max_steps")


def test_the_chaos_command_selects_regressions_by_name_in_the_order_given():
    args = cli.parser().parse_args(["--regression", "seed-31, estimator-48,seed-3"])
    # Named, one is selected even where its job does not run (unlike "all").
    assert cli.schedules_from(args) == [REGRESSIONS["seed-31"], REGRESSIONS["estimator-48"],
                                        REGRESSIONS["seed-3"]]
    with pytest.raises(ValueError, match=r"--regression \['seed-2'\]: use all or some of "
                                         r"seed-1, seed-3, "):
        cli.schedules_from(cli.parser().parse_args(["--regression", "seed-3,seed-2"]))
