"""YAML in and out for the job specs: the one module that uses PyYAML, imported on first use.

PyYAML comes with the `k8s` extra (`pip install "trainexec[k8s]"`); `import
trainexec` and `trainexec launch` without `--from` never load it, and a use
without it is a ConfigError naming that fix.

`dump_documents` writes block-style YAML documents (`---` between them), keys in
the order given, with comment lines placed above the keys they explain
(`{("spec", "runPolicy"): ["why ..."]}`): PyYAML writes no comments, so they are
put in above the key's line, at its indentation. `load_documents` reads every
document of a file, telling a syntax error with its line and column.

Example:
    ```python
    print(dump_documents([tfjob, policy], comments=[{("spec", "runPolicy"): ["why"]}, {}]))
    docs = load_documents(text, source="job.yaml")
    ```
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Mapping, Sequence

from trainexec.errors import ConfigError

__all__ = ["INSTALL_HINT", "dump_documents", "load_documents"]

INSTALL_HINT = 'pip install "trainexec[k8s]" (or pip install pyyaml)'

_WIDTH = 96  # comment lines are wrapped to this many columns
_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[^\s#\-'\"][^:]*|'[^']*'|\"[^\"]*\"):(?: |$)")

Comments = Mapping[tuple[str, ...], Sequence[str]]


def _yaml() -> Any:
    try:
        import yaml  # noqa: PLC0415  (only where YAML is read or written)
    except ImportError:
        raise ConfigError(f"reading and writing Kubernetes manifests needs PyYAML, which "
                          f"is not installed: {INSTALL_HINT}") from None
    return yaml


def _comment_lines(comment: str, indent: int) -> list[str]:
    """`comment` as `# ` lines at `indent`, wrapped; a continuation is indented
    two more spaces than the comment's own leading spaces."""
    lead = comment[:len(comment) - len(comment.lstrip())]
    lines = textwrap.wrap(comment, width=max(40, _WIDTH - indent - 2), initial_indent="",
                          subsequent_indent=lead + "  ", drop_whitespace=True) or [""]
    lines[0] = lead + lines[0].lstrip()
    return [f"{' ' * indent}# {line}".rstrip() for line in lines]


def _dumper(yaml: Any) -> Any:
    class Dumper(yaml.SafeDumper):
        """Writes a value shared by two keys out twice: a manifest has no anchors."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    return Dumper


def _with_comments(text: str, comments: Comments) -> str:
    if not comments:
        return text
    out: list[str] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = _KEY_LINE.match(line)
        if match:
            indent, key = len(match["indent"]), match["key"].strip("'\"")
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, key))
            for comment in comments.get(tuple(k for _, k in stack), ()):
                out += _comment_lines(comment, indent)
        out.append(line)
    return "\n".join(out) + "\n"


def dump_documents(documents: Sequence[Mapping[str, Any]],
                   comments: Sequence[Comments] | None = None,
                   header: Sequence[str] = ()) -> str:
    """The documents as one YAML text: `header` comment lines first, then each
    document with its `comments`, `---` between documents."""
    yaml = _yaml()
    comments = list(comments or [])
    parts = []
    for i, document in enumerate(documents):
        text = yaml.dump(dict(document), Dumper=_dumper(yaml), sort_keys=False,
                         default_flow_style=False, allow_unicode=True, width=100)
        parts.append(_with_comments(text, comments[i] if i < len(comments) else {}))
    head = "".join(line + "\n" for text in header for line in _comment_lines(text, 0))
    return head + "---\n".join(parts)


def load_documents(text: str, source: str = "<text>") -> list[Any]:
    """Every YAML document in `text` (empty ones left out); ConfigError naming
    `source`, the line and the column of a syntax error."""
    yaml = _yaml()
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{source} is not valid YAML{where}: {problem}") from None
