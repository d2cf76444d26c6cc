"""The fault matrix of exports, evaluator records and the ps (issue 9), the rows with real
child processes: an export being written by another process, a second evaluator refused
while the first holds its lease (and a dead one's lease taken over), and a ps that stops
by itself once the run is over. The child processes run this file as a program
(`python tests/cluster/test_export_faults.py <role> ...`: the roles are at the end).
The rows in one process, and the pieces they rely on, are tests/test_fault_matrix_exports.py.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS not in sys.path:  # run as a child program
    sys.path.insert(0, TESTS)

from fakes import StubEstimator  # noqa: E402
from finished_runs import finished_run, input_fn, keras_trainer, loss_at  # noqa: E402
from processes import assert_no_survivors, child_env, wait_until  # noqa: E402
from tf_configs import ps_cluster  # noqa: E402
from trainexec.evaluation.export_files import ExportFileManager  # noqa: E402
from trainexec.executor import TrainingExecutor  # noqa: E402
from trainexec.records.finished_tasks import record_task_finished  # noqa: E402
from trainexec.keras.evaluate.exporters import FinalExporter  # noqa: E402
from trainexec.specs import EvalSpec, TrainSpec  # noqa: E402

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]


class Child:
    """A child process running this file as a program; its output is collected
    as it comes (`out`, `err`: lists of lines)."""

    def __init__(self, *args, **env):
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *map(str, args)],
            env=child_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self.process.pid
        self.out, self.err = [], []
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.process.stdout, self.out),
                                               (self.process.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line)

    def said(self, words):
        return any(words in line for line in self.err)

    def finish(self, timeout):
        """(exit code, stdout, stderr); killed, and an AssertionError, after `timeout`."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"still running after {timeout}s:\n"
                                 f"{''.join(self.err)[-3000:]}") from None
        for reader in self._readers:
            reader.join(timeout=10)
        return code, "".join(self.out), "".join(self.err)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


# == 2. Evaluators with their own state_dir have their own exports =========================

@pytest.mark.full_lines
def test_export_being_written_by_another_process_survives_a_clean_up(tmp_path):
    base = tmp_path / "export" / "latest"
    writer = Child("slow_export", base, 8, 3)
    try:
        wait_until(lambda: any(n.startswith(".tmp-8-") for n in os.listdir(base))
                   if base.exists() else False, timeout=30, what="the writer's temp dir")
        here = ExportFileManager(str(base))
        assert here.write(here.path_for(16), os.makedirs)  # cleans up first
        code, _, err = writer.finish(30)
    finally:
        writer.kill()
    assert code == 0, err[-3000:]
    assert sorted(os.listdir(base)) == ["16", "8"]
    assert (base / "8" / "part-2").read_text() == "written"  # whole
    assert_no_survivors({writer.pid})


# == 3. A second evaluator on the same state directory is refused =========================

@pytest.mark.full_lines  # runs 2 and 3: the lease is trainexec's file, not Keras'
@pytest.mark.keras
def test_second_evaluator_is_refused_and_a_dead_ones_lease_is_taken_over(tmp_path):
    checkpoints = tmp_path / "ckpts"
    save, finished = keras_trainer(checkpoints)
    save(0.5)
    lease = checkpoints / "evaluator_lease.json"
    first = Child("sidecar", checkpoints)
    pids = {first.pid}
    try:
        wait_until(lambda: lease.exists() and (checkpoints / "sidecar_metrics.jsonl").exists(),
                   timeout=60, what="the first evaluator to take its lease and evaluate")
        started = time.monotonic()
        second = Child("sidecar", checkpoints)
        pids.add(second.pid)
        code, _, err = second.finish(60)
        assert code != 0 and time.monotonic() - started < 30
        refusal = err.strip().splitlines()[-1]
        assert "EvaluatorAlreadyRunning: Another evaluator is already running" in refusal
        assert f"pid {first.pid} on host " in refusal and "started 20" in refusal
        assert first.process.poll() is None  # the first one goes on
        # Killed, it leaves its lease; the next evaluator takes it over at once.
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        save(0.9)
        finished()
        third = Child("sidecar", checkpoints)
        pids.add(third.pid)
        code, out, err = third.finish(60)
        assert code == 0, err[-3000:]
        assert f"pid {first.pid} on host" in err and "is no longer running" in err
    finally:
        first.kill()
    metrics = json.loads(out.split("metrics ", 1)[1])
    assert metrics["global_step"] == 16
    assert metrics["loss"] == pytest.approx(loss_at(0.9), rel=1e-5)
    assert os.listdir(checkpoints / "export" / "final") == ["16"]
    assert not lease.exists()  # released on exit
    assert_no_survivors(pids)


