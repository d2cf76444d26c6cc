"""`trainexec docs`: the guides, wherever trainexec was installed from.

The documentation is Markdown under `docs/` in the repository (the MkDocs site is
built from it). A wheel carries the same pages (setup.py puts them under
`share/doc/trainexec/` of the environment), so `trainexec docs` finds them either
way: in the source tree beside the package (a checkout, or an editable install),
else in the installed distribution's files.

    trainexec docs                   # every page: its name, title and file
    trainexec docs getting-started   # one page, printed (a guide by its short name too)

Every `--help` of the `trainexec` command ends with the page to read next, as a
`trainexec docs PAGE` command (`trainexec.cli.parser.EPILOGS`).

Example:
    ```python
    pages = doc_pages()                      # {"getting-started": Path(...), ...}
    print(find_page("kubernetes", pages))    # .../docs/guides/kubernetes.md
    ```
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import pathlib
import sys
from typing import Any

__all__ = ["INSTALLED_DOCS", "add_docs_parser", "doc_pages", "docs_dir", "find_page",
           "page_name"]

# Where a wheel puts the pages, under the environment's prefix (setup.py's data_files).
INSTALLED_DOCS = "share/doc/trainexec"
_MARKER = "getting-started.md"  # a page every copy of the docs has


def docs_dir() -> pathlib.Path | None:
    """The directory holding the Markdown pages: the checkout's `docs/` when this
    package sits in its source tree, else the installed copy (None: neither)."""
    checkout = pathlib.Path(__file__).resolve().parents[2] / "docs"
    if (checkout / _MARKER).is_file():
        return checkout
    try:
        files = importlib.metadata.files("trainexec") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == _MARKER and INSTALLED_DOCS in file.as_posix():
            located = pathlib.Path(str(file.locate())).resolve()
            if located.is_file():
                return located.parent
    return None


def page_name(path: pathlib.Path, root: pathlib.Path) -> str:
    """`guides/kubernetes.md` -> `guides/kubernetes`."""
    return path.relative_to(root).with_suffix("").as_posix()


def doc_pages(root: pathlib.Path | None = None) -> dict[str, pathlib.Path]:
    """{name: file} of every page a reader can print (the API pages, which MkDocs
    fills from docstrings, and generated ones are left out: `python -m pydoc NAME`
    and `trainexec COMMAND --help` say the same)."""
    root = docs_dir() if root is None else root
    if root is None:
        return {}
    pages = {}
    for path in sorted(root.rglob("*.md")):
        name = page_name(path, root)
        if name.startswith("reference/api/") or name in ("changelog", "reference/cli"):
            continue
        pages[name] = path
    return pages


def find_page(wanted: str, pages: dict[str, pathlib.Path]) -> pathlib.Path:
    """The page `wanted` names: its name (`guides/kubernetes`), its last part
    (`kubernetes`) or its file (`docs/guides/kubernetes.md`). KeyError saying which
    pages there are, and the closest names."""
    key = wanted.removeprefix("docs/").removesuffix(".md").strip("/")
    if key in pages:
        return pages[key]
    short = [name for name in pages if name.rpartition("/")[2] == key]
    if len(short) == 1:
        return pages[short[0]]
    close = difflib.get_close_matches(key, list(pages) + [n.rpartition("/")[2] for n in pages],
                                      n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise KeyError(f"no page {wanted!r}{hint}: `trainexec docs` lists them")


def _title(path: pathlib.Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def add_docs_parser(commands: Any) -> argparse.ArgumentParser:
    """Adds `trainexec docs` to the `trainexec` subcommands."""
    parser = commands.add_parser(
        "docs", help="list the guides, or print one",
        description="The documentation, as Markdown pages: from the repository's docs/ "
        "in a checkout, from the environment's share/doc/trainexec/ after pip installed "
        "a wheel. Without PAGE, list every page (name, title, file); with it, print it.")
    parser.add_argument("page", nargs="?", metavar="PAGE",
                        help="a page's name (getting-started, guides/kubernetes, or "
                        "kubernetes alone)")
    parser.set_defaults(run=_run_docs)
    return parser


def _run_docs(args: argparse.Namespace) -> int:
    root = docs_dir()
    pages = doc_pages(root)
    if root is None or not pages:
        print("trainexec docs: this installation has no copy of the documentation: "
              "reinstall trainexec from its repository (pip install .), whose docs/ "
              "holds the pages", file=sys.stderr)
        return 1
    if args.page is None:
        width = max(len(name) for name in pages)
        print(f"trainexec's documentation: {len(pages)} pages in {root}")
        print("`trainexec docs PAGE` prints one (in a checkout, ./scripts/docs.sh serve "
              "shows them as a site)\n")
        for name, path in pages.items():
            print(f"{name.ljust(width)}  {_title(path)}")
        return 0
    try:
        path = find_page(args.page, pages)
    except KeyError as err:
        print(f"trainexec docs: {err.args[0]}", file=sys.stderr)
        return 2
    sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0
