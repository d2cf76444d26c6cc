"""MkDocs hook: the command-line reference, generated from trainexec's argument parser.

`docs/reference/cli.md` holds the marker `<!-- cli-reference -->`; at build time
this hook replaces it with one section per command (`trainexec tfconfig`,
`trainexec launch`, `trainexec render tfjob`, `trainexec render vertex`, ...):
its usage, its description and a table of every argument, all read from
`trainexec.cli.build_parser()`. Nothing on that page is copied by hand, so it
cannot drift from the parser; `tests/test_docs.py` checks that every option of
every command is in what this module renders.

Importing `trainexec.cli` needs only the standard library and portpicker (no
TensorFlow), so the docs build stays fast.
"""

from __future__ import annotations

import argparse
import html
import pathlib
import sys
from typing import Iterator

MARKER = "<!-- cli-reference -->"
ROOT = pathlib.Path(__file__).resolve().parents[2]
WIDTH = 96


def _parser() -> argparse.ArgumentParser:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from trainexec.cli import build_parser

    return build_parser()


def commands(parser: argparse.ArgumentParser | None = None,
             ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command that takes arguments: ("trainexec launch", its parser), ...

    A command with subcommands of its own (`render`) is listed, then each of them.
    """
    parser = parser or _parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{parser.prog} {name}", sub
                yield from commands(sub)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _text(text: str) -> str:
    """Help text as Markdown prose: one line, HTML's special characters escaped."""
    return html.escape(" ".join(text.split()), quote=False)


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|")


def _argument(action: argparse.Action) -> tuple[str, str, str]:
    if action.option_strings:
        names = ", ".join(f"`{name}`" for name in action.option_strings)
    else:
        names = f"`{action.metavar or action.dest}`"
    value = ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        value = " \\| ".join(f"`{choice}`" for choice in action.choices)
    elif action.option_strings and action.nargs != 0:
        value = f"`{action.metavar or action.dest.upper()}`"
    notes = []
    if isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    if getattr(action, "required", False) and action.option_strings:
        notes.append("required")
    help_text = (action.help or "") % {"default": action.default, "prog": ""} \
        if action.help and "%(" in action.help else (action.help or "")
    if notes:
        help_text = f"({', '.join(notes)}) {help_text}"
    return names, value, _cell(help_text)


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a reader can give this command (help and subcommand lists left out)."""
    return [action for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]


def section(name: str, parser: argparse.ArgumentParser) -> str:
    lines = [f"## `{name}`", ""]
    if parser.description:
        lines += [_text(parser.description), ""]
    lines += ["```text", _usage(parser), "```", ""]
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        lines += ["| subcommand | what it does |", "| --- | --- |"]
        for choice in action._choices_actions:
            lines.append(f"| `{name} {choice.dest}` | {_cell(choice.help or '')} |")
        lines.append("")
    rows = [_argument(action) for action in arguments(parser)]
    if rows:
        lines += ["| argument | value | meaning |", "| --- | --- | --- |"]
        lines += [f"| {names} | {value} | {text} |" for names, value, text in rows]
        lines.append("")
    return "\n".join(lines)


def cli_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole generated reference: the top-level command, then every subcommand."""
    parser = parser or _parser()
    parts = [section(parser.prog, parser)]
    parts += [section(name, sub) for name, sub in commands(parser)]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, **kwargs) -> str:  # noqa: ANN001 (MkDocs' hook)
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_markdown())
    return markdown
