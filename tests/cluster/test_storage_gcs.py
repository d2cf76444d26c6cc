"""One evaluator, one final export, whole exports, on gs:// (TensorFlow's own GCS file
system and the lease's google-cloud-storage client against trainexec.testing.gcs's
emulator), each evaluator on its own host of a trainexec.testing.TestBed.

The race runs 20 rounds under `-m multihost` (the full matrix), 5 otherwise
(TRAINEXEC_GCS_RACE_ROUNDS overrides both). Root only (network namespaces, port 443);
skipped, saying why, elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from trainexec.testing import gcs
from trainexec.testing.gcs import GcsEmulator
from trainexec.testing.netns import TestBed, unavailable

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "gcs_programs", "sidecar_rounds.py")
WHY_NOT = unavailable() or gcs.unavailable()
pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.multihost, pytest.mark.keras,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


@pytest.fixture()
def race_rounds(request) -> int:
    full = "multihost" in (request.config.getoption("markexpr") or "")
    return int(os.environ.get("TRAINEXEC_GCS_RACE_ROUNDS", "20" if full else "5"))


@pytest.fixture()
def bed(tmp_path):
    with TestBed(["gcs", "eval-a", "eval-b"], aliases={"gcs": GcsEmulator.HOST_NAMES}) as bed:
        emulator = GcsEmulator(str(tmp_path / "gcs"), address=bed.host("gcs").address,
                               run=lambda argv, **kw: bed.popen("gcs", argv, **kw))
        with emulator:
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **emulator.client_env())
            yield bed, emulator, env


def _run(bed, env, host, *args, timeout=240):
    proc = bed.popen(host, [sys.executable, PROGRAM, *args], env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{args[0]} on {host} exited {proc.returncode}: {err[-3000:]}"
    return out


def _start(bed, env, host, *args, log):
    return bed.popen(host, [sys.executable, PROGRAM, *args], env=env, stdout=log,
                     stderr=subprocess.STDOUT)


def _go(control, round_, lead=0.5):
    with open(os.path.join(control, f"go-{round_}.json"), "w") as f:
        json.dump({"start_at": time.time() + lead}, f)


def _outcome(control, name, round_, procs, timeout=120):
    path = os.path.join(control, f"{name}-{round_}.json")
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        failed = [p.returncode for p in procs if p.poll() not in (None, 0)]
        assert not failed, f"an evaluator failed (exit {failed}) in round {round_}"
        assert time.monotonic() < deadline, f"{name} gave no outcome in round {round_}"
        time.sleep(0.05)
    return json.load(open(path))


@pytest.mark.full_suite(covered_by=(
    "test_testing_gcs.py::test_create_if_absent_has_one_winner (the lease's one-winner "
    "write on gs://), test_export_faults.py::test_second_evaluator_is_refused_and_a_dead_"
    "ones_lease_is_taken_over, and the chaos gs:// rows' one-whole-export invariant"))
def test_two_sidecar_evaluators_started_together_on_gs_one_evaluates_one_final_export(
        bed, tmp_path, race_rounds):
    bed, emulator, env = bed
    runs = emulator.url("race")
    _run(bed, env, "eval-a", "prepare", runs, str(race_rounds))
    control = str(tmp_path / "control")
    os.makedirs(control)
    log = open(tmp_path / "evaluators.log", "w")
    procs = [_start(bed, env, host, "evaluate", runs, str(race_rounds), control, host,
                    log=log) for host in ("eval-a", "eval-b")]
    spreads, winners = [], []
    try:
        time.sleep(8)  # both have imported TensorFlow and wait for the first round
        for r in range(race_rounds):
            _go(control, r)
            outcomes = {host: _outcome(control, host, r, procs) for host in ("eval-a",
                                                                             "eval-b")}
            spreads.append(abs(outcomes["eval-a"]["started"] - outcomes["eval-b"]["started"]))
            evaluated = [h for h, o in outcomes.items() if o["outcome"] == "evaluated"]
            assert len(evaluated) == 1, (r, outcomes)  # exactly one evaluates
            (other,) = set(outcomes) - set(evaluated)
            # The other is refused while the lease is renewed, or, when the winner has
            # already finished and released it, stops at once without evaluating.
            assert outcomes[other]["outcome"] in ("refused", "found done"), (r, outcomes)
            if outcomes[other]["outcome"] == "found done":
                assert outcomes[other]["loss"] == outcomes[evaluated[0]]["loss"]
            winners.append((evaluated[0], outcomes[other]["outcome"]))
        for proc in procs:
            assert proc.wait(timeout=60) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        log.close()
    assert max(spreads) < 0.05, f"the evaluators did not start together: {spreads}"
    exports = json.loads(_run(bed, env, "eval-a", "inspect", runs, str(race_rounds)))
    for r in range(race_rounds):  # exactly one final export, whole, and nothing else
        assert exports[str(r)] == {"numbered": {"16": True}, "exports": ["16"],
                                   "other": []}, (r, exports[str(r)])
    print(f"{race_rounds} rounds: winners {winners}; start spread max "
          f"{max(spreads) * 1000:.1f} ms")


# Run 3 repeats it under full_lines only: there test_chaos.py[estimator-gs-storage]
# judges the final export on TF 2.15's client (the kill mid-publish runs on run 1).
@pytest.mark.full_lines
def test_an_evaluator_killed_while_publishing_to_gs_leaves_no_partial_export_that_counts(
        bed, tmp_path):
    bed, emulator, env = bed
    runs = emulator.url("killed")
    _run(bed, env, "eval-a", "prepare", runs, "1")
    control = str(tmp_path / "control")
    os.makedirs(control)
    with open(tmp_path / "killed.log", "w") as log:
        killed = _start(bed, env, "eval-a", "evaluate", runs, "1", control, "killed",
                        "--kill-on-copy", "3", log=log)
        _go(control, 0, lead=0)
        assert killed.wait(timeout=180) != 0
    said = open(tmp_path / "killed.log").read()
    assert "killed_at_copy" in said, said[-2000:]
    left = json.loads(_run(bed, env, "eval-b", "inspect", runs, "1"))["0"]
    # What the kill left: an export directory without its graph, which no loader takes
    # for a SavedModel and trainexec does not count, and the killed writer's staging.
    assert left["numbered"] == {"16": False} and left["exports"] == [], left
    # Restarted (on another host: the killed one's lease is taken over once it is seen
    # gone or stale), it publishes the final export once, whole, and nothing partial stays.
    os.remove(os.path.join(control, "go-0.json"))
    with open(tmp_path / "restarted.log", "w") as log:
        restarted = _start(bed, env, "eval-a", "evaluate", runs, "1", control, "again",
                           log=log)
        _go(control, 0, lead=0)
        assert restarted.wait(timeout=180) == 0, open(tmp_path / "restarted.log").read()
    assert json.load(open(os.path.join(control, "again-0.json")))["outcome"] == "evaluated"
    final = json.loads(_run(bed, env, "eval-b", "inspect", runs, "1"))["0"]
    assert final == {"numbered": {"16": True}, "exports": ["16"], "other": []}, final
