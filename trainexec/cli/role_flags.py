"""The role flags `trainexec launch` and `trainexec render` share: --workers, --ps,
--evaluator, --no-chief (what they mean is the same; their defaults and nouns differ)."""

from __future__ import annotations

import argparse

__all__ = ["ROLE_DEFAULTS", "add_role_flags"]

# What each role flag means when it is not given.
ROLE_DEFAULTS = {"workers": 1, "ps": 0, "evaluator": False, "chief": True}


def add_role_flags(parser: argparse.ArgumentParser, *, unit: str, evaluator_help: str,
                   leader: str, unset_default: bool = False) -> None:
    """Adds --workers, --ps, --evaluator and --no-chief to `parser`.

    Args:
        parser: the parser (or parent parser) to add them to.
        unit: the noun for one member of a role in the help ("tasks", "replicas").
        evaluator_help: the help of --evaluator.
        leader: how the help names worker 0 ("worker:0", "worker 0").
        unset_default: every flag defaults to None, so that the command sees which were
            given (`launch --from FILE` refuses them); else to `ROLE_DEFAULTS`.
    """
    def default(name: str) -> object:
        return None if unset_default else ROLE_DEFAULTS[name]

    parser.add_argument("--workers", type=int, default=default("workers"), metavar="N",
                        help=f"worker {unit} besides the chief (default 1)")
    parser.add_argument("--ps", type=int, default=default("ps"), metavar="N",
                        help=f"parameter server {unit} (default 0)")
    parser.add_argument("--evaluator", action="store_true", default=default("evaluator"),
                        help=evaluator_help)
    parser.add_argument("--no-chief", dest="chief", action="store_false",
                        default=default("chief"), help=f"no chief: {leader} leads the job")
