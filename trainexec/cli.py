"""The `trainexec` command (also `python -m trainexec`).

Subcommands:
  tfconfig   show how this process's TF_CONFIG is understood (exit 2 if malformed)
  launch     start a whole cluster on this machine (see `trainexec launch --help`),
             or a Kubeflow TFJob manifest's (`--from FILE.yaml`)
  render     print a job as a Kubeflow TFJob (with a NetworkPolicy), a Vertex AI
             CustomJob or a Slurm batch script (see `trainexec render tfjob --help`)
  slurm-exec     run COMMAND as one task of a Slurm step, with TF_CONFIG from the step
                 and its verdict recorded (`trainexec.launch.slurm_exec`)
  slurm-verdict  in a batch script after srun: succeed, fail or requeue, from the
                 tasks' verdicts (`trainexec.contract.slurm_outcome`)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from typing import Any, Sequence

from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.slurm import ROLES_ENV, parse_roles, slurm_roles_set
from trainexec.cluster.verdicts import explain, trainer_support
from trainexec.errors import ConfigError
from trainexec.installation import Installation
from trainexec.jobs.manifest import read_manifest, require_commands
from trainexec.jobs.naming import DEFAULT_PORT
from trainexec.jobs.policies import local_max_restarts, local_success
from trainexec.jobs.render import (SBATCH, TFJOB, VERTEX, render_shape, tfjob_yaml,
                                   vertex_json)
from trainexec.jobs.sbatch import SbatchOptions, sbatch_script
from trainexec.jobs.shape import EXIT_CODE
from trainexec.launch import LocalCluster
from trainexec.launch.network import NETWORKS, PRIVATE
from trainexec.launch.options import FLAGS, check_network, check_options, check_run_options
from trainexec.launch.spec import TFJOB as TFJOB_TF_CONFIG
from trainexec.launch.spec import TFJOB_SPARSE
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV

__all__ = ["main"]


def _run_tfconfig(args: argparse.Namespace) -> int:
    try:
        config = ClusterConfig.from_env()
    except ConfigError as err:
        print(f"trainexec: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(config.to_json())
        return 0
    slurm = slurm_roles_set(os.environ) and not os.environ.get("TF_CONFIG", "").strip()
    print(explain(config, launched=LAUNCH_DIR_ENV in os.environ, slurm=slurm))
    if trainer_support(config):  # the shape's verdicts, then what this machine can run
        notes = Installation.detect().notes()
        if notes:
            print("on this installation:")
            for trainer, note in notes.items():
                print(f"  {trainer}: {note}")
    return 0


# -- trainexec launch -----------------------------------------------------------------------
def add_launch_parser(commands: Any) -> argparse.ArgumentParser:
    """Adds `trainexec launch` to the `trainexec` subcommands."""
    parser = commands.add_parser(
        "launch", help="run a command as every task of a local cluster",
        usage="trainexec launch [options] -- COMMAND [ARGS...]\n"
        "       trainexec launch --from FILE.yaml [options] [-- COMMAND [ARGS...]]",
        description="Start COMMAND once per task (chief, workers, ps, evaluator) on this "
        "machine, each with its own TF_CONFIG and free port; stream their output "
        "prefixed with the task name. Succeeds when the chief (or worker:0 with "
        "--no-chief) and the evaluator, or the --wait-for tasks, exit 0; fails as "
        "soon as a task fails with no "
        "restarts left. Exit codes: 0 ok, 1 failed or timed out, 2 bad arguments, "
        "130 on Ctrl-C, 143 on SIGTERM; every task is stopped first (a second Ctrl-C "
        "skips the grace period).")
    # The role flags default to None: `--from FILE` refuses them (the manifest says the roles).
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker tasks besides the chief (default 1)")
    parser.add_argument("--ps", type=int, default=None, metavar="N",
                        help="parameter server tasks (default 0)")
    parser.add_argument("--evaluator", action="store_true", default=None,
                        help="add an evaluator task outside the training cluster")
    parser.add_argument("--no-chief", dest="chief", action="store_false", default=None,
                        help="no chief: worker:0 leads the job")
    parser.add_argument("--from", dest="from_file", metavar="FILE.yaml", default=None,
                        help="run a Kubeflow TFJob manifest here instead of the role flags: "
                        "one process per replica with its tensorflow container's command, "
                        "args and env (not its image), TF_CONFIG as the training operator "
                        "writes it (127.0.0.1 ports for its service names), each replica's "
                        "restartPolicy and the job's successPolicy and cleanPodPolicy. "
                        "COMMAND after -- replaces every replica's command and args (needed "
                        "where a replica has none: its image's entrypoint would run). "
                        "runPolicy.backoffLimit and activeDeadlineSeconds stand for "
                        "--max-restarts and --timeout unless given. A manifest the operator "
                        "would not accept, or that names a field wrongly, exits 2 naming it")
    parser.add_argument("--dry-run", action="store_true",
                        help="start nothing: print one JSON object per task, one a line: "
                        '{"task": "worker:0", "command": [...], "env": {...}}, env being '
                        "what the task adds to this environment, TF_CONFIG included")
    parser.add_argument("--host", default="127.0.0.1", help="address to use (default 127.0.0.1)")
    parser.add_argument("--network", default=PRIVATE, choices=NETWORKS,
                        help="private (default): the tasks run in a network namespace of "
                        "their own with only loopback, so nothing else reaches their "
                        "TensorFlow servers (which have no authentication), and they have no "
                        "outside network; host: on this machine's network, for jobs that "
                        "read remote data, every server then reachable from the network. "
                        "Where no namespace can be made, host, with a warning saying why")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECS",
                        help="stop everything and fail after SECS (default: no limit)")
    parser.add_argument("--max-restarts", type=int, default=None, metavar="N",
                        help="restart a failed task up to N times (default 0)")
    parser.add_argument("--grace", type=float, default=5.0, metavar="SECS",
                        help="seconds between SIGTERM and SIGKILL when stopping (default 5)")
    parser.add_argument("--wait-for", action="append", default=None, metavar="TASK",
                        help="a task (worker:1) or job (worker) that must exit 0 for the "
                        "job to succeed; repeat it for several (default: the chief, or "
                        "worker:0 with --no-chief, and the evaluator)")
    parser.add_argument("--restart-group", action="append", default=[], metavar="NAMES",
                        help="jobs or tasks restarted together when one of them fails, "
                        "comma-separated (e.g. chief,worker for a hand-written "
                        "MultiWorkerMirroredStrategy job); repeat for several groups. "
                        "KerasTrainer jobs need none: their tasks tell the launcher. "
                        "A task exiting with the preempted code (143) saved a checkpoint: "
                        "its group is given the grace period to end")
    parser.add_argument("--restart-policy", default=None,
                        choices=("ExitCode", "OnFailure", "Always", "Never"),
                        help="which failures --max-restarts covers, as Kubeflow TFJob "
                        "names them: ExitCode (default) restarts only retryable exits (128 "
                        "and up, or killed by a signal; see trainexec.contract.exit_codes), "
                        "OnFailure and Always any failure, Never none; with --from, every "
                        "replica's instead of its own")
    parser.add_argument("--no-status", dest="status", action="store_false",
                        help="no live status block below the logs (shown only when "
                        "stdout and stderr are one terminal: each task's state, the chief's step, rate "
                        "and time left, the evaluator's last metrics)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program to run, after --")
    parser.set_defaults(run=_run_launch)
    return parser


def _run_launch(args: argparse.Namespace) -> int:
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if args.from_file is not None:
        return _run_launch_from(args)
    workers = 1 if args.workers is None else args.workers
    ps = 0 if args.ps is None else args.ps
    chief = args.chief is not False
    max_restarts = 0 if args.max_restarts is None else args.max_restarts
    try:
        check_options(args.command, workers=workers, ps=ps, chief=chief,
                      max_restarts=max_restarts, grace_secs=args.grace,
                      timeout=args.timeout, host=args.host, spelling=FLAGS)
        check_network(args.network, args.host, spelling=FLAGS)
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    try:
        cluster = LocalCluster(args.command, workers=workers, ps=ps,
                               evaluator=bool(args.evaluator), chief=chief, host=args.host,
                               max_restarts=max_restarts, grace_secs=args.grace,
                               wait_for=args.wait_for, restart_groups=args.restart_group,
                               restart_policy=args.restart_policy or EXIT_CODE,
                               network=args.network)
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        return _print_plan(cluster)
    return _run_cluster(cluster, args.timeout, args.status)


def _run_launch_from(args: argparse.Namespace) -> int:
    """`trainexec launch --from FILE.yaml`: the manifest's job, run here."""
    source = args.from_file
    role_flags = [flag for flag, value in (("--workers", args.workers), ("--ps", args.ps),
                                           ("--evaluator", args.evaluator),
                                           ("--no-chief", args.chief)) if value is not None]
    try:
        if role_flags:
            raise ConfigError(f"--from {source} takes the roles from the manifest: drop "
                              f"{', '.join(role_flags)} (change the replicas in the file)")
        check_run_options(max_restarts=args.max_restarts or 0, grace_secs=args.grace,
                          timeout=args.timeout, host=args.host, spelling=FLAGS)
        check_network(args.network, args.host, spelling=FLAGS)
        manifest = read_manifest(source)
        shape = manifest.shape
        if args.command:
            shape = shape.with_command(args.command)
        if args.restart_policy:
            shape = shape.with_restart_policy(args.restart_policy)
        if not shape.trains:
            raise ConfigError(f"spec.tfReplicaSpecs in {source} has no Chief, Master or Worker "
                              "replica: nothing trains, so the operator never marks the job "
                              "succeeded: add a Worker (or a Chief)")
        require_commands(shape, source)
        success = local_success(shape, manifest.policies)
        max_restarts, restarts_note = local_max_restarts(shape, manifest.backoff_limit)
        if args.max_restarts is not None:
            max_restarts, restarts_note = args.max_restarts, None
        timeout = args.timeout if args.timeout is not None else manifest.active_deadline_secs
        cluster = LocalCluster.from_job(
            shape, tf_config=TFJOB_SPARSE if manifest.dynamic_workers else TFJOB_TF_CONFIG,
            host=args.host, max_restarts=max_restarts, grace_secs=args.grace,
            wait_for=args.wait_for or success.wait_for,
            wait_for_ending=success.wait_for_ending and not args.wait_for,
            restart_groups=args.restart_group, network=args.network)
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    for note in (*manifest.notes, *([restarts_note] if restarts_note else [])):
        print(f"trainexec launch: note: {note}", file=sys.stderr)
    if args.dry_run:
        return _print_plan(cluster)
    print(f"trainexec launch: TFJob {manifest.name} from {source}: "
          + (f"succeeds when {' and '.join(args.wait_for)} exit 0 (--wait-for)"
             if args.wait_for else success.summary), flush=True)
    return _run_cluster(cluster, timeout, args.status)


