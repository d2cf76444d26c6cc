"""`python -m trainexec.testing.chaos`: run seeded chaos schedules, print a table.

    python -m trainexec.testing.chaos --seeds 1-20 --modes mwms,pss --storage local,nfs
    python -m trainexec.testing.chaos --seed 3 --modes mwms,pss --storage local,nfs
    python -m trainexec.testing.chaos --regression all
    python -m trainexec.testing.chaos --seeds 1-20 --storage gs,nfs --kinds all
    python -m trainexec.testing.chaos --coverage       # what CI's default set covers
    python -m trainexec.testing.chaos --default-set    # run it (--matrix: the full one)
    python -m trainexec.testing.chaos --modes mwms,pss --storage gs --repeat 20 \
        --schedule "storage-errors storage:0 at 2s for 20s with 503; \
                    storage-outage storage:0 at 30s for 50s"

A seed's schedule depends on the seed and on --modes, --storage and --faults,
so replay one with the same three. `--schedule` writes one by hand (its faults as
`Fault.describe()` writes them, `;` between), for each of --modes and --storage;
`--repeat N` runs each schedule N times (how often does it hold?). Exit status: 0
when no safety invariant broke (liveness misses are printed, not counted), 1 when one
did, 2 for a usage error or a bed that cannot be made here (root, ip, unshare,
nsenter; bindfs for nfs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import tempfile
from typing import Sequence, TextIO

from trainexec.testing.chaos import suite
from trainexec.testing.chaos.regressions import REGRESSIONS
from trainexec.testing.chaos.runner import (MAX_STEPS, ChaosReport, mode_unavailable,
                                            run_schedule)
from trainexec.testing.chaos.schedule import (ALL_KINDS, DRAWN_MODES, KINDS, MODES,
                                              PS_MODES, STORAGE_FAULTS, STORAGE_KINDS,
                                              STORAGES, Fault, Schedule, parse_seeds)

__all__ = ["format_table", "main", "schedules_from"]

COLUMNS = ("seed", "shape", "faults", "outcome", "restarts", "wall", "violations")


def _names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise ValueError(f"--{what} {text!r}: use some of {', '.join(allowed)}")
    return names


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise ValueError(f"--faults {text!r}: write it as LOW-HIGH, e.g. 2-4") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainexec.testing.chaos",
                                description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    which = p.add_mutually_exclusive_group()
    which.add_argument("--seeds", help="seeds to run: 1-20, 3,14,28 (default 1-5)")
    which.add_argument("--seed", type=int, help="replay one seed")
    which.add_argument("--regression", help=f"replay kept schedules: all, or some of "
                       f"{', '.join(REGRESSIONS)}")
    which.add_argument("--default-set", action="store_true",
                       help="CI's default set for this TensorFlow line (suite.DEFAULT_SET)")
    which.add_argument("--matrix", action="store_true",
                       help="the full one-fault matrix for this line (suite.full_matrix)")
    which.add_argument("--schedule", metavar="FAULTS",
                       help="a hand-written schedule for each of --modes and --storage: "
                       "faults separated by ';', e.g. \"kill worker:0 at 3s; "
                       "freeze chief:0 at 5s for 4s\"")
    which.add_argument("--coverage", action="store_true",
                       help="print what the default set covers (modes, fault kinds, roles, "
                       "storages) on this line, and run nothing")
    p.add_argument("--modes", help=f"jobs to draw from: {', '.join(MODES)} (default: "
                   f"those of {', '.join(DRAWN_MODES)} that run on this TensorFlow line)")
    p.add_argument("--storage", default="local", help="local, nfs, gs, or several: "
                   "local,nfs,gs")
    p.add_argument("--faults", default="2-4", help="faults per schedule, LOW-HIGH")
    p.add_argument("--kinds", default=",".join(KINDS),
                   help=f"fault kinds to draw from (default: a pod's, {', '.join(KINDS)}); "
                   f"'all' adds the storage's where it has them: "
                   f"{', '.join(STORAGE_KINDS)}")
    p.add_argument("--max-steps", type=int, default=MAX_STEPS)
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each schedule N times (default 1)")
    p.add_argument("--baseline", action="store_true",
                   help="run each shape once without faults first, for the wall column")
    p.add_argument("--workdir", help="where runs keep their files (default: a new "
                   "temporary directory, kept)")
    p.add_argument("--dry-run", action="store_true", help="print the schedules only")
    p.add_argument("--json", metavar="FILE", help="also write every run's row, "
                   "schedule and violations as JSON lines")
    return p


def schedules_from(args: argparse.Namespace) -> list[Schedule]:
    """The schedules the options name, each `--repeat` times in a row (ValueError
    naming the option when wrong)."""
    repeat = getattr(args, "repeat", 1)
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"--repeat {repeat!r}: give how many times to run each "
                         "schedule, 1 or more")
    schedules = _named_schedules(args)
    if repeat == 1:
        return schedules
    return [dataclasses.replace(s, name=f"{s.label()}, run {k} of {repeat}")
            for s in schedules for k in range(1, repeat + 1)]


def _modes_and_storages(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--modes (default: the drawn modes this TensorFlow line runs) and --storage."""
    modes = (_names(args.modes, MODES, "modes") if args.modes
             else suite.drawn_line_modes())
    if not modes:
        raise ValueError("no mode runs on this TensorFlow line: "
                         + "; ".join(f"{m}: {mode_unavailable(m)}" for m in MODES))
    return modes, _names(args.storage, STORAGES, "storage")


