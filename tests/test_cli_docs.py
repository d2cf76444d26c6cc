"""trainexec/cli/docs.py: `trainexec docs` lists the guides and prints one, and every
`--help` ends with the `trainexec docs PAGE` command that prints its guide. (After a
wheel install, from the environment's share/doc/trainexec/:
tests/cluster/test_install_from_checkout.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from trainexec.cli import build_parser
from trainexec.cli.docs import doc_pages, docs_dir, find_page
from trainexec.cli.parser import subcommand_parsers

pytestmark = pytest.mark.any_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _trainexec(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "trainexec", *args], capture_output=True,
                          text=True, timeout=60, env=env)


def test_in_a_checkout_the_pages_are_the_repositorys_docs():
    assert docs_dir() == __import__("pathlib").Path(ROOT, "docs")
    pages = doc_pages()
    assert {"index", "getting-started", "guides/kubernetes", "concepts/faults",
            "troubleshooting"} <= set(pages)
    assert not [name for name in pages if name.startswith("reference/api/")]


@pytest.mark.parametrize("wanted, page", [
    ("getting-started", "getting-started"), ("guides/kubernetes", "guides/kubernetes"),
    ("kubernetes", "guides/kubernetes"), ("docs/guides/slurm.md", "guides/slurm"),
    ("faults", "concepts/faults"),
])
def test_a_page_by_its_name_its_last_part_or_its_file(wanted, page):
    pages = doc_pages()
    assert find_page(wanted, pages) == pages[page]


def test_a_wrong_name_says_the_closest_and_exits_2():
    done = _trainexec("docs", "kubernets")
    assert done.returncode == 2
    assert "no page 'kubernets' (did you mean kubernetes" in done.stderr


def test_the_list_names_every_page_with_its_title():
    done = _trainexec("docs")
    assert done.returncode == 0, done.stderr
    assert "guides/kubernetes" in done.stdout and "Kubernetes and Vertex AI" in done.stdout
    assert "`trainexec docs PAGE` prints one" in done.stdout


def _named_parsers():
    parser = build_parser()
    yield "trainexec", parser
    for name, sub in subcommand_parsers(parser).items():
        yield f"trainexec {name}", sub
        for inner, each in subcommand_parsers(sub).items():
            yield f"trainexec {name} {inner}", each


@pytest.mark.parametrize("name, parser", list(_named_parsers()), ids=lambda x: str(x)[:30])
def test_every_help_names_a_docs_command_that_prints_its_guide(name, parser):
    text = " ".join(parser.format_help().split())
    match = re.search(r"guide: trainexec docs (\S+) \((docs/\S+) in the repository\)", text)
    assert match, text[-300:]
    done = _trainexec("docs", match.group(1))
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, match.group(2)), encoding="utf-8") as f:
        assert done.stdout == f.read()
