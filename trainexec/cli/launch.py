"""`trainexec launch`: start a whole cluster on this machine, or a Kubeflow TFJob
manifest's (`--from FILE.yaml`); run it to its end with its header, live status and summary."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from typing import Any

from trainexec.cli.role_flags import add_role_flags
from trainexec.errors import ConfigError
from trainexec.jobs.manifest import read_manifest, require_commands
from trainexec.jobs.policies import local_max_restarts, local_success
from trainexec.jobs.shape import EXIT_CODE, JobShape
from trainexec.launch import LocalCluster
from trainexec.launch.network import NETWORKS, PRIVATE
from trainexec.launch.options import FLAGS, check_network, check_options, check_run_options
from trainexec.launch.reach import remote_model_dirs, unreachable_message, with_model_dir
from trainexec.launch.spec import TFJOB as TFJOB_TF_CONFIG
from trainexec.launch.spec import TFJOB_SPARSE

__all__ = ["add_launch_parser"]


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
    add_role_flags(parser, unit="tasks", leader="worker:0", unset_default=True,
                   evaluator_help="add an evaluator task outside the training cluster")
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
    parser.add_argument("--model-dir", dest="model_dir", metavar="DIR", default=None,
                        help="with --from: run the manifest with DIR as its model_dir, "
                        "replacing the value of --model-dir (or --model_dir) in every "
                        "replica's command; for a manifest whose model_dir is a bucket "
                        "(gs://...), which the tasks in the private network cannot reach "
                        "(a job whose model_dir is out of reach exits 2 before any task "
                        "starts, saying so)")
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
    parser.add_argument("--gpus-per-task", type=int, default=None, metavar="N",
                        help="GPUs each training task (chief, workers) sees, through its "
                        "CUDA_VISIBLE_DEVICES, taken in turn from the launcher's own "
                        "CUDA_VISIBLE_DEVICES or the machine's GPUs (default: an equal "
                        "share, at least one; fewer GPUs than tasks are shared round-robin "
                        "with TF_FORCE_GPU_ALLOW_GROWTH=true); 0: every task sees every GPU. "
                        "The launcher's first lines say who got which")
    parser.add_argument("--gpus-to", default="chief,master,worker", metavar="JOBS",
                        help="the jobs whose tasks get GPUs, comma-separated (default "
                        "chief,master,worker: the ps and the evaluator see none, with "
                        "CUDA_VISIBLE_DEVICES empty); e.g. chief,worker,evaluator")
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
        if args.model_dir is not None:
            raise ConfigError(f"--model-dir {args.model_dir} goes with --from FILE.yaml: "
                              "without it, give the directory in the command after --")
        job = JobShape.from_counts(args.command, workers=workers, ps=ps, chief=chief)
        if args.network == PRIVATE and remote_model_dirs(job):
            raise ConfigError(unreachable_message(remote_model_dirs(job), None))
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    try:
        cluster = LocalCluster(args.command, workers=workers, ps=ps,
                               evaluator=bool(args.evaluator), chief=chief, host=args.host,
                               max_restarts=max_restarts, grace_secs=args.grace,
                               wait_for=args.wait_for, restart_groups=args.restart_group,
                               restart_policy=args.restart_policy or EXIT_CODE,
                               network=args.network, gpus_per_task=args.gpus_per_task,
                               gpus_to=args.gpus_to)
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
        if args.model_dir is not None:
            shape = with_model_dir(shape, args.model_dir)
        if args.network == PRIVATE and remote_model_dirs(shape):
            raise ConfigError(unreachable_message(remote_model_dirs(shape), source))
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
            restart_groups=args.restart_group, network=args.network,
            gpus_per_task=args.gpus_per_task, gpus_to=args.gpus_to)
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
