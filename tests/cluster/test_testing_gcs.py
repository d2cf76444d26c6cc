"""trainexec/testing/gcs/: TensorFlow's own gs:// file system and google-cloud-storage
against the GCS emulator, as on a cluster whose model_dir is on GCS.

The emulator and its clients run in a network namespace of this test's own (named
te<pid>g, with a test bed's prefix, so that `trainexec.testing.netns.remove_leftovers`
removes a killed run's; removed afterwards, also on failure), whose /etc/hosts maps
www.googleapis.com and storage.googleapis.com to the emulator on 127.0.0.1:443. The
client programs are tests/gcs_programs/: one TensorFlow process runs every gfile,
checkpoint and SavedModel scenario (TensorFlow loads once), each test checks one.
Run it under each TensorFlow line's Python (.venv: 2.21, .venv-tf2.15: 2.15). Root
only; skipped, saying why, without root, `ip` or the emulator's packages.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainexec.testing import gcs
from trainexec.testing.gcs import GcsEmulator
from trainexec.testing.netns import PREFIX as BED_PREFIX
from trainexec.testing.netns import remove_leftovers

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

PROGRAMS = Path(__file__).resolve().parent.parent / "gcs_programs"
NETNS_ETC = "/etc/netns"


def _why_not() -> str | None:
    reason = gcs.unavailable()
    if reason:
        return reason
    if os.geteuid() != 0:
        return "needs root (a network namespace and port 443)"
    if shutil.which("ip") is None:
        return "needs the ip command (iproute2)"
    return None


WHY_NOT = _why_not()
if WHY_NOT:
    pytest.skip(WHY_NOT, allow_module_level=True)


def _has_storage_client() -> bool:
    with contextlib.suppress(ImportError):
        import google.cloud.storage
        return google.cloud.storage is not None
    return False


needs_storage_client = pytest.mark.skipif(
    not _has_storage_client(),
    reason="needs google-cloud-storage (pip install 'trainexec[gcs]')")


def _remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    shutil.rmtree(os.path.join(NETNS_ETC, name), ignore_errors=True)


@pytest.fixture(scope="module")
def netns():
    remove_leftovers()  # a killed run's (te<pid>g of a dead pid), as a test bed's
    name = f"{BED_PREFIX}{os.getpid()}g"
    _remove_netns(name)
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True,
                       capture_output=True)
        os.makedirs(os.path.join(NETNS_ETC, name))
        yield name
    finally:
        _remove_netns(name)


@pytest.fixture(scope="module")
def emulator(netns, tmp_path_factory):
    root = tmp_path_factory.mktemp("gcs")
    emulator = GcsEmulator(str(root), run=lambda argv, **kw: subprocess.Popen(
        ["ip", "netns", "exec", netns, *argv], start_new_session=True, **kw))
    with emulator:
        # `ip netns exec` binds this file over /etc/hosts for whatever it runs.
        with open(os.path.join(NETNS_ETC, netns, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n" + emulator.hosts_lines())
        yield emulator
    assert not os.path.exists(emulator.ca_path), "stop() left its files"


def _client(netns: str, emulator: GcsEmulator, argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, **emulator.client_env(), "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, *argv],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _result(proc: subprocess.Popen, emulator: GcsEmulator, timeout: float = 120) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (
        f"client exit {proc.returncode}\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}\n"
        f"emulator log:\n{emulator.log_tail()}")
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def tf_report(netns, emulator):
    proc = _client(netns, emulator, [str(PROGRAMS / "tf_client.py"), emulator.url("tf")])
    return _result(proc, emulator, timeout=300)


@pytest.mark.parametrize("scenario", [
    "files",             # write/read/stat/exists/listdir/glob/overwrite/append/delete
    "dirs",              # makedirs, rename of a file and of a directory, rmtree
    "checkpoint",        # CheckpointManager/Checkpoint save, latest_checkpoint, restore
    "saved_model",       # tf.saved_model.save to gs:// and load
    "mtime_is_updated",  # stat().mtime_nsec is the emulator's `updated`
])
def test_tensorflow_on_gs(tf_report, scenario):
    assert tf_report.get(scenario) == "ok", (
        f"TensorFlow {tf_report.get('tensorflow')}, {scenario}:\n{tf_report.get(scenario)}")


def test_client_settings(emulator):
    assert emulator.hosts_lines() == ("127.0.0.1 www.googleapis.com "
                                      "storage.googleapis.com\n")
    assert emulator.url("model/ckpt") == "gs://trainexec-test/model/ckpt"
    env = emulator.client_env()
    assert env["CURL_CA_BUNDLE"] == env["REQUESTS_CA_BUNDLE"] == emulator.ca_path
    assert os.path.isfile(emulator.ca_path)
    assert env["STORAGE_EMULATOR_HOST"] == "https://storage.googleapis.com"
    assert env["NO_GCE_CHECK"] == "true" and env["GOOGLE_AUTH_TOKEN_FOR_TESTING"]


@needs_storage_client
@pytest.mark.parametrize("round_", [1, 2])
def test_create_if_absent_has_one_winner(netns, emulator, round_):
    name = f"race/{round_}/lease"
    start_at = time.time() + 2.0  # both have imported their client by then
    procs = [_client(netns, emulator, [str(PROGRAMS / "lease_client.py"), "create",
                                       emulator.bucket, name, f"creator-{i}", str(start_at)])
             for i in range(2)]
    results = [_result(proc, emulator) for proc in procs]
    winners = [r for r in results if r["won"]]
    losers = [r for r in results if not r["won"]]
    assert len(winners) == 1 and len(losers) == 1, results
    assert losers[0]["code"] == 412 and losers[0]["error"] == "PreconditionFailed", results
    assert winners[0]["generation"] > 0


@needs_storage_client
def test_generation_preconditions(netns, emulator):
    proc = _client(netns, emulator, [str(PROGRAMS / "lease_client.py"), "preconditions",
                                     emulator.bucket, "preconditions"])
    assert _result(proc, emulator)["preconditions"] == "ok"


def test_a_rewritten_state_file_and_record_read_whole_through_the_stat_cache(
        netns, emulator, tmp_path):
    # tensorflow#15530 on the evaluator: another process replaces `checkpoint` with a
    # longer version within GCS_STAT_CACHE_MAX_AGE (5 s) of this process's last look;
    # TensorFlow reads the new object at the cached, older length. The completion
    # record's second version is one byte shorter ("max_steps": 300, was null): every
    # read of it fails ("File contents are inconsistent") until the cached size expires.
    gs_dir = emulator.url("stat-cache")
    program = str(PROGRAMS / "stat_cache.py")
    _result_code(_client(netns, emulator, [program, "write", gs_dir, "1"]), emulator)
    # The writer loads TensorFlow first and rewrites as soon as the reader has read, well
    # inside the reader's 5 s cache whatever the machine's load.
    writer = _client(netns, emulator, [program, "write", gs_dir, "2", str(tmp_path)])
    reader = _client(netns, emulator, [program, "read", gs_dir, str(tmp_path)])
    _result_code(writer, emulator, timeout=240)
    seen = _result(reader, emulator, timeout=240)
    # What TensorFlow itself reads: cut at the old length (so this test reproduces the
    # hazard; if a TensorFlow release stops cutting, this says so).
    assert len(seen["gfile_read"]) == len(seen["before"]["state"]), seen
    assert seen["tf_kept"] in (None, 1), seen  # unparsable, or 1 of the 3 kept
    # What trainexec reads: the whole new state and record.
    assert seen["kept"] == 3, seen
    assert seen["latest"] == f"{gs_dir}/ckpt-300", seen
    assert (seen["record_step"], seen["record_max_steps"]) == (300, 300), seen
    listed = emulator.list_objects("stat-cache/")
    assert {"stat-cache/checkpoint", "stat-cache/ckpt-300.index",
            "stat-cache/trainexec/training_complete.json"} <= set(listed), listed
    assert listed["stat-cache/checkpoint"] == len(emulator.read_object("stat-cache/checkpoint"))


def _result_code(proc: subprocess.Popen, emulator: GcsEmulator, timeout: float = 120) -> None:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, (f"client exit {proc.returncode}\n{out[-2000:]}\n"
                                  f"{err[-3000:]}\nemulator log:\n{emulator.log_tail()}")


def _next_line(proc: subprocess.Popen, secs: float = 120) -> str:
    """The client's next line of output; fails (killing it) when none comes in `secs`
    (a client stuck before saying "ready" must not hold the suite)."""
    import threading

    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(secs)
    if not lines:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the client said nothing in {secs:.0f}s\nstderr:\n{err[-3000:]}")
    return lines[0].strip()


def _timed(netns, emulator, op, url, during=None, timeout=300) -> dict:
    """`op` on `url` by TensorFlow's client; `during()` runs once the client is ready,
    just before the operation starts (it injects a fault)."""
    argv = [str(PROGRAMS / "faults_client.py"), op, url] + (["--wait"] if during else [])
    env = {**os.environ, **emulator.client_env(), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, *argv], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if during is not None:
        assert _next_line(proc) == "ready", proc.communicate()
        during()
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return _result(proc, emulator, timeout=timeout)


@pytest.mark.full_lines
@pytest.mark.parametrize("plan, op, at_least", [
    # TensorFlow's client retries a 503 and a reset connection, and waits out a slow
    # answer: each operation succeeds once the fault is over.
    pytest.param(dict(mode="error", status=503, kinds=("upload",), secs=4), "write", 3.0,
                 id="503-uploads", marks=pytest.mark.full_suite(covered_by=(
                     "test_chaos.py[pss-gs-storage]: 503s on every request for 10 s, "
                     "the job succeeds with its final step and one export"))),
    pytest.param(dict(mode="error", status=429, kinds=("read", "metadata"), secs=4),
                 "read", 3.0, id="429-reads"),
    pytest.param(dict(mode="reset", kinds=("read", "metadata"), secs=3), "read", 2.0,
                 id="reset-reads"),
    pytest.param(dict(mode="delay", delay_secs=2.0, kinds=("metadata",), secs=30), "stat",
                 2.0, id="slow-metadata", marks=pytest.mark.full_suite(covered_by=(
                     "test_chaos.py[pss-gs-storage] and [estimator-gs-storage]: 1 s "
                     "answers for 4-5 s, the job succeeds with its final step"))),
])
def test_tensorflows_client_rides_out_a_short_fault(netns, emulator, plan, op, at_least):
    from trainexec.testing.gcs.faults import FaultPlan

    url = emulator.url(f"faults/{plan['mode']}-{op}")
    if op != "write":
        _timed(netns, emulator, "write", url)
    try:
        seen = _timed(netns, emulator, op, url,
                      during=lambda: emulator.inject(FaultPlan(**plan)))
    finally:
        emulator.clear_faults()
    assert seen["error"] is None, seen
    assert seen["secs"] >= at_least, seen  # it did meet the fault


@pytest.mark.full_lines
def test_a_paused_emulator_is_an_outage_the_client_waits_out(netns, emulator):
    import threading

    url = emulator.url("faults/outage")
    _timed(netns, emulator, "write", url)

    def outage():
        emulator.pause()
        threading.Timer(8.0, emulator.resume).start()

    try:
        seen = _timed(netns, emulator, "read", url, during=outage)
    finally:
        emulator.resume()
    assert seen["error"] is None and seen["secs"] >= 6.0, seen


@pytest.mark.parametrize("resume_after", [0.05, 0.4])
def test_a_read_in_flight_when_the_program_ends_does_not_abort_it(netns, emulator,
                                                                 resume_after):
    # A daemon thread's gs:// read that returns once the interpreter is finalizing aborts
    # the process ("exception not rethrown", 134: seen at a trainexec.estimator worker's
    # end in 429 bursts) unless the end waits for it (trainexec.contract.tensorflow_calls).
    env = {**os.environ, **emulator.client_env(), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable,
                             str(PROGRAMS / "exit_client.py"), emulator.url("exit/probe")],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert _next_line(proc) == "ready", proc.communicate()
        emulator.pause()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert _next_line(proc) == "program over", proc.communicate()
        time.sleep(resume_after)
    finally:
        emulator.resume()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "not rethrown" not in err, (proc.returncode, err[-3000:])


def test_a_resumable_upload_holding_no_byte_says_so_as_gcs_does(netns, emulator):
    # GCS's 308 for an upload holding no byte has no Range header; TensorFlow's client
    # reads "bytes=0-0" as one byte held and resends from byte 1 (the emulator's own
    # answer, which turned a 429 burst during a save into a 400 and a restart).
    answers = _result(_client(netns, emulator, [str(PROGRAMS / "upload_status_client.py"),
                                                emulator.bucket, "status/upload"]), emulator)
    assert answers == {"before_a_byte": [308, None], "chunk": [308, "bytes=0-39"],
                       "after_40": [308, "bytes=0-39"], "last": [200, None]}
    assert emulator.read_object("status/upload") == b"x" * 40 + b"y" * 60
