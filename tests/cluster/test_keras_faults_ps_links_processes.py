"""trainexec/keras/faults/ps_links.py against real ParameterServerStrategy processes
(tests/keras_programs/ps_links.py): a worker and a ps serve; a chief checks that the
worker reaches the ps, kills the ps and sees it retried and given up on in time; the
ps is restarted on its port and a new chief finds the worker reaching it, as a chief
restarted with its ps does while the worker that stayed up reconnects."""

import json
import os
import subprocess
import sys

import portpicker
import pytest

from processes import ROOT, child_env

pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.keras]

PROGRAM = os.path.join(ROOT, "tests", "keras_programs", "ps_links.py")
WORKER = "/job:worker/replica:0/task:0"


def _serve(spec, job):
    server = subprocess.Popen([sys.executable, PROGRAM, "serve", json.dumps(spec), job],
                              env=child_env(), stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "serving"
    return server


def _chief(spec, *args):
    done = subprocess.run([sys.executable, PROGRAM, "chief", json.dumps(spec),
                           *map(str, args)], env=child_env(), timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.full_lines
def test_the_worker_reaches_the_ps_gives_up_on_a_killed_one_and_reaches_its_restart():
    spec = {job: [f"localhost:{portpicker.pick_unused_port()}"]
            for job in ("chief", "worker", "ps")}
    servers = [_serve(spec, "worker"), _serve(spec, "ps")]
    try:
        report, stderr = _chief(spec, servers[1].pid)
        assert all(device.startswith("/job:ps/") for device in report["devices"]), report
        assert report["workers"] == [WORKER]
        up, gone = report["up"][WORKER], report["gone"][WORKER]
        assert up["reached"] is True and up["attempts"] == 1, report
        # Gone for good: each read fails as Unavailable from /job:ps, retried every
        # 0.2 s until the 2 s limit.
        assert gone["reached"] is False and gone["attempts"] >= 3, report
        assert gone["why"].startswith("UnavailableError"), report
        assert 0.5 <= gone["secs"] < 2.5, report
        assert "did not reach every parameter server within 2s" in stderr
        servers.append(_serve(spec, "ps"))  # the ps restarted on its port
        report, _ = _chief(spec)
        again = report["up"][WORKER]
        assert again["reached"] is True and again["secs"] < 3, report
        print("the worker reached the restarted ps after", again)
    finally:
        for server in servers:
            server.kill()
            server.wait()