# == 5. The ps stops once the completion record shows training is over ====================

def start_ps(model_dir, drain_secs):
    import portpicker

    ports = [portpicker.pick_unused_port() for _ in range(3)]
    tf_config = json.dumps({"cluster": ps_cluster(ports), "task": {"type": "ps", "index": 0}})
    return Child("ps", model_dir, drain_secs, TF_CONFIG=tf_config)


@pytest.mark.full_lines
def test_ps_restarted_after_the_run_finished_exits_promptly(tmp_path):
    model_dir = tmp_path / "model"
    finished_run(model_dir)  # the chief saved step 20 = max_steps and recorded it ...
    for task in ("chief:0", "worker:0"):
        record_task_finished(str(model_dir), task)  # ... all before this ps started
    started = time.monotonic()
    ps = start_ps(model_dir, drain_secs=60)
    code, _, err = ps.finish(60)
    assert code == 0, err[-3000:]
    assert time.monotonic() - started < 30  # start-up, then its first look
    assert "have reached max_steps 20" in err and "ps:0 stops serving" in err
    assert_no_survivors({ps.pid})


@pytest.mark.full_lines
def test_ps_stops_after_the_chief_records_completion_though_a_worker_crashed(tmp_path):
    # With the ps's own drain: a worker killed just after the job succeeded is not
    # restarted (a finished TFJob restarts no pod), and the ps must still end within
    # the bound every pod keeps after the chief (chaos regression estimator-48).
    from trainexec.estimator_trainer.hooks import DRAIN_SECS
    from trainexec.testing.chaos.invariants import BOUND_SECS

    model_dir = tmp_path / "model"
    ps = start_ps(model_dir, drain_secs="default")
    try:  # it says what it waits for when it starts
        wait_until(lambda: ps.said("serving: waiting for chief:0, worker:0"), timeout=60,
                   what="the ps to start")
        finished_run(model_dir)  # the chief finishes; worker:0 crashed and never will
        record_task_finished(str(model_dir), "chief:0")
        recorded = time.monotonic()
        code, _, err = ps.finish(60)
    finally:
        ps.kill()
    assert code == 0, err[-3000:]
    assert time.monotonic() - recorded < BOUND_SECS  # the drain, a few polls, the exit
    assert f"worker:0 did not record finishing within {DRAIN_SECS:.0f}s" in err
    assert_no_survivors({ps.pid})


# -- child programs ------------------------------------------------------------------------

def _child_sidecar(checkpoint_dir):
    from sidecar_programs import toy
    from trainexec.keras.evaluate.sidecar import SidecarEvaluator

    metrics = SidecarEvaluator(toy.build_model(), toy.dataset(), checkpoint_dir,
                               poll_secs=0.1, idle_timeout_secs=60, verbose=0,
                               exporters=[FinalExporter()]).start()
    print("metrics " + json.dumps(metrics), flush=True)


def _child_slow_export(base, number, secs):
    def save(tmp):
        os.makedirs(tmp)
        with open(os.path.join(tmp, "part-1"), "w") as f:
            f.write("written")
        time.sleep(float(secs))
        with open(os.path.join(tmp, "part-2"), "w") as f:
            f.write("written")
    files = ExportFileManager(base)
    assert files.write(files.path_for(int(number)), save)


def _child_ps(model_dir, drain_secs):
    from trainexec.estimator_trainer import hooks

    if drain_secs != "default":
        hooks.DRAIN_SECS = float(drain_secs)
    TrainingExecutor(StubEstimator(model_dir, "ps"), TrainSpec(input_fn, max_steps=20),
                     EvalSpec(input_fn), poll_secs=0.1).run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    role, *arguments = sys.argv[1:]
    {"sidecar": _child_sidecar, "slow_export": _child_slow_export,
     "ps": _child_ps}[role](*arguments)
