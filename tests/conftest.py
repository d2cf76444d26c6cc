"""Shared fixtures (quiet TensorFlow logs, the repository root) and the markers:

* `cluster`: the tests that start real processes (TensorFlow servers, launcher jobs)
  live in tests/cluster/, each file marked as a whole; a `cluster` test elsewhere,
  or an unmarked one there, stops the run before it starts;
* `estimator`: skipped where tf.estimator is missing, but FAILS there when
  TRAINEXEC_REQUIRE_ESTIMATOR=1 (the TensorFlow 2.15 run must not skip them);
* `keras`: with TRAINEXEC_KERAS_TESTS_ONLY=1 every other test is deselected, and so
  are the multi-host ones unless `-m` names `multihost` (the tf_keras run: Keras 2's
  code paths are the same on one host as on several, which the Keras 3 run covers);
* `full_matrix`: one-fault multi-host schedules beyond the default set (the chaos
  suite's full matrix), deselected unless `-m` names `multihost`
  (`./scripts/test.sh -m multihost`);
* `slurm_faults`: real-Slurm job rows beyond the default two (the PSS job, preemption,
  a permanent exit, a lost node), deselected unless `-m` names `slurm`;
* `full_lines`: a cluster test whose code path runs 2 and 3 already cover with
  another cluster test of the same Keras or storage (the coverage subset); those runs
  repeat it only when `-m` names `full_lines` (`TRAINEXEC_TEST_LINES="2 3"
  ./scripts/test.sh -m "cluster or full_lines"`); run 1 runs it every time; an
  `estimator` test marked so stops the run (run 3 is where they run);
* `full_suite(covered_by=...)`: a cluster test whose promise a default test checks
  too (`covered_by` names it): deselected in every run unless `-m` names
  `full_suite` or the command line names the test itself (`path::test_name`);
  `./scripts/test.sh -m "cluster or full_suite or full_lines"` runs every default and
  `full_suite` cluster test on every line; one without `covered_by`, or an `estimator`
  one, stops the run;
* `tf_line` / `any_line`: where a test's result can differ. Every test file says which
  in its module-level `pytestmark` (tests/test_suite_lines.py checks it); a test of an
  `any_line` file may add `tf_line` for itself. With TRAINEXEC_TF_LINE_TESTS_ONLY=1 (the
  TensorFlow 2.15 run) only `tf_line` and `estimator` tests are collected: the rest
  cannot give another result there, and runs once, on current TensorFlow.
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import sigterm_teardown  # noqa: E402  (needs the sys.path entry above)
import tf_lines  # noqa: E402
from trainexec.contract import exit_deadline, storage_watch  # noqa: E402

# Roles run inside pytest end with pytest's code, not a role's: no exit deadline and no
# storage watch here (the tasks the tests start as processes keep theirs).
exit_deadline.disable_in_this_process()
storage_watch.disable_in_this_process()


def pytest_configure(config):
    # A run stopped with SIGTERM (a CI timeout, `kill`) still tears its fixtures down:
    # the beds' namespaces, links, mounts and daemons go (tests/sigterm_teardown.py).
    sigterm_teardown.install()


@pytest.fixture
def no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


CLUSTER_TESTS = ROOT / "tests" / "cluster"


def _misplaced(items) -> list[str]:
    """The tests marked `cluster` outside tests/cluster/, and the unmarked ones in it."""
    return [item.nodeid for item in items
            if (item.get_closest_marker("cluster") is not None)
            != (CLUSTER_TESTS in item.path.resolve().parents)]


def _deselect(config, items, dropped) -> None:
    """Takes `dropped` out of `items` (in place), reported to pytest as deselected."""
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in gone]


def _named(config, word) -> bool:
    """Whether `-m`'s expression mentions `word` (`-m "not multihost"` does too)."""
    return word in (config.getoption("markexpr") or "")


