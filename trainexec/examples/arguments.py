"""The command-line options every demo job takes.

    parser = job_parser(__doc__, throttle_secs=5)
    parser.add_argument("--worker-delay-secs", ...)   # a job's own options
"""

from __future__ import annotations

import argparse

__all__ = ["job_parser"]


def job_parser(doc: str, throttle_secs: float) -> argparse.ArgumentParser:
    """--model-dir, --max-steps, --save-checkpoints-steps, --throttle-secs and
    --result-file, described by the first line of `doc`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--max-steps", type=int, default=300)
    parser.add_argument("--save-checkpoints-steps", type=int, default=50)
    parser.add_argument("--throttle-secs", type=float, default=throttle_secs)
    parser.add_argument("--result-file", help="the evaluator (or a local run) writes its "
                        "final metrics and exports here as JSON")
    return parser
