"""The shell commands of README.md and docs/**/*.md, as a reader would type them, for
tests/test_doc_commands.py and tests/cluster/test_doc_commands_run.py.

Every ```bash / ```console block is read from its page, never copied into a test:

* a `bash` block is a list of commands (a line ending in `\\` continues on the next);
* a `console` block is a session: lines starting with `$ ` are typed (a quote left open
  continues on the next line), the other lines are what the reader should see.

Each command is run by what it starts (`kind`): `trainexec render`, `trainexec tfconfig`,
`trainexec launch` of a training program and `python PROGRAM` run for real, in a
directory holding the programs the pages name (`PROGRAMS`), with `/tmp/...` paths moved
into that directory; the commands that need what this machine does not have are in
`NOT_RUN`, each with the reason and where it is tested instead.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex

from readme_examples import ROOT, blocks, documents

__all__ = ["NOT_RUN", "PROGRAMS", "Command", "Session", "commands", "dockerfiles",
           "sessions"]

BLOCK = re.compile(r"^```(bash|console)\n(.*?)^```", re.S | re.M)

# What the pages call the reader's program: the README's quick start `train.py` (the
# pages that show another program of the same shape say so and point at it).
PROGRAMS = {"train.py": "quickstart", "my_program.py": "quickstart"}

# First word(s) of a command that is not run here: why, and what tests it instead.
NOT_RUN = {
    "pip install": "installs into the reader's environment: "
                   "tests/cluster/test_install_from_checkout.py runs the README's lines in "
                   "new venvs from a fresh copy of the repository",
    "docker": "no container engine here: tests/cluster/test_kubernetes_image.py reads the "
              "guide's Dockerfile and runs its RUN and CMD steps in an emulated image",
    "kubectl": "no Kubernetes here: `trainexec launch --from` runs the same manifest, and "
               "the multi-host bed (tests/cluster/test_multihost_*) runs its pods as hosts",
    "sbatch": "submits to a Slurm cluster: the rendered script is checked with `bash -n` "
              "here, and run on a real Slurm by tests/slurm/",
    "./scripts/demo.sh": "the repository's own command, run by .ci/run on every change",
    "./scripts/test.sh": "the repository's own command: it is the CI run itself",
    "python -m trainexec.testing.chaos": "runs fault schedules on the multi-host bed (root): "
                                         "tests/cluster/test_chaos.py runs its schedules "
                                         "through the same run_schedule",
}


@dataclasses.dataclass(frozen=True)
class Command:
    """One command of a `bash` block."""

    page: str  # relative to the repository
    text: str  # as written, continuation lines joined

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text.split(" > ")[0], comments=True)

    @property
    def kind(self) -> str:
        words = self.words
        for prefix in NOT_RUN:
            if self.text.startswith(prefix):
                return "not run"
        if words[:2] == ["trainexec", "render"]:
            return "render"
        if words[:2] == ["trainexec", "launch"] and "--from" in words:
            return "launch from"
        if words[:2] == ["trainexec", "launch"]:
            return "launch"
        if words[:1] == ["python"]:
            return "python"
        raise AssertionError(f"{self.page}: no rule for the command {self.text!r}: run it "
                             "in tests/test_doc_commands.py or say in NOT_RUN why not")

    def option(self, name: str) -> str | None:
        """The last value of `name` (`--model-dir`) on the command line, or None."""
        words, value = self.words, None
        for i, word in enumerate(words[:-1]):
            if word == name:
                value = words[i + 1]
        return value

    def redirect(self) -> str | None:
        """The file the command's output goes to (`... > mnist.yaml`), or None."""
        _, _, target = self.text.partition(" > ")
        return shlex.split(target, comments=True)[0] if target else None


@dataclasses.dataclass(frozen=True)
class Session:
    """One `console` block: the typed commands and the lines the reader should see."""

    page: str
    typed: tuple[str, ...]
    shown: tuple[str, ...]


def _relative(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _bash_commands(text: str) -> list[str]:
    joined, current = [], ""
    for line in text.splitlines():
        current += line[:-1].rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            if current.strip():
                joined.append(" ".join(current.split()) if "'" not in current
                              else current.strip())
            current = ""
    return joined


def commands() -> list[Command]:
    """Every command of every `bash` block, in page order."""
    found = []
    for path in documents():
        for kind, text in BLOCK.findall(path.read_text()):
            if kind == "bash":
                found += [Command(_relative(path), line) for line in _bash_commands(text)]
    return found


def sessions() -> list[Session]:
    """Every `console` block."""
    found = []
    for path in documents():
        for kind, text in BLOCK.findall(path.read_text()):
            if kind != "console":
                continue
            typed, shown, lines = [], [], iter(text.splitlines())
            for line in lines:
                if line.startswith("$ "):
                    command = line[2:]
                    while True:  # a quote left open continues on the next line
                        try:
                            shlex.split(command)
                            break
                        except ValueError:
                            command += "\n" + next(lines)
                    typed.append(command)
                else:
                    shown.append(line)
            found.append(Session(_relative(path), tuple(typed), tuple(shown)))
    return found


def dockerfiles() -> list[tuple[str, str]]:
    """(page, text) of every ```dockerfile block."""
    found = []
    for path in documents():
        found += [(_relative(path), text) for text in
                  re.findall(r"^```dockerfile\n(.*?)^```", path.read_text(), re.S | re.M)]
    return found


def program_text(name: str) -> str:
    """The program a page calls `name` (`train.py`), read from the page that holds it."""
    [code] = blocks()[1][PROGRAMS[name]]
    return code