def _keep_full_suite_apart(config, items) -> None:
    """`full_suite` tests leave the run unless `-m` names them; each must say which
    default test covers its promise, and none may be an Estimator test (run 3 runs
    every one)."""
    marked = [item for item in items if item.get_closest_marker("full_suite")]
    wrong = [f"{item.nodeid}: " + ("an `estimator` test runs on every line it can"
                                   if item.get_closest_marker("estimator") else
                                   "give covered_by=\"the default test that checks the "
                                   "same promise\"")
             for item in marked
             if item.get_closest_marker("estimator")
             or not item.get_closest_marker("full_suite").kwargs.get("covered_by")]
    if wrong:
        raise pytest.UsageError("`full_suite` marks a cluster test a default test "
                                "covers:\n  " + "\n  ".join(wrong))
    # A test named by its node id (`pytest path::test_name`) runs as asked.
    named = [arg for arg in config.args if "::" in arg]
    marked = [item for item in marked
              if not any(item.nodeid == arg or item.nodeid.startswith(arg + "[")
                         for arg in named)]
    if not _named(config, "full_suite"):
        _deselect(config, items, marked)


def _multihost_last(items) -> None:
    """The multi-host runs go last in a run (stable: the rest keep their order): they
    are the tests the background's no-cluster parts slow most (CONTRIBUTING's test-suite
    section has the figures), and in run 1 those parts have mostly ended by then."""
    items.sort(key=lambda item: item.get_closest_marker("multihost") is not None)


def pytest_collection_modifyitems(config, items):
    misplaced = _misplaced(items)
    if misplaced:
        raise pytest.UsageError(
            "tests that start real processes live in tests/cluster/ with a module-level "
            "`pytestmark = pytest.mark.cluster`, and only those; these do not:\n  "
            + "\n  ".join(misplaced))
    # The multi-host runs keep to the default set unless -m names them:
    # `./scripts/test.sh -m multihost` runs every row.
    if not _named(config, "multihost"):
        _deselect(config, items, [item for item in items
                                  if item.get_closest_marker("full_matrix")])
    if not _named(config, "slurm"):
        _deselect(config, items, [item for item in items
                                  if item.get_closest_marker("slurm_faults")])
    _keep_full_suite_apart(config, items)
    both = [item.nodeid for item in items
            if item.get_closest_marker("full_lines") and item.get_closest_marker("estimator")]
    if both:  # run 3 exists for the Estimator tests: none may be left out of it
        raise pytest.UsageError("an `estimator` test runs on every line it can; these are "
                                "also marked `full_lines`, which would leave them out of "
                                "run 3 (TensorFlow 2.15): remove the mark:\n  "
                                + "\n  ".join(both))
    repeat_run = (tf_lines.env_flag("TRAINEXEC_KERAS_TESTS_ONLY")
                  or tf_lines.env_flag("TRAINEXEC_TF_LINE_TESTS_ONLY"))
    if repeat_run and not _named(config, "full_lines"):
        _deselect(config, items, [item for item in items
                                  if item.get_closest_marker("full_lines")])
    if tf_lines.env_flag("TRAINEXEC_KERAS_TESTS_ONLY"):
        wanted = _named(config, "multihost")
        _deselect(config, items, [
            item for item in items if not item.get_closest_marker("keras")
            or (item.get_closest_marker("multihost") and not wanted)])
    if tf_lines.env_flag("TRAINEXEC_TF_LINE_TESTS_ONLY"):
        _deselect(config, items, [item for item in items
                                  if not (item.get_closest_marker("tf_line")
                                          or item.get_closest_marker("estimator"))])
    _multihost_last(items)
    if tf_lines.env_flag("TRAINEXEC_REQUIRE_ESTIMATOR"):
        return  # pytest_runtest_call fails them instead
    if any(item.get_closest_marker("estimator") for item in items):
        missing = tf_lines.estimator_missing()
        if missing:
            skip = pytest.mark.skip(reason=f"needs tf.estimator: {missing}; to run it: "
                                    f"{tf_lines.ESTIMATOR_FIX}")
            for item in items:
                if item.get_closest_marker("estimator"):
                    item.add_marker(skip)


def pytest_runtest_call(item):
    if (item.get_closest_marker("estimator")
            and tf_lines.env_flag("TRAINEXEC_REQUIRE_ESTIMATOR")
            and tf_lines.estimator_missing()):
        pytest.fail(f"TRAINEXEC_REQUIRE_ESTIMATOR=1 but {tf_lines.estimator_missing()}, "
                    f"so this Estimator test cannot run. Run it where tf.estimator "
                    f"exists: {tf_lines.ESTIMATOR_FIX}; or unset "
                    f"TRAINEXEC_REQUIRE_ESTIMATOR to skip it.", pytrace=False)
