"""TF_CONFIG texts for tests: a cluster with every training job, and the shapes
real producers write: Kubeflow TFJobs (empty job lists, a master beside an evaluator, two
evaluators, service names with "environment": "cloud", the enableDynamicWorker sparse form),
SageMaker's parameter-server mode (a master) and workers-only clusters (Ray, SageMaker
MultiWorkerMirroredStrategy)."""

import json

__all__ = ["CLUSTER", "H", "RAY_WORKERS", "SAGEMAKER_MWMS", "SAGEMAKER_PS", "TFJOB",
           "TFJOB_DYNAMIC_PS", "TFJOB_MASTER_EVALUATOR", "TFJOB_NO_WORKERS",
           "TFJOB_TWO_EVALUATORS", "keras_plan", "ps_cluster", "tf_config", "tfjob_address",
           "tfjob_dynamic_view"]

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


# Kubeflow training operator v1.9 (pkg/controller.v1/tensorflow/tensorflow.go): one headless
# service per replica, "<tfjob>-<type>-<index>.<namespace>.svc:<port>", the evaluator inside
# cluster, and "environment": "cloud" (pass environment="cloud" to tf_config).
def tfjob_address(task_type, index, name="demo", namespace="default", port=2222):
    return f"{name}-{task_type}-{index}.{namespace}.svc:{port}"


TFJOB = {"chief": [tfjob_address("chief", 0)],
         "worker": [tfjob_address("worker", i) for i in range(2)],
         "ps": [tfjob_address("ps", 0)],
         "evaluator": [tfjob_address("evaluator", 0)]}

# The same operator with enableDynamicWorker: true writes a sparse view per task and no
# "environment": a worker sees itself (keyed by its index) and every ps, a ps only itself
# (a one-address list, whatever its index), every other task nothing.
TFJOB_DYNAMIC_PS = [tfjob_address("ps", i) for i in range(2)]


def tfjob_dynamic_view(task_type, index):
    """The TF_CONFIG text a TFJob with enableDynamicWorker gives task_type:index."""
    if task_type == "worker":
        cluster = {"worker": {str(index): tfjob_address("worker", index)},
                   "ps": TFJOB_DYNAMIC_PS}
    elif task_type == "ps":
        cluster = {"worker": {}, "ps": [tfjob_address("ps", index)]}
    else:
        cluster = {"worker": {}, "ps": []}
    return tf_config(task_type, index, cluster)


# SageMaker's parameter-server mode (sagemaker-tensorflow-training): the first host is the
# master (ParameterServerStrategy's coordinator), every host also runs a ps.
SAGEMAKER_PS = {"master": ["algo-1:2222"], "ps": ["algo-1:2223", "algo-2:2223"],
                "worker": ["algo-2:2222"]}
# Workers only: SageMaker's MultiWorkerMirroredStrategy mode, Ray Train's TensorflowTrainer.
SAGEMAKER_MWMS = {"worker": ["algo-1:2222", "algo-2:2222"]}
RAY_WORKERS = {"worker": ["10.0.0.7:41234", "10.0.0.8:39411"]}


def ps_cluster(ports):
    """A chief, a worker and a ps on 127.0.0.1 at `ports` (three of them)."""
    return {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
            "ps": [f"127.0.0.1:{ports[2]}"]}


def keras_plan(cluster, task):
    """The Keras 2 StrategyPlan (no GPUs) of `task` ("worker:1") in `cluster`."""
    from trainexec.cluster.config import ClusterConfig
    from trainexec.keras.strategy import plan_for

    job, index = task.split(":")
    return plan_for(ClusterConfig.from_dict({"cluster": cluster,
                                             "task": {"type": job, "index": int(index)}}),
                    keras_3=False, gpus=0)
