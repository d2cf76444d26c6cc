"""A SageMaker-shaped ParameterServerStrategy cluster on this machine: the master
coordinates as tf.distribute's chief (trainexec/keras/strategy.py's `distribute_cluster`),
real servers in child processes."""

import json
import subprocess
import sys
import textwrap

import pytest

from pss_programs import COUNTING

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

_MASTER_COORDINATES = COUNTING + textwrap.dedent("""
    import json, sys
    from trainexec.cluster.config import ClusterConfig
    from trainexec.keras.strategy import COORDINATE, make_strategy, plan_for
    from trainexec.cluster.server import start_standard_server

    master = ClusterConfig.from_json(sys.argv[1])
    # The worker and ps servers as trainexec starts them: their spec keeps "master".
    servers = [start_standard_server(master.for_task(job, index))
               for job, index in (("worker", 0), ("ps", 0), ("ps", 1))]
    jobs = sorted(job.name for job in servers[0].server_def.cluster.job)
    plan = plan_for(master, keras_3=False, gpus=0)
    assert plan.action == COORDINATE, plan
    total, run = counting(make_strategy(plan))
    run(5)
    print(json.dumps({"total": float(total.numpy()), "device": total.device,
                      "server_jobs": jobs}), flush=True)
""")


def test_a_sagemaker_master_coordinates_parameter_server_training(tmp_path):
    """SageMaker's shape on this machine: the master's ParameterServerStrategy (as chief)
    dispatches steps to a worker whose server knows the master as "master"."""
    from trainexec.launch.spec import pick_ports

    ports = pick_ports(4)
    spec = {"master": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
            "ps": [f"127.0.0.1:{ports[2]}", f"127.0.0.1:{ports[3]}"]}
    text = json.dumps({"cluster": spec, "task": {"type": "master", "index": 0},
                       "environment": "cloud"})
    done = subprocess.run([sys.executable, "-c", _MASTER_COORDINATES, text],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["total"] == 5.0
    assert result["device"].startswith("/job:ps/")
    assert result["server_jobs"] == ["master", "ps", "worker"]
