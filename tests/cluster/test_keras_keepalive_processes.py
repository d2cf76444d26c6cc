"""A frozen ParameterServerStrategy worker stalls training only for the keepalive's bound
(trainexec/cluster/keepalive.py): real servers and a chief in child processes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pss_programs import COUNTING
from trainexec.cluster.keepalive import OPTIONS_VAR, SETTING_VAR

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

_SERVERS = textwrap.dedent("""
    import sys
    from trainexec.cluster.config import ClusterConfig
    from trainexec.cluster.server import start_standard_server

    cluster = ClusterConfig.from_json(sys.argv[1])
    servers = [start_standard_server(cluster.for_task(job, int(index)))
               for job, index in (task.split(":") for task in sys.argv[2:])]
    print("serving", flush=True)
    sys.stdin.read()  # until the test closes it
""")

_CHIEF = COUNTING + textwrap.dedent("""
    import json, os, sys, time
    from trainexec.cluster.config import ClusterConfig
    from trainexec.keras.strategy import make_strategy, plan_for

    chief = ClusterConfig.from_json(sys.argv[1])
    total, run = counting(make_strategy(plan_for(chief, keras_3=False, gpus=0)))
    run(20)
    print("ready", flush=True)
    sys.stdin.readline()  # the test froze worker:1
    start = time.monotonic()
    run(100)
    print(json.dumps({"join_secs": time.monotonic() - start,
                      "total": float(total.numpy())}), flush=True)
    os._exit(0)  # the coordinator's threads still wait for worker:1
""")


def _tf_2_15() -> bool:
    import tensorflow as tf

    return tf.__version__.startswith("2.15")


@pytest.mark.skipif(_tf_2_15(), reason=(
    "TensorFlow 2.15's gRPC ignores grpc.http2.ping_timeout_ms: a ping in flight when the "
    "worker froze holds the keepalive back, so the bound is not kept there (measured "
    "302 s once); the README says so"))
def test_a_frozen_worker_stalls_parameter_server_training_for_a_bounded_time(tmp_path):
    """worker:1 stops answering (SIGSTOP: its kernel still acknowledges TCP, as
    a host whose network hangs does not): the chief's steps go on on worker:0
    within 2 * keepalive + a moment, instead of waiting for worker:1."""
    from trainexec.launch.spec import pick_ports

    ports = pick_ports(4)
    spec = {"chief": [f"127.0.0.1:{ports[0]}"],
            "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"],
            "ps": [f"127.0.0.1:{ports[3]}"]}

    def tf_config(job):
        return json.dumps({"cluster": spec, "task": {"type": job, "index": 0}})

    env = {**os.environ, SETTING_VAR: "2"}
    env.pop(OPTIONS_VAR, None)
    popen = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                 text=True, env=env)
    servers = subprocess.Popen([sys.executable, "-c", _SERVERS, tf_config("worker"),
                                "worker:0", "ps:0"], **popen)
    frozen = subprocess.Popen([sys.executable, "-c", _SERVERS, tf_config("worker"),
                               "worker:1"], **popen)
    chief = subprocess.Popen([sys.executable, "-c", _CHIEF, tf_config("chief")], **popen)
    try:
        assert servers.stdout.readline().strip() == "serving"
        assert frozen.stdout.readline().strip() == "serving"
        assert chief.stdout.readline().strip() == "ready"
        os.kill(frozen.pid, signal.SIGSTOP)
        chief.stdin.write("go\n")
        chief.stdin.flush()
        result = json.loads(chief.stdout.readline())
        assert chief.wait(timeout=30) == 0
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
        for proc in (chief, servers, frozen):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
    # 100 steps take well under a second; the frozen worker's costs at most 3 * 2 s
    # (measured 2.2 s; 60 s with no ping timeout, for as long as it is frozen without)
    assert result["join_secs"] < 3 * 2 + 4, result
    assert 120 <= result["total"] <= 121, result  # a step run twice counts twice
