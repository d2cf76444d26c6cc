"""trainexec/internals.py and what it records: an `Internal` is checked when made; each
compat package's docstrings agree with its `INVENTORY`; and outside the compat packages,
no module of trainexec uses a private attribute that is neither inventoried nor on
`PRIVATE_USE_ALLOWED` below, with its reason."""

import importlib
import pkgutil
import re

import pytest

from private_uses import ROOT, private_uses
from trainexec.internals import (ASSIGNED, LINE_TF_2_15, LINES, PARAMETER, Internal, missing,
                                 resolve)

pytestmark = pytest.mark.tf_line

COMPAT_PACKAGES = ("trainexec.keras.compat", "trainexec.estimator_trainer.compat",
                   "trainexec.estimator_engine.compat")

# Private names that modules outside compat/ may use, {(file, attribute): reason}. A new
# private TensorFlow / Keras attribute belongs in a compat package's INVENTORY instead.
PRIVATE_USE_ALLOWED = {
    ("trainexec/cli/parser.py", "_actions"):
        "argparse offers no public way to a parser's subparsers (subcommand_parsers)",
    ("trainexec/cli/parser.py", "_SubParsersAction"):
        "the same: the class of the subparsers action, to find it among _actions",
    ("trainexec/cli/parser.py", "_fill_text"):
        "ParagraphFormatter overrides argparse.HelpFormatter._fill_text, the hook argparse's "
        "own RawDescriptionHelpFormatter overrides, and calls the base one",
    ("trainexec/contract/exit_deadline.py", "_register_atexit"):
        "threading._register_atexit runs the deadline before the interpreter waits for "
        "non-daemon threads (as concurrent.futures does); atexit where it is missing",
    ("trainexec/contract/exit_codes.py", "_run_exitfuncs"):
        "atexit._run_exitfuncs: the excepthook runs the atexit handlers that os._exit "
        "would skip",
    ("trainexec/contract/exit_codes.py", "_exit"):
        "os._exit, the standard library's (public despite its name): the task's exit code",
    ("trainexec/contract/exit_deadline.py", "_exit"):
        "os._exit: ends a task past its exit deadline",
    ("trainexec/contract/storage_watch.py", "_exit"):
        "os._exit: ends a task whose model_dir has not answered within its bound",
    ("trainexec/tasks/peer_watchdog.py", "_exit"):
        "os._exit: ends a task whose peer is lost",
    ("trainexec/tasks/peer_heartbeats.py", "_exit"):
        "os._exit: ends a task of a group whose peer has been silent too long",
    ("trainexec/testing/gcs/server.py", "_exit"):
        "os._exit: the test emulator ends at once on SIGTERM",
    ("trainexec/specs.py", "_fields"):
        "a namedtuple's documented `_fields`",
    ("trainexec/launch/orphan_reaper.py", "_after_fork_in_child"):
        "trainexec's own: the module's fork hook reaches its own reapers",
    ("trainexec/launch/processes.py", "_after_fork_in_child"):
        "trainexec's own: the module's fork hook reaches its own forking thread",
    ("trainexec/launch/cluster.py", "_setup"):
        "trainexec's own: LocalCluster's other constructor sets up `cls.__new__(cls)`",
    ("trainexec/estimator_engine/run_config.py", "_values"):
        "trainexec's own: RunConfig.replace() gives its copy (the caller's class, with its "
        "attributes, as tf.estimator's replace keeps them) the changed values",
    ("trainexec/estimator_engine/extenders.py", "_warm_start"):
        "trainexec's own: add_metrics gives the new Estimator the old one's warm start, as "
        "tf.estimator's add_metrics does",
    ("trainexec/testing/gcs/server.py", "_write_config_to_file"):
        "gcp-storage-emulator's Storage saves its metadata (test emulator only)",
    ("trainexec/testing/gcs/server.py", "_headers"):
        "gcp-storage-emulator's Response headers: a resumable upload's Location, and "
        "the Range it must not send for an upload holding no byte (test emulator only)",
    ("trainexec/testing/gcs/server.py", "_content"):
        "gcp-storage-emulator's Response body, to tell an empty error (test emulator only)",
}


def _compat_modules(package_name):
    package = importlib.import_module(package_name)
    return package, {info.name: importlib.import_module(f"{package_name}.{info.name}")
                     for info in pkgutil.iter_modules(package.__path__)}


