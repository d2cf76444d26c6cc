"""The private attributes a part of `trainexec/` reads or writes, found with `ast`.

Counted: `obj._name` where `obj` is not `self` / `cls` (reads, writes, calls), and a
string `"_name"` handed to `getattr` / `hasattr` / `setattr`. Dunder names are not
private; a capitalised one (`argparse._SubParsersAction`) counts only with
`capitals=True`. Used by the inventory tests (tests/test_estimator_trainer_compat.py,
tests/test_keras_compat.py): a private attribute of a trainer's modules must be in its
compat inventory, so a new one cannot be added quietly; and by
tests/test_internals.py, over the whole package against its allow-list.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
_PRIVATE = re.compile(r"^_[a-z][A-Za-z0-9_]*$")
_PRIVATE_ANY_CASE = re.compile(r"^_[A-Za-z][A-Za-z0-9_]*$")


def private_uses(paths, *, capitals: bool = False) -> dict[str, list[str]]:
    """{attribute: ["file:line", ...]} over the Python files `paths` (`capitals`: a
    name such as `_SubParsersAction` counts too)."""
    private = _PRIVATE_ANY_CASE if capitals else _PRIVATE
    found: dict[str, list[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and private.match(node.attr):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    name = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr", "setattr")
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str)
                  and private.match(node.args[1].value)):
                name = node.args[1].value
            if name is not None:
                found.setdefault(name, []).append(f"{where}:{node.lineno}")
    return found


def uses_outside(package: str, inventory, ignored=()) -> list[str]:
    """The private attributes used in `trainexec/<package>/` outside its `compat/`
    that `inventory` does not list (nor `ignored`: trainexec's own names)."""
    base = ROOT / "trainexec" / package
    paths = [path for path in sorted(base.rglob("*.py"))
             if (base / "compat") not in path.parents]
    listed = {internal.attribute for internal in inventory} | set(ignored)
    return sorted(f"{use}: {name}" for name, uses in private_uses(paths).items()
                  if name not in listed for use in uses)