def _written(args: argparse.Namespace) -> list[Schedule]:
    """`--schedule`: its faults for each mode and storage asked for."""
    texts = [t.strip() for t in args.schedule.split(";") if t.strip()]
    try:
        faults = [Fault.parse(t) for t in texts]
    except ValueError as err:
        raise ValueError(f"--schedule {args.schedule!r}: {err}") from None
    if not faults:
        raise ValueError(f"--schedule {args.schedule!r}: name at least one fault, e.g. "
                         "\"kill worker:0 at 3s\"")
    modes, storages = _modes_and_storages(args)
    written = []
    for mode in modes:
        for storage in storages:
            try:
                written.append(Schedule.explicit(mode, faults, storage=storage,
                                                 name="written with --schedule"))
            except ValueError as err:
                raise ValueError(
                    f"--schedule {args.schedule!r} with --modes {mode} --storage "
                    f"{storage}: {err}; pick --modes whose job has that task (a ps: "
                    f"{', '.join(PS_MODES)}) and --storage that has that fault (gs: "
                    f"{', '.join(STORAGE_FAULTS['gs'])}; nfs: every storage kind)"
                ) from None
    return written


def _named_schedules(args: argparse.Namespace) -> list[Schedule]:
    if args.default_set or args.matrix:
        entries = (suite.for_line(suite.line_modes()) if args.default_set
                   else suite.full_matrix(suite.line_modes()))
        return [e.schedule for e in entries]
    if getattr(args, "schedule", None) is not None:
        return _written(args)
    if args.regression:
        # "all": those whose job runs on this TensorFlow line.
        names = [n for n, s in REGRESSIONS.items() if mode_unavailable(s.mode) is None] \
            if args.regression == "all" else [
            n.strip() for n in args.regression.split(",")]
        unknown = [n for n in names if n not in REGRESSIONS]
        if unknown:
            raise ValueError(f"--regression {unknown}: use all or some of "
                             f"{', '.join(REGRESSIONS)}")
        return [REGRESSIONS[n] for n in names]
    modes, storages = _modes_and_storages(args)
    seeds = [args.seed] if args.seed is not None else parse_seeds(args.seeds or "1-5")
    kinds = ALL_KINDS if args.kinds == "all" else _names(args.kinds, ALL_KINDS, "kinds")
    return [Schedule.generate(s, modes=modes, storages=storages, faults=_range(args.faults),
                              kinds=kinds)
            for s in seeds]