def _table_rows(doc):
    """The rows of a docstring's markdown table, as lists of cells (no header)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in doc.splitlines() if line.startswith("|")]
    return [row for row in rows[2:]]


def _names(cell, attribute):
    return re.search(rf"(?<![\w]){re.escape(attribute)}(?![\w])", cell) is not None


def test_an_internal_with_an_unknown_kind_or_line_is_refused():
    with pytest.raises(ValueError, match="kind"):
        Internal(owner="os", attribute="sep", lines=(LINE_TF_2_15,), when_missing="-",
                 kind="other")
    with pytest.raises(ValueError, match="lines"):
        Internal(owner="os", attribute="sep", lines=("1.15",), when_missing="-")
    with pytest.raises(ValueError, match="lines"):
        Internal(owner="os", attribute="sep", lines=(), when_missing="-")


def test_missing_tells_what_is_not_there():
    def make(owner, attribute, kind="attribute"):
        return Internal(owner=owner, attribute=attribute, lines=LINES, when_missing="-",
                        kind=kind)

    assert resolve("os.path.join") is __import__("os").path.join
    assert missing(make("os.path", "join")) is None
    assert "has no attribute 'nope'" in missing(make("os.path", "nope"))
    assert "cannot be resolved" in missing(make("os.nope", "join"))
    assert missing(make("os.path.join", "a", PARAMETER)) is None
    assert "takes no parameter 'b'" in missing(make("os.path.join", "b", PARAMETER))
    assert missing(make("argparse.ArgumentParser", "prog", ASSIGNED)) is None
    assert "no longer assigns" in missing(make("argparse.ArgumentParser", "nope", ASSIGNED))


@pytest.mark.parametrize("package_name", COMPAT_PACKAGES)
def test_the_package_doc_lists_every_module_and_the_inventory_is_theirs(package_name):
    package, modules = _compat_modules(package_name)
    listed = set(re.findall(r"^\* `(\w+)`:", package.__doc__, flags=re.MULTILINE))
    assert listed == set(modules)
    assert set(package.INVENTORY) == {internal for module in modules.values()
                                      for internal in module.INTERNALS}
    assert len(package.INVENTORY) == len(set(package.INVENTORY))


@pytest.mark.parametrize("package_name", COMPAT_PACKAGES)
def test_each_compat_modules_table_matches_its_internals(package_name):
    """Every inventoried attribute has a row naming it, seen on the lines it is checked
    on; every row names an inventoried attribute (or says the test does not check it),
    and the lines a row gives are those of its attributes."""
    _, modules = _compat_modules(package_name)
    problems = []
    for name, module in modules.items():
        rows = _table_rows(module.__doc__)
        assert rows, f"{name}: its docstring opens with no table"
        matched = {index: set() for index in range(len(rows))}
        for internal in module.INTERNALS:
            found = [index for index, (what, seen_on, *_) in enumerate(rows)
                     if _names(what, internal.attribute)
                     and all(line in seen_on for line in internal.lines)]
            if not found:
                problems.append(f"{name}: no row names {internal.name} seen on "
                                f"{', '.join(internal.lines)}")
            for index in found:
                matched[index].update(internal.lines)
        for index, (what, seen_on, *_) in enumerate(rows):
            if "not checked by the inventory test" in what:
                continue
            if not matched[index]:
                problems.append(f"{name}: the row {what[:60]!r} is in no INTERNALS")
            unlisted = [line for line in LINES if line in seen_on
                        and line not in matched[index]]
            if unlisted:
                problems.append(f"{name}: the row {what[:60]!r} says {unlisted} but its "
                                f"INTERNALS do not")
    assert problems == []


def _uses_outside_compat():
    paths = [path for path in sorted((ROOT / "trainexec").rglob("*.py"))
             if "compat" not in path.relative_to(ROOT).parts]
    return {(use.rsplit(":", 1)[0], name): use
            for name, uses in private_uses(paths, capitals=True).items() for use in uses}


def _inventoried():
    """(file, attribute) that an inventory says is used outside its compat package."""
    allowed = set()
    for package_name in COMPAT_PACKAGES:
        for internal in importlib.import_module(package_name).INVENTORY:
            if internal.used_in:
                allowed.add((internal.used_in.split()[0], internal.attribute))
    return allowed


def test_no_private_attribute_is_used_outside_compat_unless_allowed():
    uses = _uses_outside_compat()
    unexplained = sorted(use for key, use in uses.items()
                         if key not in PRIVATE_USE_ALLOWED and key not in _inventoried())
    assert unexplained == [], (
        "a private attribute outside compat/: move it into a compat package's INVENTORY, "
        "or add it to PRIVATE_USE_ALLOWED with its reason")


def test_every_allowed_private_use_is_still_there_and_says_why():
    uses = _uses_outside_compat()
    assert sorted(key for key in PRIVATE_USE_ALLOWED if key not in uses) == []
    assert all(len(reason) > 20 for reason in PRIVATE_USE_ALLOWED.values())