def _print_plan(cluster: LocalCluster) -> int:
    for plan in cluster.plan():
        print(json.dumps(plan), flush=True)
    return 0


def _run_cluster(cluster: LocalCluster, timeout: float | None, status: bool = False) -> int:
    """Runs a built cluster to its end, printing its header and summary; its exit status.
    With `status` and a terminal, a live status block stays below the logs (the
    launcher's own log records, on stderr, go above it while it shows)."""
    view = _status_view(cluster) if status else None
    if not logging.getLogger().handlers:
        from trainexec.launch.status_view import LOG_FORMAT

        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    print(f"trainexec launch: {cluster.describe()}", flush=True)
    if view is not None:
        view.start()
    previous = {sig: signal.signal(sig, lambda signum, _frame: cluster.interrupt(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            cluster.start()
        except OSError as err:
            print(f"trainexec launch: cannot run {err.filename or cluster.command[0]!r}: "
                  f"{err.strerror or err}", file=sys.stderr)
            return 2
        result = cluster.wait(timeout=timeout)
    finally:
        cluster.stop_all()
        if view is not None:
            view.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.stdout.flush()
    print(result.summary(), flush=True)
    if not result.ok:
        print(f"trainexec launch: job failed: {result.reason}", file=sys.stderr, flush=True)
    return result.exit_status


def _status_view(cluster: LocalCluster) -> Any:
    """The live status block, when stdout and stderr are the same terminal (else None)."""
    from trainexec.launch.status_view import StatusView, same_terminal

    if not same_terminal(sys.stdout, sys.stderr) or os.environ.get("TERM") == "dumb":
        return None

    view = StatusView(sys.stdout, lambda: cluster.tasks, lambda: cluster.launch_dir,
                      cluster.max_restarts)
    cluster.output = view
    return view


# -- trainexec render -----------------------------------------------------------------------
def add_render_parser(commands: Any) -> argparse.ArgumentParser:
    """Adds `trainexec render tfjob|vertex` to the `trainexec` subcommands."""
    parser = commands.add_parser(
        "render", help="print a job as a Kubeflow TFJob or a Vertex AI CustomJob",
        description="Print the job that `trainexec launch` runs here, for a cluster: a "
        "Kubeflow TFJob as YAML (tfjob) or a Vertex AI CustomJob as JSON (vertex). The role "
        "flags mean what they mean for `trainexec launch`. Bad input exits 2 naming it.")
    targets = parser.add_subparsers(dest="target", metavar="TARGET")
    targets.required = True
    roles = argparse.ArgumentParser(add_help=False)
    roles.add_argument("name", metavar="NAME", help="the job's name")
    roles.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker replicas besides the chief (default 1)")
    roles.add_argument("--ps", type=int, default=0, metavar="N",
                       help="parameter server replicas (default 0)")
    roles.add_argument("--evaluator", action="store_true", help="add an evaluator replica")
    roles.add_argument("--no-chief", dest="chief", action="store_false",
                       help="no chief: worker 0 leads the job")
    roles.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                       help="an environment variable of every replica; repeat for several")
    roles.set_defaults(run=_run_render, command=[])
    tfjob = targets.add_parser(
        TFJOB, parents=[roles], help="a Kubeflow TFJob (kubeflow.org/v1) as YAML",
        usage="trainexec render tfjob NAME --image IMAGE [options] -- COMMAND [ARG ...]",
        description="Print a kubeflow.org/v1 TFJob: one replica spec per role (Chief, "
        "Worker, PS, Evaluator), each running COMMAND in a container named tensorflow with "
        "a port named tfjob-port; restartPolicy ExitCode by default (trainexec's exit "
        "codes: 128 and up restart the pod, 1 and 2 fail the job); cleanPodPolicy and "
        "successPolicy chosen for the job's shape, the reasons in comments; and a "
        "NetworkPolicy admitting the TF port only from the job's own pods. Try it here "
        "first with `trainexec launch --from FILE.yaml`, then `kubectl apply -f FILE.yaml`.")
    tfjob.add_argument("--image", required=True, help="the container image every task runs")
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
    vertex = targets.add_parser(
        VERTEX, parents=[roles], help="a Vertex AI CustomJob as JSON",
        usage="trainexec render vertex NAME --image IMAGE --machine-type TYPE [options] "
        "-- COMMAND [ARG ...]",
        description="Print a Vertex AI CustomJob: displayName and jobSpec.workerPoolSpecs in "
        "Vertex's order (chief, workers, parameter servers, evaluator; an empty pool {} for "
        "a role left out), each with replicaCount, machineSpec.machineType and "
        "containerSpec (imageUri, command, args, env). Vertex AI writes each replica's "
        "TF_CONFIG from the pools.")
    vertex.add_argument("--image", required=True, help="the container image every task runs")
    vertex.add_argument("--machine-type", required=True, metavar="TYPE",
                        help="the machine type of every pool, e.g. n1-standard-4")
    sbatch = targets.add_parser(
        SBATCH, parents=[roles], help="a Slurm batch script",
        usage="trainexec render sbatch NAME --nodes N --model-dir DIR [options] "
        "-- COMMAND [ARG ...]",
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
    sbatch.add_argument("--trainexec", default=f"{sys.executable} -m trainexec",
                        metavar="CMD", help="how the nodes run trainexec (default: this "
                        "Python, %(default)s)")
    sbatch.add_argument("--output", default=None, metavar="PATTERN",
                        help="the log file (default NAME-%%j.out; %%j is the job id)")
    return parser


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
                trainexec=args.trainexec, output=args.output))
        elif args.target == TFJOB:
            text = tfjob_yaml(shape, image=args.image, namespace=args.namespace,
                              port=args.port, network_policy=args.network_policy)
        else:
            text = vertex_json(shape, image=args.image, machine_type=args.machine_type)
    except ConfigError as err:
        print(f"trainexec render {args.target}: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


# -- trainexec slurm-exec / slurm-verdict -------------------------------------------------
def add_slurm_parsers(commands: Any) -> None:
    """Adds `trainexec slurm-exec` and `trainexec slurm-verdict`."""
    run = commands.add_parser(
        "slurm-exec", help="run COMMAND as one task of a Slurm step (TF_CONFIG from the step)",
        usage="trainexec slurm-exec [--model-dir DIR] -- COMMAND [ARGS...]",
        description="Under srun with TRAINEXEC_SLURM_ROLES set: build this task's cluster "
        "from the step, run COMMAND with TF_CONFIG set to it (any tf.distribute program), "
        "pass SIGTERM on, record the task's verdict under DIR/trainexec/slurm/ and exit "
        "with COMMAND's code; a permanent exit cancels the step. Exits 2 naming the fix "
        "when the step cannot be placed (e.g. not --distribution=block).")
    run.add_argument("--model-dir", default=None, metavar="DIR",
                     help="where to record the verdict (default: $TRAINEXEC_SLURM_MODEL_DIR)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the program, after --")
    run.set_defaults(run=_run_slurm_exec)
    verdict = commands.add_parser(
        "slurm-verdict", help="after srun in a batch script: succeed, fail or requeue",
        description="Read every task's verdict of this run (SLURM_JOB_ID, "
        "SLURM_RESTART_COUNT) and print the action: succeed, fail (a permanent exit) or "
        "requeue (retryable, or a task left none, while SLURM_RESTART_COUNT < "
        "--max-restarts); exit with the contract's code (0, 1, 2, 143, 170, 171).")
    verdict.add_argument("--model-dir", default=None, metavar="DIR",
                         help="the run's model directory (default: "
                         "$TRAINEXEC_SLURM_MODEL_DIR)")
    verdict.add_argument("--max-restarts", type=int, default=3, metavar="K")
    verdict.set_defaults(run=_run_slurm_verdict)


def _run_slurm_exec(args: argparse.Namespace) -> int:
    from trainexec.launch.slurm_exec import run_task

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return run_task(command, args.model_dir)


def _run_slurm_verdict(args: argparse.Namespace) -> int:
    from trainexec.contract.exit_codes import ExitCodes
    from trainexec.launch.slurm_exec import MODEL_DIR_ENV, step_run_key
    from trainexec.contract.slurm_outcome import decide, read_verdicts

    model_dir = args.model_dir or os.environ.get(MODEL_DIR_ENV)
    try:
        if not model_dir:
            raise ConfigError(f"no model directory: pass --model-dir or set {MODEL_DIR_ENV}")
        roles = parse_roles(os.environ.get(ROLES_ENV, ""))
    except ConfigError as err:
        print(f"trainexec slurm-verdict: {err}", file=sys.stderr)
        return 2
    expected = [f"{role}:{i}" for role, count in roles for i in range(count)]
    key = step_run_key(os.environ)
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    decision = decide(read_verdicts(model_dir, key), expected, restarts, args.max_restarts,
                      ExitCodes.from_env())
    print(decision.action, flush=True)
    print(f"trainexec slurm-verdict: run {key}: {decision.action}, exit "
          f"{decision.exit_code}: {decision.reason}", file=sys.stderr, flush=True)
    return decision.exit_code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainexec",
        description="TF_CONFIG-aware distributed task runner for TensorFlow.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    tfconfig = commands.add_parser(
        "tfconfig", help="show the parsed TF_CONFIG and this task's role",
        description="Parse TF_CONFIG from the environment and show which producer's "
        "shape it has (Kubeflow TFJob, its enableDynamicWorker sparse form, SageMaker's "
        "parameter server mode with a master, workers only, trainexec launch, or "
        "generic), what trainexec rewrote, the cluster, this task's role, and whether "
        "an Estimator or a Keras trainer can train that cluster. Exits 2 with the "
        "reason when TF_CONFIG is malformed or this task cannot run in it.")
    tfconfig.add_argument("--json", action="store_true",
                          help="print the normalised TF_CONFIG trainexec hands on instead "
                          "(empty jobs left out: TF 2.15's RunConfig fails on them for "
                          "some tasks; a sparse job as {\"<index>\": \"host:port\"}, "
                          "a ps that sees only itself at its own index)")
    tfconfig.set_defaults(run=_run_tfconfig)
    add_launch_parser(commands)
    add_render_parser(commands)
    add_slurm_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    if argv[:1] in (["render"], ["slurm-exec"]) and "--" in argv:  # NAME is positional: split COMMAND off first
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]
    args = parser.parse_args(argv)
    if command is not None:
        args.command = command
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
