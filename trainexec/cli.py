"""The `trainexec` command (also `python -m trainexec`).

Subcommands:
  tfconfig   show how this process's TF_CONFIG is understood (exit 2 if malformed)
  launch     start a whole cluster on this machine (see `trainexec launch --help`)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Any, Sequence

from trainexec.cluster import ClusterConfig
from trainexec.cluster_verdicts import explain, trainer_support
from trainexec.errors import ConfigError
from trainexec.installation import Installation
from trainexec.launch import LocalCluster
from trainexec.launch.options import FLAGS, check_options
from trainexec.restart_announcements import LAUNCH_DIR_ENV

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
    print(explain(config, launched=LAUNCH_DIR_ENV in os.environ))
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
        usage="trainexec launch [options] -- COMMAND [ARGS...]",
        description="Start COMMAND once per task (chief, workers, ps, evaluator) on this "
        "machine, each with its own TF_CONFIG and free port; stream their output "
        "prefixed with the task name. Succeeds when the chief (or worker:0 with "
        "--no-chief) and the evaluator, or the --wait-for tasks, exit 0; fails as "
        "soon as a task fails with no "
        "restarts left. Exit codes: 0 ok, 1 failed or timed out, 2 bad arguments, "
        "130 on Ctrl-C, 143 on SIGTERM; every task is stopped first (a second Ctrl-C "
        "skips the grace period).")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="worker tasks besides the chief (default 1)")
    parser.add_argument("--ps", type=int, default=0, metavar="N",
                        help="parameter server tasks (default 0)")
    parser.add_argument("--evaluator", action="store_true",
                        help="add an evaluator task outside the training cluster")
    parser.add_argument("--no-chief", dest="chief", action="store_false",
                        help="no chief: worker:0 leads the job")
    parser.add_argument("--host", default="127.0.0.1", help="address to use (default 127.0.0.1)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECS",
                        help="stop everything and fail after SECS (default: no limit)")
    parser.add_argument("--max-restarts", type=int, default=0, metavar="N",
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
    parser.add_argument("--restart-policy", default="ExitCode",
                        choices=("ExitCode", "OnFailure", "Always", "Never"),
                        help="which failures --max-restarts covers, as Kubeflow TFJob "
                        "names them: ExitCode (default) restarts only retryable exits (128 "
                        "and up, or killed by a signal; see the README's exit-code table), "
                        "OnFailure and Always any failure, Never none")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program to run, after --")
    parser.set_defaults(run=_run_launch)
    return parser


def _run_launch(args: argparse.Namespace) -> int:
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    try:
        check_options(args.command, workers=args.workers, ps=args.ps, chief=args.chief,
                      max_restarts=args.max_restarts, grace_secs=args.grace,
                      timeout=args.timeout, host=args.host, spelling=FLAGS)
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="[launch] %(message)s", stream=sys.stderr)
    try:
        cluster = LocalCluster(args.command, workers=args.workers, ps=args.ps,
                               evaluator=args.evaluator, chief=args.chief, host=args.host,
                               max_restarts=args.max_restarts, grace_secs=args.grace,
                               wait_for=args.wait_for, restart_groups=args.restart_group,
                               restart_policy=args.restart_policy)
    except ConfigError as err:
        print(f"trainexec launch: {err}", file=sys.stderr)
        return 2
    print(f"trainexec launch: {cluster.describe()}", flush=True)
    previous = {sig: signal.signal(sig, lambda signum, _frame: cluster.interrupt(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            cluster.start()
        except OSError as err:
            print(f"trainexec launch: cannot run {args.command[0]!r}: {err.strerror or err}",
                  file=sys.stderr)
            return 2
        result = cluster.wait(timeout=args.timeout)
    finally:
        cluster.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.stdout.flush()
    print(result.summary(), flush=True)
    if not result.ok:
        print(f"trainexec launch: job failed: {result.reason}", file=sys.stderr, flush=True)
    return result.exit_status


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
