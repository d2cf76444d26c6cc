"""TF_CONFIG texts for tests: a cluster with every training job, the shapes Kubeflow
TFJobs write (empty job lists, a master beside an evaluator, two evaluators), and a
chief, worker and ps on local ports (`ps_cluster`)."""

import json

__all__ = ["CLUSTER", "H", "TFJOB_MASTER_EVALUATOR", "TFJOB_NO_WORKERS",
           "TFJOB_TWO_EVALUATORS", "ps_cluster", "tf_config"]

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}


def tf_config(task_type="worker", index=0, cluster=CLUSTER, **extra):
    data = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    data.update(extra)
    return json.dumps(data)


# TF_CONFIGs real cluster managers write, which TensorFlow trains with: every row
# names a task that runs, and what it knows about its cluster.
H = [f"10.0.0.{i}:2222" for i in range(6)]
TFJOB_NO_WORKERS = {"chief": [H[0]], "worker": [], "ps": [H[1]], "evaluator": []}
TFJOB_MASTER_EVALUATOR = {"master": [H[0]], "worker": [H[1]], "ps": [H[2]],
                          "evaluator": [H[3]]}
TFJOB_TWO_EVALUATORS = {"chief": [H[0]], "worker": [H[1]], "evaluator": [H[3], H[4]]}


def ps_cluster(ports):
    """A chief, a worker and a ps on 127.0.0.1 at `ports` (three of them)."""
    return {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
            "ps": [f"127.0.0.1:{ports[2]}"]}