def format_table(rows: Sequence[dict[str, str]], width: int = 60) -> str:
    """The rows as an aligned text table (long cells cut at `width`)."""
    cells = [[r[c] if len(r[c]) <= width else r[c][:width - 1] + "…" for c in COLUMNS]
             for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    out = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(line.rstrip() for line in out)


def _unavailable(schedules: Sequence[Schedule]) -> str | None:
    from trainexec.testing import netns, storage

    why = netns.unavailable()
    if why is None and any(s.storage == "nfs" for s in schedules):
        why = storage.unavailable()
    if why is None and any(f.on_storage and s.storage == "nfs"
                           for s in schedules for f in s.faults):
        import importlib.util

        if importlib.util.find_spec("fuse") is None:
            why = ("the NFS-like storage's faults need fusepy (pip install fusepy) and "
                   "libfuse2")
    if why is None and any(s.storage == "gs" for s in schedules):
        from trainexec.testing import gcs

        why = gcs.unavailable()
    if why is None:
        for s in schedules:
            if mode_unavailable(s.mode):
                return f"{s.label()}: {mode_unavailable(s.mode)}"
    return why


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _run_all(schedules: Sequence[Schedule], args: argparse.Namespace, workdir: str,
             out: TextIO) -> list[ChaosReport]:
    """Runs each schedule in turn under `workdir`, printing its row (and appending it
    to `--json`) as soon as it has run."""
    reports: list[ChaosReport] = []
    for i, schedule in enumerate(schedules):
        run_dir = os.path.join(workdir, f"{i:03d}-" + schedule.label().replace(" ", "-"))
        report = run_schedule(schedule, run_dir, max_steps=args.max_steps,
                              baseline=args.baseline)
        reports.append(report)
        row = report.row()
        print(f"{row['seed']}: {row['outcome']} in {row['wall']}, {row['restarts']} "
              f"restarts, violations: {row['violations']} ({report.run_secs:.0f}s; "
              f"{run_dir})", file=out, flush=True)
        for violation in report.violations:
            print(f"  {violation.describe()}", file=out)
        for name, why in report.not_judged.items():
            print(f"  not judged: {name}: {why}", file=out)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({
                    "row": row, "schedule": schedule.to_dict(), "run_secs": report.run_secs,
                    "restarts_by_fault": report.restarts_by_fault,
                    "violations": [{"name": v.name, "seed": v.seed, "evidence": v.evidence,
                                    "liveness": v.liveness} for v in report.violations],
                    "workdir": run_dir}) + "\n")
    return reports


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parser().parse_args(argv)
    if args.coverage:
        modes = suite.line_modes()
        print(f"The default set on this TensorFlow line (modes: {', '.join(modes)}):",
              file=out)
        print(suite.format_coverage(suite.for_line(modes), modes), file=out)
        return 0
    try:
        schedules = schedules_from(args)
    except ValueError as err:
        print(f"chaos: {err}", file=sys.stderr)
        return 2
    for schedule in schedules:
        print(schedule.describe(), file=out)
    if args.dry_run:
        return 0
    why = _unavailable(schedules)
    if why:
        print(f"chaos: cannot run here: {why}", file=sys.stderr)
        return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="trainexec-chaos-")
    # SIGTERM (a `kill`, a CI timeout) ends the run as Ctrl-C does: the run in progress
    # leaves through its context managers, which remove its hosts, mounts and links.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        reports = _run_all(schedules, args, workdir, out)
    finally:  # a caller's own handler (main called in-process) is back afterwards
        if previous is not None:  # None: a handler not set from Python, not restorable
            signal.signal(signal.SIGTERM, previous)
    print(file=out)
    print(format_table([r.row() for r in reports]), file=out)
    safety = [v for r in reports for v in r.safety]
    liveness = [v for r in reports for v in r.liveness]
    print(f"\n{len(reports)} runs: {len(safety)} safety and {len(liveness)} liveness "
          f"violations (files under {workdir})", file=out)
    return 1 if safety else 0
