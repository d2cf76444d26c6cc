"""The `trainexec` command's argument parser: every subcommand's, from its module, each
with an example and its guide at the end of its help (`EPILOGS`): the guide as the
`trainexec docs PAGE` command that prints it, so that it reads the same after a pip
install as in a checkout (`trainexec.cli.docs`)."""

from __future__ import annotations

import argparse

from trainexec.cli.docs import add_docs_parser
from trainexec.cli.launch import add_launch_parser
from trainexec.cli.render import add_render_parser
from trainexec.cli.slurm import add_slurm_parsers
from trainexec.cli.tfconfig import add_tfconfig_parser

__all__ = ["EPILOGS", "ParagraphFormatter", "build_parser", "chosen_parser", "guide_line",
           "subcommand_parsers"]

# (example, guide) per subcommand, printed at the end of its --help.
EPILOGS = {
    None: ("trainexec launch --workers 2 --evaluator -- \\\n"
           "      python -m trainexec.examples.keras_job --model-dir /tmp/demo",
           "docs/getting-started.md"),
    "tfconfig": ("TF_CONFIG='{\"cluster\": {\"chief\": [\"h:2222\"]}, "
                 "\"task\": {\"type\": \"chief\", \"index\": 0}}' trainexec tfconfig",
                 "docs/reference/tf-config.md"),
    "launch": ("trainexec launch --workers 2 --evaluator -- python train.py "
               "--model-dir /tmp/run", "docs/guides/local-clusters.md"),
    "render": ("trainexec render tfjob demo --image repo/train:1 --workers 2 --evaluator "
               "\\\n      -- python train.py --model-dir /mnt/run > demo.yaml",
               "docs/guides/kubernetes.md"),
    "render tfjob": ("trainexec render tfjob demo --image repo/train:1 --workers 2 "
                     "--evaluator \\\n      -- python train.py --model-dir /mnt/run "
                     "> demo.yaml\n  trainexec launch --from demo.yaml  # try it here first",
                     "docs/guides/kubernetes.md"),
    "render vertex": ("trainexec render vertex demo --image repo/train:1 --machine-type "
                      "n1-standard-4 \\\n      --workers 2 -- python train.py "
                      "--model-dir gs://bucket/run > demo.json",
                      "docs/guides/kubernetes.md"),
    "render sbatch": ("trainexec render sbatch demo --nodes 3 --model-dir /shared/run "
                      "\\\n      -- python train.py --model-dir /shared/run > demo.sbatch",
                      "docs/guides/slurm.md"),
    "slurm-exec": ("srun trainexec slurm-exec -- python train.py --model-dir /shared/run",
                   "docs/guides/slurm.md"),
    "slurm-verdict": ("trainexec slurm-verdict  # in the batch script, after srun",
                      "docs/guides/slurm.md"),
    "docs": ("trainexec docs kubernetes  # the Kubernetes guide, printed", "docs/index.md"),
}


def guide_line(page: str) -> str:
    """`docs/guides/kubernetes.md` -> the epilog's last line, naming the command that
    prints it and where it is in the repository."""
    name = page.removeprefix("docs/").removesuffix(".md")
    return f"guide: trainexec docs {name}  ({page} in the repository)"


def build_parser() -> argparse.ArgumentParser:
    """The `trainexec` command's parser: one subcommand per module of `trainexec.cli`."""
    from trainexec import __version__

    parser = argparse.ArgumentParser(
        prog="trainexec", formatter_class=ParagraphFormatter,
        description="TF_CONFIG-aware distributed task runner for TensorFlow.")
    parser.add_argument("--version", action="version", version=f"trainexec {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    add_tfconfig_parser(commands)
    add_launch_parser(commands)
    add_render_parser(commands)
    add_slurm_parsers(commands)
    add_docs_parser(commands)
    # (name in EPILOGS, parser): the command itself is None.
    named: list[tuple[str | None, argparse.ArgumentParser]] = [(None, parser)]
    for command, sub in subcommand_parsers(parser).items():
        named += [(command, sub), *((f"{command} {inner}", each)
                                    for inner, each in subcommand_parsers(sub).items())]
    for name, sub in named:
        example, page = EPILOGS[name]
        sub.epilog = f"example:\n  {example}\n\n{guide_line(page)}"
        if sub.formatter_class is argparse.HelpFormatter:
            sub.formatter_class = ParagraphFormatter
    return parser


def subcommand_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """{name: parser} of `parser`'s subcommands ({} if it has none)."""
    # argparse's one private use here: it offers no public way to a parser's subparsers.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def chosen_parser(parser: argparse.ArgumentParser,
                  argv: list[str]) -> argparse.ArgumentParser:
    """The innermost (sub)command parser that `argv` names (`trainexec render tfjob ...`:
    render tfjob's), for an error in its own usage."""
    for token in argv:
        if token == "--":
            break
        sub = subcommand_parsers(parser).get(token)
        if sub is not None:
            parser = sub
    return parser


class ParagraphFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a paragraph with indented lines (an example) is kept as
    written; other paragraphs are wrapped as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if any(line.startswith(" ") for line in paragraph.splitlines()):
                paragraphs.append("\n".join(indent + line for line in paragraph.splitlines()))
            else:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
        return "\n\n".join(paragraphs)
