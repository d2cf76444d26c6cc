"""The docs site stays true to the code: the CLI reference covers the argument parser,
the API reference has an entry for every public name, the environment-variable page
names every variable the code reads, and troubleshooting has an entry for every exit
code of the contract and quotes messages the code really prints.

(Its Python blocks run in tests/test_readme.py; `mkdocs build --strict` runs in .ci/run.)
"""

import argparse
import ast
import importlib.util
import re

import pytest

import trainexec
from readme_examples import DOCS, ROOT
from trainexec import exporters
from trainexec.contract import exit_codes
from trainexec.cli import build_parser

pytestmark = pytest.mark.any_line

API = DOCS / "reference" / "api"
TROUBLESHOOTING = (DOCS / "troubleshooting.md").read_text()


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  DOCS / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subcommands(parser, prog="trainexec"):
    """{"trainexec launch": parser, ...}, walked here independently of the hook."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prog} {name}"] = sub
                found.update(_subcommands(sub, f"{prog} {name}"))
    return found


def test_cli_page_is_generated_not_copied():
    page = (DOCS / "reference" / "cli.md").read_text()
    hook = _cli_reference()
    assert hook.MARKER in page
    assert "--max-restarts" not in page  # the options come from the parser at build time


def test_cli_reference_shows_every_command_and_option():
    commands = _subcommands(build_parser())
    assert {"trainexec tfconfig", "trainexec launch", "trainexec render",
            "trainexec render tfjob", "trainexec render vertex"} <= set(commands)
    markdown = _cli_reference().cli_markdown(build_parser())
    sections = dict(re.findall(r"^## `([^`]+)`\n(.*?)(?=^## |\Z)", markdown, re.S | re.M))
    assert set(commands) <= set(sections)
    for name, parser in commands.items():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            shown = action.option_strings or [action.metavar or action.dest]
            for option in shown:
                assert f"`{option}`" in sections[name], f"{name}: {option} missing"
            if action.choices:
                for choice in action.choices:
                    assert f"`{choice}`" in sections[name], f"{name} {shown}: {choice}"


def _directives():
    """Every `::: path` of the API pages, and the members listed under each."""
    found = set()
    for page in API.glob("*.md"):
        text = page.read_text()
        for path, options in re.findall(r"^::: ([\w.]+)\n((?:    .*\n)*)", text, re.M):
            found.add(path)
            found.update(f"{path}.{member}"
                         for member in re.findall(r"^        - (\w+)$", options, re.M))
    return found


def _documented(name, directives):
    return any(path.rsplit(".", 1)[-1] == name for path in directives)


def test_api_reference_has_every_public_name():
    directives = _directives()
    missing = [name for name in trainexec.__all__ if not _documented(name, directives)]
    assert missing == []


@pytest.mark.parametrize("path", [
    "trainexec.launch.LocalCluster", "trainexec.launch.JobResult",
    "trainexec.ClusterConfig", "trainexec.testing", "trainexec.testing.kubelet",
    "trainexec.testing.netns", "trainexec.SidecarEvaluator",
    "trainexec.ContinuousEvalListener", "trainexec.TrainingExecutor",
    "trainexec.testing.chaos", "trainexec.testing.chaos.run_schedule",
    "trainexec.testing.chaos.Schedule", "trainexec.testing.chaos.invariants",
    "trainexec.testing.chaos.cli"])
def test_api_reference_has_the_documented_paths(path):
    assert path in _directives()


def test_api_reference_has_every_exporter():
    directives = _directives()
    assert [name for name in exporters.__all__ if not _documented(name, directives)] == []


def test_api_directives_name_real_objects():
    """Each `::: a.b.C` names a module file that defines or imports C (griffe would fail
    the build; this says which entry, without building)."""
    for path in _directives():
        parts = path.split(".")
        for split in range(len(parts), 0, -1):
            base = ROOT.joinpath(*parts[:split])
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() \
                else base / "__init__.py"
            if module.is_file():
                break
        else:
            pytest.fail(f"{path}: no such module")
        rest = parts[split:]
        if rest:
            # Defined there, or imported there (a package's public name: its `__init__`
            # imports it, under TYPE_CHECKING when lazily loaded; griffe follows it).
            defined = (rf"^(class|def) {rest[0]}\b|^{rest[0]}\s*[:=]"
                       rf"|^\s*from [\w.]+ import [\w\s,(]*\b{rest[0]}\b")
            assert re.search(defined, module.read_text(), re.M), f"{path}: not in {module}"


ENV_NAME = re.compile(r"""(?:environ(?:\.get)?\(\s*|\[\s*|=\s*)["']((?:TRAINEXEC|TF)_[A-Z0-9_]+)["']""")


def test_every_environment_variable_is_documented():
    page = (DOCS / "reference" / "environment.md").read_text()
    read = set()
    for path in (ROOT / "trainexec").rglob("*.py"):
        read.update(ENV_NAME.findall(path.read_text()))
    assert {"TRAINEXEC_EXIT_CODES", "TRAINEXEC_GRPC_KEEPALIVE_SECS", "TRAINEXEC_LAUNCH_DIR",
            "TRAINEXEC_PERSISTENT_EVAL", "TF_CONFIG"} <= read
    assert sorted(name for name in read if f"`{name}`" not in page) == []


@pytest.mark.parametrize("code", sorted(set(exit_codes.ExitCodes().codes.values())))
def test_troubleshooting_has_every_exit_code(code):
    assert f"{{ #exit-{code} }}" in TROUBLESHOOTING
    assert f"[Exit {code}" in TROUBLESHOOTING or f"### Exit {code}" in TROUBLESHOOTING


@pytest.mark.parametrize("message, source", [
    ("Waiting for model to be ready", "trainexec/estimator_trainer/readiness.py"),
    ("no restarts allowed", "trainexec/launch/result.py"),
    ("No checkpoints appear to be found after",
     "trainexec/keras/evaluate/first_checkpoint_hint.py"),
    ("each task's TensorFlow server listens on every interface of this machine",
     "trainexec/launch/network.py"),
    ("they have no outside network", "trainexec/launch/network.py"),
    ("PerReplica", "trainexec/keras/fit/distributed_fit.py"),
    ("EvaluatorAlreadyRunning", "trainexec/evaluation/lease.py"),
    ("is not available with Keras 3", "trainexec/estimator_engine/model_fn_keras.py"),
])
def test_troubleshooting_quotes_what_the_code_says(message, source):
    assert message in TROUBLESHOOTING
    assert message in (ROOT / source).read_text(), f"{source} no longer says {message!r}"


PACKAGES = sorted(path.parent for path in (ROOT / "trainexec").rglob("__init__.py")
                  if path.parent != ROOT / "trainexec")  # the top level: CONTRIBUTING.md


@pytest.mark.parametrize("package", PACKAGES,
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_package_docstring_lists_what_the_package_holds(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    held = [path.stem for path in package.glob("*.py") if path.stem != "__init__"]
    held += [path.parent.name for path in package.glob("*/__init__.py")]
    assert [name for name in sorted(held)
            if f"`{name}`" not in doc and f"`{name}/`" not in doc] == []


@pytest.mark.parametrize("path", sorted((ROOT / "trainexec").rglob("*.py")),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docstring_examples_are_fenced(path):
    """reST `Example::` blocks render as plain text on the site: write Markdown fences."""
    assert "Example::" not in path.read_text()


def test_the_kubernetes_guide_render_command_renders(tmp_path, capsys):
    """The guide's `trainexec render tfjob ...` line, as a reader pastes it, prints a TFJob
    with its NetworkPolicy (the shell's `> mnist.yaml` left to the shell)."""
    pytest.importorskip("yaml")
    import shlex

    import yaml

    from trainexec.cli import main

    guide = (DOCS / "guides" / "kubernetes.md").read_text()
    [command] = re.findall(r"^(trainexec render tfjob .*?) > mnist\.yaml$",
                           guide.replace("\\\n", " "), re.M)
    assert main(shlex.split(command)[1:]) == 0
    tfjob, policy = yaml.safe_load_all(capsys.readouterr().out)
    assert tfjob["kind"] == "TFJob" and policy["kind"] == "NetworkPolicy"
    assert set(tfjob["spec"]["tfReplicaSpecs"]) == {"Chief", "Worker", "Evaluator"}


# Material's content column shows about 80 monospace characters at its widest (measured
# in a 1280 px wide window, the column stops growing past it): wider code lines scroll.
CODE_COLUMNS = 80
FENCE = re.compile(r"^ *(```+|~~~+)")


def _code_lines(text):
    """(line number, line) of every line inside a fenced block."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is not None:
            yield number, line


def _pages():
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_code_lines_fit_the_column(path):
    name = path.relative_to(ROOT).as_posix()
    wide = [f"{name}:{number} ({len(line)})" for number, line in _code_lines(path.read_text())
            if len(line) > CODE_COLUMNS]
    assert wide == [], f"code lines wider than {CODE_COLUMNS} characters"


def test_code_line_check_sees_every_fence():
    text = ("```bash\nshort\n" + "x" * 90 + "\n```\n\n~~~text\n" + "y" * 81
            + "\n~~~\n" + "prose " * 30)
    assert [len(line) for _, line in _code_lines(text)] == [5, 90, 81]


TABLE_SEPARATOR = re.compile(r"^\|( *:?-{3,}:? *\|)+ *$")


def _headless_table_rows(text):
    """Line numbers of table rows that open a table without a header: a row after a
    blank line (or prose) not followed by a `| --- |` separator renders as a paragraph
    of pipes (as a blank line inside a table does to every row after it)."""
    code = {number for number, _ in _code_lines(text)}
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, 1):
        if number in code or not line.startswith("|"):
            continue
        opens = number == 1 or not lines[number - 2].startswith("|")
        if opens and not (number < len(lines) and TABLE_SEPARATOR.match(lines[number])):
            found.append(number)
    return found


@pytest.mark.parametrize("path", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_table_has_its_header(path):
    assert _headless_table_rows(path.read_text()) == []


def test_headless_table_check_sees_a_broken_table():
    table = "| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    assert _headless_table_rows("text\n\n" + table) == []
    assert _headless_table_rows(table + "\n| 3 | 4 |\n") == [5]
    assert _headless_table_rows("```\n| in code |\n```\n") == []


# User pages say nothing of the repository's tests and CI; CONTRIBUTING.md does.
INTERNALS = re.compile(r"`tests/|\.ci/run|`scripts/")


@pytest.mark.parametrize("path", sorted(DOCS.rglob("*.md")),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_user_pages_do_not_send_readers_to_contributor_internals(path):
    name = path.relative_to(ROOT).as_posix()
    found = [line for line in path.read_text().splitlines() if INTERNALS.search(line)]
    assert found == []


def _python_block(text, marker):
    [block] = re.findall(re.escape(marker) + r"\n```python\n(.*?)```", text, re.S)
    return block


def test_getting_started_shows_the_readme_quick_start():
    """The Getting started page shows the README's tested program, wrapped to the column:
    the same code (comments and line breaks aside)."""
    readme = _python_block((ROOT / "README.md").read_text(),
                           "<!-- readme-example: quickstart -->")
    page = _python_block((DOCS / "getting-started.md").read_text(),
                         "<!-- illustrative: same program as the README's quick start, "
                         "tested there -->")
    assert ast.dump(ast.parse(page)) == ast.dump(ast.parse(readme)), (
        "docs/getting-started.md's program differs from the README's quick start")


def test_changelog_page_includes_the_changelog():
    assert (DOCS / "changelog.md").read_text().strip() == '--8<-- "CHANGELOG.md"'
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## (\S+)", changelog, re.M)
    assert {"0.1.0", "0.2.0"} <= set(versions)
    # The newest section is the version `trainexec --version` prints (or work after it).
    assert versions[0] == trainexec.__version__ or (
        versions[0] == "Unreleased" and versions[1] == trainexec.__version__)


PUBLIC_PACKAGES = ("trainexec", "trainexec.launch", "trainexec.exporters", "trainexec.jobs",
                   "trainexec.estimator", "trainexec.estimator.export",
                   "trainexec.estimator.experimental", "trainexec.estimator.inputs")


def test_api_pages_title_names_by_their_public_import_path():
    """A name users import from a public package (`trainexec.estimator.Estimator`) is
    documented under that path, which is the heading readers see, not the module that
    defines it (`trainexec.estimator_engine.estimator.Estimator`)."""
    import importlib

    public: dict[str, set[str]] = {}
    for package in PUBLIC_PACKAGES:
        for name in importlib.import_module(package).__all__:
            public.setdefault(name, set()).add(f"{package}.{name}")
    internal = [path for path in _directives() if path.rpartition(".")[2] in public
                and path not in public[path.rpartition(".")[2]]]
    assert internal == [], "documented under an internal path: " + ", ".join(
        f"{path} (import it as {' or '.join(sorted(public[path.rpartition('.')[2]]))})"
        for path in internal)


def test_the_built_site_works_opened_as_files():
    """The site opened from file:// (no server): Material's offline plugin makes pages
    link to page.html (not page/, a directory listing there) and ships the search index
    as a script the page loads (a browser refuses the worker's fetch from file://)."""
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert "offline" in plugins and "search" in plugins
    site = ROOT / "site"  # .ci/run builds it before the tests
    if not (site / "index.html").is_file():
        pytest.skip("no built site/ to look at: ./scripts/docs.sh builds it")
    home = (site / "index.html").read_text()
    assert 'href="getting-started.html"' in home and 'href="getting-started/"' not in home
    assert (site / "search" / "search_index.js").is_file()
