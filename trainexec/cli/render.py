"""`trainexec render`: print a job as a Kubeflow TFJob (with a NetworkPolicy), a Vertex AI
CustomJob or a Slurm batch script."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trainexec.cli.role_flags import add_role_flags
from trainexec.errors import ConfigError
from trainexec.jobs.naming import DEFAULT_PORT
from trainexec.jobs.policies import LOCAL_BACKOFF_LIMIT
from trainexec.jobs.render import (SBATCH, TFJOB, VERTEX, pod_options, render_shape,
                                   tfjob_yaml, vertex_json, vertex_options)
from trainexec.jobs.sbatch import DEFAULT_TRAINEXEC, SbatchOptions, sbatch_script
from trainexec.jobs.shape import EXIT_CODE

__all__ = ["add_render_parser"]


def add_render_parser(commands: Any) -> argparse.ArgumentParser:
    """Adds `trainexec render tfjob|vertex|sbatch` to the `trainexec` subcommands."""
    parser = commands.add_parser(
        "render", help="print a job as a Kubeflow TFJob or a Vertex AI CustomJob",
        description="Print the job that `trainexec launch` runs here, for a cluster: a "
        "Kubeflow TFJob as YAML (tfjob), a Vertex AI CustomJob as JSON (vertex) or a Slurm "
        "batch script (sbatch). The role "
        "flags mean what they mean for `trainexec launch`. Bad input exits 2 naming it.")
    targets = parser.add_subparsers(dest="target", metavar="TARGET")
    targets.required = True
    roles = argparse.ArgumentParser(add_help=False)
    roles.add_argument("name", metavar="NAME", help="the job's name")
    add_role_flags(roles, unit="replicas", leader="worker 0",
                   evaluator_help="add an evaluator replica")
    roles.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                       help="an environment variable of every replica; repeat for several")
    roles.set_defaults(run=_run_render, command=[])
    image = argparse.ArgumentParser(add_help=False)
    image.add_argument("--image", required=True, help="the container image every task runs")
    tfjob = _add_target(
        targets, TFJOB, [roles, image], "--image IMAGE",
        help="a Kubeflow TFJob (kubeflow.org/v1) as YAML",
        description="Print a kubeflow.org/v1 TFJob: one replica spec per role (Chief, "
        "Worker, PS, Evaluator), each running COMMAND in a container named tensorflow with "
        "a port named tfjob-port; restartPolicy ExitCode by default (trainexec's exit "
        "codes: 128 and up restart the pod, 1 and 2 fail the job); cleanPodPolicy and "
        "successPolicy chosen for the job's shape and backoffLimit from --max-restarts, the "
        "reasons in comments; volumes, GPUs, a service account and annotations if asked; "
        "and a "
        "NetworkPolicy admitting the TF port only from the job's own pods. Try it here "
        "first with `trainexec launch --from FILE.yaml`, then `kubectl apply -f FILE.yaml`.")
    tfjob.add_argument("--namespace", default=None, metavar="NS",
                       help="the namespace (default: kubectl's current one)")
    tfjob.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="P",
                       help=f"the TensorFlow port, tfjob-port (default {DEFAULT_PORT})")
    tfjob.add_argument("--restart-policy", default=EXIT_CODE, choices=(EXIT_CODE, "OnFailure"),
                       help="ExitCode (default): restart the exits trainexec calls retryable; "
                       "OnFailure: any failure, even one a restart repeats")
    tfjob.add_argument("--network-policy", action=argparse.BooleanOptionalAction, default=True,
                       help="add a NetworkPolicy admitting ingress to the job's pods on the "
                       "TF port only from its own pods (default: on): TensorFlow's gRPC "
                       "servers have no authentication")
    tfjob.add_argument("--max-restarts", type=int, default=LOCAL_BACKOFF_LIMIT, metavar="K",
                       help="runPolicy.backoffLimit: the job fails once its pods have failed "
                       "or restarted about this often; `trainexec launch --from` reads it as "
                       f"its --max-restarts (default {LOCAL_BACKOFF_LIMIT}, Kubernetes Job's "
                       "default)")
    tfjob.add_argument("--volume", action="append", default=[], metavar="CLAIM:PATH",
                       help="mount the PersistentVolumeClaim CLAIM at PATH in every replica, "
                       "e.g. the shared file system holding model_dir (ReadWriteMany when "
                       "pods run on several nodes); repeat for several")
    tfjob.add_argument("--gpus", type=int, default=0, metavar="N",
                       help="GPUs of each chief and worker replica, as resources.limits "
                       "nvidia.com/gpu (default 0; ps and evaluator get none)")
    tfjob.add_argument("--service-account", default=None, metavar="NAME",
                       help="the pods' serviceAccountName (default: the namespace's default)")
    tfjob.add_argument("--annotation", action="append", default=[], metavar="KEY=VALUE",
                       help="an annotation of every pod, e.g. sidecar.istio.io/inject=false "
                       "(Kubeflow's user namespaces); repeat for several")
    vertex = _add_target(
        targets, VERTEX, [roles, image], "--image IMAGE --machine-type TYPE",
        help="a Vertex AI CustomJob as JSON",
        description="Print a Vertex AI CustomJob: displayName and jobSpec.workerPoolSpecs in "
        "Vertex's order (chief, workers, parameter servers, evaluator; an empty pool {} for "
        "a role left out), each with replicaCount, machineSpec.machineType and "
        "containerSpec (imageUri, command, args, env), and accelerators, NFS mounts, a "
        "service account and a network if asked. Vertex AI writes each replica's "
        "TF_CONFIG from the pools.")
    vertex.add_argument("--machine-type", required=True, metavar="TYPE",
                        help="the machine type of every pool, e.g. n1-standard-4")
    vertex.add_argument("--accelerator", default=None, metavar="TYPE:COUNT",
                        help="accelerators of each chief and worker replica, as "
                        "machineSpec.acceleratorType and acceleratorCount, e.g. "
                        "NVIDIA_TESLA_T4:1 (ps and evaluator pools get none)")
    vertex.add_argument("--service-account", default=None, metavar="EMAIL",
                        help="jobSpec.serviceAccount: the account the job runs as (default: "
                        "Vertex AI's Custom Code Service Agent)")
    vertex.add_argument("--nfs", action="append", default=[], metavar="SERVER:PATH:NAME",
                        help="mount the NFS share SERVER:PATH at /mnt/nfs/NAME in every pool "
                        "(nfsMounts), e.g. for model_dir; Vertex AI reaches it through a VPC "
                        "(--network); repeat for several")
    vertex.add_argument("--network", default=None, metavar="NETWORK",
                        help="jobSpec.network: the peered VPC network, e.g. "
                        "projects/12345/global/networks/default")
    sbatch = _add_target(
        targets, SBATCH, [roles], "--nodes N --model-dir DIR",
        help="a Slurm batch script",
        description="Print a Slurm batch script that runs COMMAND as every task of one srun "
        "step (block distribution), with TRAINEXEC_SLURM_ROLES set so each task builds its "
        "cluster from the step, through `trainexec slurm-exec` (a TF_CONFIG for COMMAND, "
        "and each task's verdict recorded under DIR/trainexec/slurm/). After the step, "
        "`trainexec slurm-verdict` fails the job on a permanent exit, requeues it on a "
        "retryable one (at most --max-restarts times) and exits with the contract's code. "
        "--requeue, --open-mode=append and --signal=TERM@GRACE (every task, not B:) are "
        "set, the reasons in comments. Submit with `sbatch FILE`.")
    sbatch.add_argument("--nodes", type=int, required=True, metavar="N", help="nodes to use")
    sbatch.add_argument("--model-dir", required=True, metavar="DIR",
                        help="the run's model directory, on storage every node shares: "
                        "where each task records its verdict")
    sbatch.add_argument("--time", default=None, metavar="TIME",
                        help="the time limit (sbatch --time: MINUTES, HH:MM:SS, D-HH:MM)")
    sbatch.add_argument("--grace", type=int, default=60, metavar="SECONDS",
                        help="seconds before the time limit every task gets SIGTERM, to "
                        "save and exit 143 (default 60)")
    sbatch.add_argument("--max-restarts", type=int, default=3, metavar="K",
                        help="requeues after retryable ends (preemption, a lost peer), "
                        "counted by SLURM_RESTART_COUNT (default 3)")
    sbatch.add_argument("--trainexec", default=DEFAULT_TRAINEXEC,
                        metavar="CMD", help="how the nodes run trainexec: every node must "
                        "have it at this path (default: this Python, %(default)s; e.g. "
                        "trainexec, when it is on the nodes' PATH)")
    sbatch.add_argument("--output", default=None, metavar="PATTERN",
                        help="the log file (default NAME-%%j.out; %%j is the job id)")
    sbatch.add_argument("--partition", default=None, metavar="PARTITION",
                        help="#SBATCH --partition (default: the site's)")
    sbatch.add_argument("--account", default=None, metavar="ACCOUNT",
                        help="#SBATCH --account to charge (default: yours)")
    sbatch.add_argument("--gres", default=None, metavar="GRES",
                        help="#SBATCH --gres: generic resources per node, e.g. gpu:2 "
                        "(default: none)")
    sbatch.add_argument("--cpus-per-task", type=int, default=None, metavar="N",
                        help="#SBATCH --cpus-per-task (default: Slurm's, 1)")
    sbatch.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                        help="another #SBATCH option, e.g. mem=32G or --sbatch=--exclusive "
                        "(not one the script sets itself); repeat for several")
    return parser


def _add_target(targets: Any, name: str, parents: list[argparse.ArgumentParser],
                required: str, *, help: str, description: str) -> argparse.ArgumentParser:
    """Adds `trainexec render NAME`, its usage line naming its `required` options."""
    return targets.add_parser(
        name, parents=parents, help=help, description=description,
        usage=f"trainexec render {name} NAME {required} [options] -- COMMAND [ARG ...]")


def _run_render(args: argparse.Namespace) -> int:
    try:
        shape = render_shape(args.target, args.name, args.command, workers=args.workers,
                             ps=args.ps, evaluator=args.evaluator, chief=args.chief,
                             env=args.env,
                             restart_policy=getattr(args, "restart_policy", EXIT_CODE))
        if args.target == SBATCH:
            text = sbatch_script(shape, SbatchOptions(
                nodes=args.nodes, model_dir=args.model_dir, time=args.time,
                grace=args.grace, max_restarts=args.max_restarts,
                trainexec=args.trainexec, output=args.output, partition=args.partition,
                account=args.account, gres=args.gres, cpus_per_task=args.cpus_per_task,
                extra=tuple(args.sbatch)))
        elif args.target == TFJOB:
            pods = pod_options(volumes=args.volume, gpus=args.gpus,
                               service_account=args.service_account,
                               annotations=args.annotation)
            text = tfjob_yaml(shape, image=args.image, namespace=args.namespace,
                              port=args.port, network_policy=args.network_policy,
                              pods=pods, max_restarts=args.max_restarts)
        else:
            options = vertex_options(accelerator=args.accelerator,
                                     service_account=args.service_account, nfs=args.nfs,
                                     network=args.network)
            text = vertex_json(shape, image=args.image, machine_type=args.machine_type,
                               options=options)
    except ConfigError as err:
        print(f"trainexec render {args.target}: {err}", file=sys.stderr)
        return 2
    if args.target == SBATCH and args.trainexec == DEFAULT_TRAINEXEC:
        print(f"trainexec render sbatch: note: the nodes will run trainexec as "
              f"{DEFAULT_TRAINEXEC} (this machine's Python): every node must see that path "
              "(a virtual environment on shared storage); else pass --trainexec, e.g. "
              "--trainexec trainexec when it is on the nodes' PATH", file=sys.stderr)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
